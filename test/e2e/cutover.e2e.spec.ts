import {
  Binary,
  Decimal128,
  Int32,
  Long,
  MongoServerError,
  ObjectId,
  type Document,
  type MongoClient,
} from 'mongodb';
import { writeErrorName } from '../../scripts/lib/background-writer';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { stopAllProcesses } from '../helpers/processes';
import { describeOn, testDb, testNs } from '../helpers/real-clusters';
import {
  APP,
  SYNCER,
  buildOnce,
  closeClients,
  connect,
  outputOf,
  startCluster,
  startWorker,
  tryWrite,
  waitUntil,
  type Cluster,
  type Progress,
  type StartedWorker,
  type WorkerApi,
} from './support/harness';

/**
 * The cutover through the BUILT worker process and its HTTP API, on emulated replica sets with
 * authentication on: the application (user `app`, readWriteAnyDatabase) cannot bypass user
 * write blocking, the sync's user and the "rogue" client (`syncer`, root: the
 * bypassWriteBlockingMode privilege) can.
 *
 * 1. A commit while the application writes every ~20 ms: COMMITTED, the application refused
 *    (UserWritesBlocked) from the moment the source is blocked, the measured downtime reported
 *    (progress.commit.cutoverSeconds), the destination BSON-equal to the source.
 * 2. A client that bypasses the block writes during the commit: the commit is rolled back
 *    (RUNNING, warning CommitRolledBack … SourceWritesDuringCommit), the source accepts the
 *    application again; once the client stops a second commit completes and nothing is lost.
 * 3. A destination document altered behind the sync's back: the commit's final verification
 *    finds it, the commit is rolled back naming VerificationFailed and the namespace.
 *
 * Each scenario has its own pair of clusters and worker (a rolled-back or committed sync is not
 * reused across scenarios). The passwords are the harness's SYNCER/APP ones, which the suite's
 * leak check (test/helpers/leak-ledger.ts TEST_SECRETS) searches every output and response for.
 */

type AnyDoc = { _id: unknown } & Document;

/** Progress fields beyond the seed ones that the cutover reports (progress-snapshot.ts). */
interface CutoverProgress extends Progress {
  commit?: { step: string; sourceBlockedSeconds?: number; cutoverSeconds?: number };
  commitFailure?: { step: string; error: string; message: string };
  warnings?: string[];
  sourceWriteBlocked?: boolean;
  error?: string;
  verification?: {
    phase: string;
    mode?: string;
    caughtUp?: boolean;
    finalPass?: { mode: string; documentsRead: number };
  };
}

const ORDERS = 3_000;
const CUSTOMERS = 500;
/** The application updates orders below this `_id` only (and inserts `app-<n>` ones). */
const APP_RANGE = 1_000;
/** An order the application never writes: scenario 3 alters it on the destination. */
const UNTOUCHED_ID = 2_345;
const START = { source: 'cluster0', destination: 'cluster1', enableUserWriteBlocking: true };
const SECRETS = [SYNCER.password, APP.password];

const asCutover = (p: Progress): CutoverProgress => p as CutoverProgress;

function orderDoc(i: number): AnyDoc {
  return {
    _id: new Int32(i),
    n: new Int32(0),
    status: i % 3 === 0 ? 'placed' : 'paid',
    total: Decimal128.fromString(`${i % 500}.${String(i % 100).padStart(2, '0')}`),
    lines: [{ sku: `SKU-${i % 97}`, qty: new Long(1 + (i % 4)) }],
    pad: 'x'.repeat(150),
  };
}

function customerDoc(i: number): AnyDoc {
  return {
    _id: new ObjectId(i.toString(16).padStart(24, '0')),
    email: `customer${i}@example.com`,
    since: new Date(Date.UTC(2020, 0, 1) + i * 86_400_000),
    score: i % 2 ? 1.5 * i : new Int32(i),
    photo: new Binary(Buffer.from([i % 256, 1, 2, 3]), 0),
    address: { city: i % 2 ? 'Lisbon' : 'Porto', zip: null },
  };
}

/** The application's data, loaded as the application (readWriteAnyDatabase). */
async function seed(app: MongoClient): Promise<void> {
  const shop = app.db(testDb('shop'));
  await shop
    .collection('customers')
    .createIndex({ email: 1 }, { unique: true, name: 'email_unique' });
  await shop.collection('orders').createIndex({ status: 1, _id: 1 });
  for (let start = 0; start < ORDERS; start += 1_000) {
    const docs = Array.from({ length: Math.min(1_000, ORDERS - start) }, (_, k) =>
      orderDoc(start + k),
    );
    await shop.collection<AnyDoc>('orders').insertMany(docs);
  }
  await shop
    .collection<AnyDoc>('customers')
    .insertMany(Array.from({ length: CUSTOMERS }, (_, i) => customerDoc(i)));
}

/**
 * A client writing to shop.orders every `intervalMs` until stopped. It goes on after a refusal
 * (as an application retrying would), counting refusals and the writes accepted after one.
 * `bypass` writers insert `bypass-<n>` documents only.
 */
class Writer {
  ok = 0;
  refused = 0;
  okAfterRefusal = 0;
  firstRefusalAt: number | undefined;
  readonly otherErrors: string[] = [];
  private running = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly client: MongoClient,
    private readonly kind: 'application' | 'bypass',
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  private async run(): Promise<void> {
    const orders = this.client.db(testDb('shop')).collection<AnyDoc>('orders');
    for (let i = 0; this.running; i++) {
      try {
        if (this.kind === 'bypass') {
          await orders.insertOne({ _id: `bypass-${i}`, n: new Int32(i) });
        } else if (i % 4 === 3) {
          await orders.insertOne({ _id: `app-${i}`, n: new Int32(i), at: new Date() });
        } else {
          await orders.updateOne(
            { _id: new Int32((i * 37) % APP_RANGE) },
            { $inc: { n: new Int32(1) }, $set: { touched: new Long(i) } },
          );
        }
        this.ok += 1;
        if (this.refused > 0) this.okAfterRefusal += 1;
      } catch (error) {
        const name = error instanceof MongoServerError ? writeErrorName(error) : String(error);
        if (name === 'UserWritesBlocked') {
          this.refused += 1;
          this.firstRefusalAt ??= Date.now();
        } else if (this.otherErrors.length < 10) {
          this.otherErrors.push(name);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, this.intervalMs));
    }
  }
}

interface Scenario {
  source: Cluster;
  destination: Cluster;
  worker: StartedWorker;
  api: WorkerApi;
  /** root (bypasses write blocking) on each side: verification, the rogue writes. */
  sourceAdmin: MongoClient;
  destinationAdmin: MongoClient;
  /** The application on each side (subject to write blocking). */
  sourceApp: MongoClient;
  destinationApp: MongoClient;
}

async function startScenario(name: string): Promise<Scenario> {
  const [source, destination] = await Promise.all([
    startCluster(`${name}-source`, true),
    startCluster(`${name}-destination`, true),
  ]);
  const [sourceAdmin, destinationAdmin, sourceApp, destinationApp] = await Promise.all([
    connect(source.uriFor(SYNCER)),
    connect(destination.uriFor(SYNCER)),
    connect(source.uriFor(APP)),
    connect(destination.uriFor(APP)),
  ]);
  await seed(sourceApp);
  const worker = await startWorker(source.uriFor(SYNCER), destination.uriFor(SYNCER));
  await worker.api.waitFor('IDLE after boot', (p) => p.state === 'IDLE', 60_000);
  return {
    source,
    destination,
    worker,
    api: worker.api,
    sourceAdmin,
    destinationAdmin,
    sourceApp,
    destinationApp,
  };
}

/** canCommit (the copy done, lag small, the live verifier caught up), then POST /commit. */
async function commitWhenReady(api: WorkerApi, what: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    await api.waitFor(`canCommit (${what})`, (p) => p.canCommit, 120_000);
    const result = await api.post('commit');
    if (result.status === 200 && result.body.success) return;
    // canCommit may drop between the poll and the call (a burst of writes): poll again.
    if (result.body.error !== 'CommitNotReady' || Date.now() > deadline) {
      throw new Error(`POST /commit (${what}) failed: ${JSON.stringify(result)}`);
    }
  }
}

/** Waits until the commit under way has ended: COMMITTED, or rolled back to RUNNING. */
async function commitOutcome(api: WorkerApi, what: string): Promise<CutoverProgress> {
  return asCutover(
    await api.waitFor(
      `the commit to complete or roll back (${what})`,
      (p) => p.state === 'COMMITTED' || (p.state === 'RUNNING' && rollbackWarning(p) !== undefined),
      120_000,
    ),
  );
}

function rollbackWarning(p: Progress): string | undefined {
  return asCutover(p).warnings?.find((w) => w.startsWith('CommitRolledBack'));
}

/** The synced database on both sides, every document as BSON bytes, indexes with `unique`. */
async function expectDestinationEqualsSource(s: Scenario): Promise<void> {
  const report = await compareClusters(s.sourceAdmin, s.destinationAdmin, {
    databases: [testDb('shop')],
    compareUnique: true,
  });
  expect(report.differences).toEqual([]);
  expect(report.namespaces).toBe(2);
  expect(report.documents).toBeGreaterThanOrEqual(ORDERS + CUSTOMERS);
}

/** After a rollback: the application writes to the source again, the destination refuses it. */
async function expectSourceBackDestinationClosed(s: Scenario): Promise<void> {
  expect(
    await tryWrite(() =>
      s.sourceApp
        .db(testDb('shop'))
        .collection<AnyDoc>('orders')
        .insertOne({ _id: 'after rollback' }),
    ),
  ).toBe('ok');
  expect(
    await tryWrite(() =>
      s.destinationApp.db(testDb('shop')).collection<AnyDoc>('orders').insertOne({ _id: 'no' }),
    ),
  ).toBe('UserWritesBlocked');
}

async function stopScenario(s: Scenario | undefined, writers: Writer[]): Promise<void> {
  await Promise.all(writers.splice(0).map((w) => w.stop().catch(() => undefined)));
  if (s) {
    const output = outputOf(s.worker);
    for (const secret of SECRETS) expect(output).not.toContain(secret);
  }
  await closeClients();
  await stopAllProcesses();
}

describeOn('replicaSets')('cutover through the worker process (authentication on)', () => {
  let s: Scenario | undefined;
  const writers: Writer[] = [];

  beforeAll(() => buildOnce(), 600_000);

  afterEach(async () => {
    const scenario = s;
    s = undefined;
    await stopScenario(scenario, writers);
  }, 60_000);

  it('commits while the application writes: the application is refused once the source is blocked, the downtime is measured, the destination equals the source', async () => {
    s = await startScenario('cutover');
    const app = new Writer(s.sourceApp, 'application', 20);
    writers.push(app);
    app.start();
    await s.api.expectSuccess('start', START);
    expect((await s.api.progress()).state).toBe('RUNNING');

    await s.api.waitFor('canCommit', (p) => p.canCommit, 120_000);
    // The application is still writing, and accepted, while the sync is ready to commit.
    const acceptedBefore = app.ok;
    await waitUntil(() => app.ok >= acceptedBefore + 10, 'application writes before commit');
    expect(app.refused).toBe(0);

    const commitSentAt = Date.now();
    await commitWhenReady(s.api, 'cutover');
    const committed = await commitOutcome(s.api, 'cutover');
    expect(rollbackWarning(committed)).toBeUndefined();
    expect(committed).toMatchObject({
      state: 'COMMITTED',
      canWrite: true,
      info: 'commit completed',
      lagTimeSeconds: 0,
    });
    expect(committed.failure).toBeUndefined();
    const downtime = committed.commit?.cutoverSeconds;
    expect(typeof downtime).toBe('number');
    expect(downtime).toBeGreaterThan(0);
    expect(downtime).toBeLessThan(60);
    process.stdout.write(
      `cutover: measured downtime ${downtime} s (progress.commit.cutoverSeconds; source blocked → destination writable), ${app.ok} application writes accepted before it\n`,
    );

    // The application saw the block: UserWritesBlocked from the commit on, and nothing accepted
    // after its first refusal (the source stays blocked once committed).
    await waitUntil(() => app.refused >= 3, 'the application to be refused a few times');
    await app.stop();
    expect(app.otherErrors).toEqual([]);
    expect(app.firstRefusalAt).toBeGreaterThanOrEqual(commitSentAt);
    expect(app.okAfterRefusal).toBe(0);
    expect(app.ok).toBeGreaterThan(20);
    expect(
      await tryWrite(() =>
        s!.sourceApp.db(testDb('shop')).collection<AnyDoc>('orders').insertOne({ _id: 'late' }),
      ),
    ).toBe('UserWritesBlocked');

    // Every write the application got acknowledged is on the destination, byte for byte.
    await expectDestinationEqualsSource(s);

    // canWrite: the destination now accepts the application.
    expect(
      await tryWrite(() =>
        s!.destinationApp
          .db(testDb('shop'))
          .collection<AnyDoc>('orders')
          .insertOne({ _id: 'on the new primary cluster' }),
      ),
    ).toBe('ok');
  }, 180_000);

  it('a client that bypasses write blocking writes during the commit: rolled back (SourceWritesDuringCommit), the source writable again, then a second commit succeeds', async () => {
    s = await startScenario('bypass');
    await s.api.expectSuccess('start', START);
    await s.api.waitFor('canCommit', (p) => p.canCommit, 120_000);

    // root has bypassWriteBlockingMode: its writes go on while the source is blocked.
    const rogue = new Writer(s.sourceAdmin, 'bypass', 10);
    writers.push(rogue);
    rogue.start();
    await waitUntil(() => rogue.ok >= 10, 'the bypassing client to write');
    await commitWhenReady(s.api, 'with the bypassing client writing');
    const rolledBack = await commitOutcome(s.api, 'with the bypassing client writing');

    expect(rolledBack).toMatchObject({ state: 'RUNNING', canWrite: false });
    expect(rolledBack.failure).toBeUndefined();
    // The rollback cleared the commit: no failed step waits for a retry.
    expect(rolledBack.commitFailure).toBeUndefined();
    expect(rolledBack.sourceWriteBlocked).toBeUndefined();
    const warning = rollbackWarning(rolledBack)!;
    expect(warning).toMatch(/^CommitRolledBack: the last commit was rolled back at step \w+ \(/);
    expect(warning).toContain('(SourceWritesDuringCommit: ');
    expect(warning).toMatch(
      new RegExp(`insert on ${escapeRegExp(testNs('shop.orders'))} \\(_id "bypass-\\d+"\\)`),
    );
    // It was the bypassing client: never refused, still writing through the commit.
    expect(rogue.refused).toBe(0);
    expect(rogue.otherErrors).toEqual([]);

    // The application has its source back; the destination is still closed to it.
    await expectSourceBackDestinationClosed(s!);

    // The bypassing client stops; the sync catches up and a second commit completes.
    await rogue.stop();
    expect(rogue.otherErrors).toEqual([]);
    await commitWhenReady(s.api, 'second commit');
    const committed = await commitOutcome(s.api, 'second commit');
    expect(committed).toMatchObject({ state: 'COMMITTED', canWrite: true });
    expect(rollbackWarning(committed)).toBeUndefined();
    expect(committed.commit?.cutoverSeconds).toBeGreaterThan(0);

    await expectDestinationEqualsSource(s);
    // Nothing was lost: every bypassing write and the application's write after the rollback.
    const orders = s.destinationAdmin.db(testDb('shop')).collection<AnyDoc>('orders');
    expect(await orders.countDocuments({ _id: { $regex: /^bypass-/ } } as Document)).toBe(rogue.ok);
    expect(await orders.countDocuments({ _id: 'after rollback' } as Document)).toBe(1);
  }, 180_000);

  it('a destination document altered behind the sync: the final verification fails, the commit rolls back naming VerificationFailed and the namespace', async () => {
    s = await startScenario('drift');
    const app = new Writer(s.sourceApp, 'application', 20);
    writers.push(app);
    app.start();
    // mode full: the final pass re-reads every document (incremental re-reads only what change
    // application wrote since the live pass checked it, and this document is never written).
    await s.api.expectSuccess('start', { ...START, verification: { enabled: true, mode: 'full' } });
    await s.api.waitFor('canCommit', (p) => p.canCommit, 120_000);

    // Behind the sync's back: root on the destination (bypasses its block) changes a field of
    // an order the application never writes, so no change event will ever repair it.
    const ns = testNs('shop.orders');
    const destinationOrders = s.destinationAdmin.db(testDb('shop')).collection<AnyDoc>('orders');
    const altered = await destinationOrders.updateOne(
      { _id: new Int32(UNTOUCHED_ID) },
      { $set: { status: 'altered on the destination' } },
    );
    expect(altered.modifiedCount).toBe(1);
    const acceptedBefore = app.ok;
    await waitUntil(() => app.ok >= acceptedBefore + 10, 'application writes before commit');

    await commitWhenReady(s.api, 'with a drifted destination');
    const rolledBack = await commitOutcome(s.api, 'with a drifted destination');
    expect(rolledBack).toMatchObject({ state: 'RUNNING', canWrite: false });
    expect(rolledBack.failure).toBeUndefined();
    expect(rolledBack.commitFailure).toBeUndefined();
    const warning = rollbackWarning(rolledBack)!;
    expect(warning).toContain('at step verified (VerificationFailed: ');
    expect(warning).toContain(`${ns}: document _id {"$numberInt":"${UNTOUCHED_ID}"} differs`);
    expect(warning).not.toContain('SourceWritesDuringCommit');
    // It was the commit's final pass that read it (every document: mode full).
    expect(rolledBack.verification?.finalPass).toMatchObject({ mode: 'full' });
    expect(rolledBack.verification!.finalPass!.documentsRead).toBeGreaterThanOrEqual(
      ORDERS + CUSTOMERS,
    );
    // The destination was not repaired behind the check's back either.
    expect(await destinationOrders.findOne({ _id: new Int32(UNTOUCHED_ID) })).toMatchObject({
      status: 'altered on the destination',
    });

    // The source accepts the application again (its writer resumes), the destination does not.
    await waitUntil(
      () => app.okAfterRefusal >= 5 || (app.refused === 0 && app.ok >= acceptedBefore + 20),
      'the application to write on the source again',
    );
    await expectSourceBackDestinationClosed(s!);
    await app.stop();
    expect(app.otherErrors).toEqual([]);
    expect((await s.api.progress()).state).toBe('RUNNING');
  }, 180_000);
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
