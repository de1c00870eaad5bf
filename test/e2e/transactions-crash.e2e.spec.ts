import { Int32, type Document } from 'bson';
import { MongoServerError, type ClientSession, type MongoClient } from 'mongodb';
import { decodeResumeToken } from '@sync/mongo-emulator/changes';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { stopAllProcesses } from '../helpers/processes';
import { describeOn } from '../helpers/real-clusters';
import {
  APP,
  SYNCER,
  buildOnce,
  closeClients,
  connect,
  crash,
  outputOf,
  sleep,
  startCluster,
  startWorker,
  tryWrite,
  type Cluster,
  type Progress,
  type StartedWorker,
} from './support/harness';

/**
 * Issue 22, part 2: a worker PROCESS syncs replica set → replica set while the application
 * writes only in multi-document transactions — transfers between accounts (a ledger insert and
 * two $inc), large ones (thousands of operations over two collections), deletes, and
 * transactions aborted by the application or by the server — and is SIGKILLed KILLS times while
 * it applies their change events, each time restarted with the same arguments. Most kills wait
 * for the resume point the worker saved to be INSIDE a transaction (its token's txnOpIndex > 0),
 * so the restarted worker resumes between two events of one transaction. Then commit: the
 * destination equals the source byte for byte, no document of an aborted transaction exists
 * there, and each $inc counter equals the increments of the committed transactions.
 *
 * `TXN_KILLS` makes longer runs.
 */
const KILLS = Number(process.env.TXN_KILLS ?? 10);
/** Each small-transaction session has its own accounts and counters, the large one its own counters. */
const ACCOUNTS = 50;
const COUNTERS = 20;
/** Pairs (ledger insert + counter $inc) of a large transaction: 2 * LARGE operations. */
const LARGE = 750;
const DB = 'bank';
const METADATA_DB = 'sync_reserved_for_internal_use';

/** Accounts are keyed by Int32, counters and ledger entries by string. */
type Row = Document & { _id: string | Int32 };

interface Kill {
  /** txnOpIndex of the resume point the killed worker had saved (0: not inside a transaction). */
  txnOpIndex: number;
}

/** The application: transactions only, on three sessions at a time, until the write block. */
class TransactionalApplication {
  readonly expected = new Array<number>(COUNTERS).fill(0);
  readonly stats = { committed: 0, large: 0, aborted: 0, serverAborted: 0, deletes: 0 };
  lastError: string | undefined;
  private running = true;
  private loops: Promise<void>[] = [];

  constructor(private readonly client: MongoClient) {}

  start(): void {
    this.loops = [this.smallLoop(0), this.smallLoop(1), this.largeLoop()];
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private get db() {
    return this.client.db(DB);
  }

  /**
   * Runs one transaction; `increments` are counted only once it committed. On an unknown commit
   * result the marker (a ledger document every transaction inserts) tells.
   */
  private async run(
    marker: string,
    body: (s: ClientSession, increments: number[]) => Promise<void>,
    end: 'commit' | 'abort',
  ): Promise<'committed' | 'aborted' | 'blocked'> {
    const session = this.client.startSession();
    const increments = new Array<number>(COUNTERS).fill(0);
    try {
      session.startTransaction();
      await body(session, increments);
      if (end === 'abort') {
        await session.abortTransaction();
        return 'aborted';
      }
      try {
        await session.commitTransaction();
      } catch (error) {
        if (!(
          error instanceof MongoServerError && error.hasErrorLabel('UnknownTransactionCommitResult')
        ))
          throw error;
        const found = await this.db.collection<Row>('ledger').countDocuments({ _id: marker });
        if (found === 0) return 'aborted';
      }
      increments.forEach((n, k) => (this.expected[k] += n));
      return 'committed';
    } catch (error) {
      await session.abortTransaction().catch(() => undefined);
      const name =
        error instanceof MongoServerError
          ? error.code === 11000
            ? 'DuplicateKey'
            : (error.codeName ?? `code ${error.code}`)
          : String(error);
      this.lastError = name;
      if (name === 'UserWritesBlocked') return 'blocked';
      // Aborted by the server: a duplicate key (on purpose), or a write conflict.
      if (name === 'DuplicateKey' || name === 'WriteConflict' || name === 'NoSuchTransaction') {
        this.stats.serverAborted += 1;
        return 'aborted';
      }
      throw error;
    } finally {
      await session.endSession();
    }
  }

  private async inc(s: ClientSession, increments: number[], k: number): Promise<void> {
    await this.db
      .collection<Row>('counters')
      .updateOne({ _id: `c${k}` }, { $inc: { n: new Int32(1) } }, { session: s });
    increments[k] += 1;
  }

  private async transfer(s: ClientSession, id: string, from: number, to: number): Promise<void> {
    const accounts = this.db.collection<Row>('accounts');
    await this.db
      .collection<Row>('ledger')
      .insertOne({ _id: id, from: new Int32(from), to: new Int32(to) }, { session: s });
    await accounts.updateOne(
      { _id: new Int32(from) },
      { $inc: { balance: new Int32(-7), seq: new Int32(1) } },
      { session: s },
    );
    await accounts.updateOne(
      { _id: new Int32(to) },
      { $inc: { balance: new Int32(7), seq: new Int32(1) } },
      { session: s },
    );
  }

  /**
   * Transfers between this session's accounts with an $inc of one of its counters, sometimes
   * deleting an older ledger entry of its own; of every six, one is aborted by the application
   * and one by the server (a duplicate key after its writes).
   */
  private async smallLoop(worker: number): Promise<void> {
    const own: string[] = [];
    const account = (n: number) => worker * (ACCOUNTS / 2) + (n % (ACCOUNTS / 2));
    for (let t = 0; this.running; t++) {
      const kind = t % 6 === 4 ? 'abort' : t % 6 === 5 ? 'duplicate' : 'commit';
      const id = `${kind === 'commit' ? 's' : 'aborted'}-${worker}-${t}`;
      const removable = kind === 'commit' && t % 5 === 0 ? own.shift() : undefined;
      const outcome = await this.run(
        id,
        async (s, increments) => {
          await this.transfer(s, id, account(t), account(3 * t + 1));
          await this.inc(s, increments, worker * 5 + (t % 5));
          if (removable)
            await this.db.collection<Row>('ledger').deleteOne({ _id: removable }, { session: s });
          if (kind === 'duplicate')
            await this.db.collection<Row>('ledger').insertOne({ _id: 'sentinel' }, { session: s });
        },
        kind === 'abort' ? 'abort' : 'commit',
      );
      if (outcome === 'blocked') return;
      if (outcome === 'committed') {
        this.stats.committed += 1;
        if (removable) this.stats.deletes += 1;
        else if (t % 3 === 0) own.push(id);
      } else {
        this.stats.aborted += 1;
        if (removable) own.unshift(removable);
      }
      await sleep(5);
    }
  }

  /** Large transactions over two collections, one after the other; every third one aborted. */
  private async largeLoop(): Promise<void> {
    for (let t = 0; this.running; t++) {
      const abort = t % 3 === 2;
      const tag = `${abort ? 'aborted' : 'big'}-${t}`;
      const outcome = await this.run(
        `${tag}-0`,
        async (s, increments) => {
          for (let i = 0; i < LARGE; i++) {
            await this.db
              .collection<Row>('ledger')
              .insertOne({ _id: `${tag}-${i}`, i: new Int32(i) }, { session: s });
            await this.inc(s, increments, 10 + (i % 10));
          }
        },
        abort ? 'abort' : 'commit',
      );
      if (outcome === 'blocked') return;
      if (outcome === 'committed') this.stats.large += 1;
      else this.stats.aborted += 1;
    }
  }
}

describeOn('replicaSets')(
  `source transactions through ${KILLS} SIGKILLs of the worker during change application`,
  () => {
    let source: Cluster;
    let destination: Cluster;
    let sourceAdmin: MongoClient;
    let destinationAdmin: MongoClient;
    let sourceApp: MongoClient;
    let destinationApp: MongoClient;
    let worker: StartedWorker;
    let app: TransactionalApplication | undefined;
    const kills: Kill[] = [];

    afterAll(async () => {
      await app?.stop().catch(() => undefined);
      await closeClients();
      await stopAllProcesses();
    }, 60_000);

    const launch = async (): Promise<Progress> => {
      worker = await startWorker(source.uriFor(SYNCER), destination.uriFor(SYNCER));
      return worker.api.waitFor(
        'the worker to restore its job',
        (p) => p.state !== 'INITIALIZING',
        60_000,
        20,
      );
    };

    /** The resume point the worker saved (undefined before the first save). */
    const saved = async (): Promise<{ data: string; txnOpIndex: number } | undefined> => {
      const doc = await destinationAdmin
        .db(METADATA_DB)
        .collection<Row>('resumeData')
        .findOne({ _id: { $regex: /^changeEvents:/ } } as Document);
      if (!doc) return undefined;
      const token = doc.resumeToken as { _data: string };
      return { data: token._data, txnOpIndex: decodeResumeToken(token).txnOpIndex };
    };

    /**
     * Waits (at most `maxWaitMs`) until this worker has saved a resume point of its own inside
     * a transaction, kills it, and restarts it: the new worker resumes from that point.
     */
    const killAndRestart = async (maxWaitMs: number): Promise<void> => {
      const before = (await saved())?.data;
      const deadline = Date.now() + maxWaitMs;
      for (;;) {
        const at = await saved();
        if ((at && at.data !== before && at.txnOpIndex > 0) || Date.now() > deadline) break;
        await sleep(10);
      }
      await crash(worker);
      const at = await saved();
      kills.push({ txnOpIndex: at && at.data !== before ? at.txnOpIndex : 0 });
      const restored = await launch();
      if (restored.state !== 'RUNNING' || restored.failure)
        throw new Error(`after kill ${kills.length}: ${JSON.stringify(restored)}`);
    };

    it('ends byte-equal: committed transactions whole, aborted ones absent, counters exact', async () => {
      const started = Date.now();
      buildOnce();
      [source, destination] = await Promise.all([
        startCluster('source', true),
        startCluster('destination', true),
      ]);
      [sourceAdmin, destinationAdmin, sourceApp, destinationApp] = await Promise.all([
        connect(source.uriFor(SYNCER)),
        connect(destination.uriFor(SYNCER)),
        connect(source.uriFor(APP)),
        connect(destination.uriFor(APP)),
      ]);
      const db = sourceApp.db(DB);
      await db.collection<Row>('accounts').insertMany(
        Array.from({ length: ACCOUNTS }, (_, i) => ({
          _id: new Int32(i),
          balance: new Int32(1000),
          seq: new Int32(0),
        })),
      );
      await db
        .collection<Row>('counters')
        .insertMany(
          Array.from({ length: COUNTERS }, (_, k) => ({ _id: `c${k}`, n: new Int32(0) })),
        );
      await db.collection<Row>('ledger').insertOne({ _id: 'sentinel' });

      await launch();
      app = new TransactionalApplication(sourceApp);
      app.start();
      await worker.api.expectSuccess('start', {
        source: 'cluster0',
        destination: 'cluster1',
        enableUserWriteBlocking: true,
      });
      await worker.api.waitFor(
        'change event application',
        (p) => p.canCommit && p.info !== 'collection copy',
        60_000,
      );

      // Change application: every kill waits up to 3 s for the worker to save a resume point
      // inside a transaction; the application commits and aborts transactions throughout.
      for (let k = 0; k < KILLS; k++) {
        await sleep(100 + Math.floor(Math.random() * 400));
        await killAndRestart(3_000);
      }
      await worker.api.waitFor('canCommit', (p) => p.canCommit, 60_000);
      await worker.api.expectSuccess('commit');
      const committed = await worker.api.waitFor(
        'COMMITTED',
        (p) => p.state === 'COMMITTED',
        60_000,
      );
      expect(committed).toMatchObject({ canWrite: true, info: 'commit completed' });
      await app.stop();

      const inside = kills.filter((k) => k.txnOpIndex > 0).length;
      console.log(
        `[transactions-crash] ${kills.length} kills, ${inside} with the resume point inside a ` +
          `transaction (txnOpIndex ${kills.map((k) => k.txnOpIndex).join(', ')}); application: ` +
          `${app.stats.committed} small and ${app.stats.large} large transactions committed, ` +
          `${app.stats.aborted} aborted (${app.stats.serverAborted} by the server), ` +
          `${app.stats.deletes} deletes; ${Math.round((Date.now() - started) / 1000)} s`,
      );
      expect(kills).toHaveLength(KILLS);
      expect(inside).toBeGreaterThan(0);
      expect(app.stats.large).toBeGreaterThan(0);
      expect(app.stats.aborted).toBeGreaterThan(0);
      // The application ended on the commit's write block, nothing else.
      expect(app.lastError).toBe('UserWritesBlocked');

      const report = await compareClusters(sourceAdmin, destinationAdmin, { compareUnique: true });
      expect(report.differences).toEqual([]);
      const aborted = { _id: { $regex: /^aborted-/ } } as Document;
      expect(await destinationAdmin.db(DB).collection<Row>('ledger').countDocuments(aborted)).toBe(
        0,
      );
      expect(await sourceAdmin.db(DB).collection<Row>('ledger').countDocuments(aborted)).toBe(0);
      const counters = await destinationAdmin.db(DB).collection<Row>('counters').find().toArray();
      const counted = new Map(counters.map((c) => [String(c._id), Number(c.n)]));
      expect(app.expected.map((_, k) => counted.get(`c${k}`))).toEqual(app.expected);
      const accounts = await destinationAdmin.db(DB).collection<Row>('accounts').find().toArray();
      expect(accounts.reduce((sum, a) => sum + Number(a.balance), 0)).toBe(ACCOUNTS * 1000);

      expect(
        await tryWrite(() =>
          sourceApp
            .db(DB)
            .collection<Row>('ledger')
            .insertOne({ _id: 'late' } as never),
        ),
      ).toBe('UserWritesBlocked');
      expect(
        await tryWrite(() =>
          destinationApp
            .db(DB)
            .collection<Row>('ledger')
            .insertOne({ _id: 'late' } as never),
        ),
      ).toBe('ok');
      expect(outputOf(worker)).not.toContain(SYNCER.password);
    }, 300_000);
  },
);
