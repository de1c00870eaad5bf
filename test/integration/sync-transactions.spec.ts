import { Int32, type Document, type Timestamp } from 'bson';
import { MongoServerError, type ClientSession, type MongoClient } from 'mongodb';
import {
  ChangeEventApplication,
  INTERNAL_DATABASE,
  SyncJob,
  documentOf,
  silentLogger,
  type ChangeWriter,
  type WriteOp,
} from '@sync/engine';
import {
  MongoChangeFeed,
  MongoChangeWriter,
  MongoCheckpointStore,
  MongoClusterDirectory,
  MongoDocumentLookup,
} from '@sync/mongo';
import { decodeResumeToken } from '@sync/mongo-emulator/changes';
import { describeOn, testDb } from '../helpers/real-clusters';
import {
  TUNING,
  commitAndWait,
  expectEqualClusters,
  request,
  startAuthClusters,
  waitFor,
  type AuthClusters,
} from './sync-helpers';

/**
 * Issue 22, part 2: the engine carries the source's multi-document transactions exactly
 * (replica-set source). A transaction reaches the change stream as one event per operation,
 * all at the commit's clusterTime, each resume token carrying the operation's index in the
 * transaction (txnOpIndex); an aborted transaction reaches it not at all. The engine applies
 * each event as an idempotent write in its document's lane (no destination transaction: see
 * README, "Source transactions"), and may checkpoint between two events of one transaction.
 *
 * "Applied once": a change event carries the RESULT of an update ($inc n becomes
 * updatedFields {n: <new value>}), so a replayed update rewrites the same value and a double
 * application cannot show in the data. What shows it is the number of events the applier
 * applies (progress `totalEventsApplied`): exactly one per operation of the committed
 * transactions, and after a restart exactly the operations after the saved resume point.
 * "In order": every destination write of an account carries the account's `seq` (each
 * operation increments it), and the writes the engine sends for one account never go back.
 */

jest.setTimeout(180_000);

type AnyDoc = { _id: unknown } & Document;

const ACCOUNTS = 40;
const bank = () => testDb('bank');

async function seed(c: AuthClusters): Promise<void> {
  const db = c.appSrc.db(bank());
  await db.collection<AnyDoc>('accounts').insertMany(
    Array.from({ length: ACCOUNTS }, (_, i) => ({
      _id: new Int32(i),
      balance: new Int32(1000),
      seq: new Int32(0),
    })),
  );
  await db.createCollection('ledger');
}

/** One destination write the engine sent, in the order it sent them. */
interface SentWrite {
  ns: string;
  op: WriteOp;
}

interface Tuning {
  /** Events per feed batch (default 1000): small ones end batches inside transactions. */
  maxBatchEvents?: number;
  /** Events read and not yet applied (default 20000): small keeps the reader near the lanes. */
  maxInFlight?: number;
  /** Checkpoint after this many applied events (default 5000). */
  checkpointEveryEvents?: number;
  checkpointIntervalMs?: number;
  /** Delay before each destination bulk (slows application down to stop it mid-way). */
  writeDelayMs?: number;
}

interface Engine {
  job: SyncJob;
  sent: SentWrite[];
  /** Connections cut, no graceful stop, no final checkpoint: a SIGKILL as the clusters see it. */
  crash(): Promise<void>;
  /** A graceful stop, then its clients closed (the directory is the test's, not the job's). */
  close(): Promise<void>;
}

/** The destination writer, recording every write it is asked for. */
function spyWriter(inner: MongoChangeWriter, sent: SentWrite[], delayMs: number): ChangeWriter {
  return {
    bulkWrite: async (ns, ops) => {
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      for (const op of ops) sent.push({ ns: `${ns.db}.${ns.coll}`, op });
      return inner.bulkWrite(ns, ops);
    },
    versions: (ns, id, fields) => inner.versions(ns, id, fields),
  };
}

/** An engine as the worker builds it (mongoChangeApplication), with the applier tuned. */
async function txnEngine(c: AuthClusters, tuning: Tuning = {}): Promise<Engine> {
  const directory = new MongoClusterDirectory(
    { cluster0: c.sourceUri, cluster1: c.destinationUri },
    'worker',
  );
  const sent: SentWrite[] = [];
  const applier: Record<string, number> = { checkpointIntervalMs: 100 };
  if (tuning.checkpointIntervalMs !== undefined)
    applier.checkpointIntervalMs = tuning.checkpointIntervalMs;
  if (tuning.checkpointEveryEvents !== undefined)
    applier.checkpointEveryEvents = tuning.checkpointEveryEvents;
  if (tuning.maxInFlight !== undefined) applier.maxInFlight = tuning.maxInFlight;
  const job = new SyncJob({
    clusters: directory,
    logger: silentLogger,
    ...TUNING,
    phases: {
      changeApplication: () =>
        new ChangeEventApplication({
          lagPollMs: 100,
          applier,
          ports: (ctx) => {
            const source = directory.client(ctx.job.source.name);
            const destination = directory.client(ctx.job.destination.name);
            return {
              feed: new MongoChangeFeed(source, {
                maxAwaitTimeMS: 100,
                ...(tuning.maxBatchEvents ? { maxBatchEvents: tuning.maxBatchEvents } : {}),
              }),
              writer: spyWriter(new MongoChangeWriter(destination), sent, tuning.writeDelayMs ?? 0),
              lookup: new MongoDocumentLookup(source),
              checkpoints: new MongoCheckpointStore(
                destination,
                `changeEvents:${ctx.checkpointKey}`,
              ),
            };
          },
        }),
    },
    onFatal: () => undefined,
  });
  await job.initialize();
  return {
    job,
    sent,
    crash: async () => {
      await directory.close().catch(() => undefined);
      await job.close().catch(() => undefined);
    },
    close: async () => {
      await job.close();
      await directory.close();
    },
  };
}

/** Runs `body` in a transaction of its own session, then commits or aborts it. */
async function transaction(
  client: MongoClient,
  body: (session: ClientSession) => Promise<void>,
  end: 'commit' | 'abort' = 'commit',
): Promise<void> {
  const session = client.startSession();
  try {
    session.startTransaction();
    await body(session);
    if (end === 'commit') await session.commitTransaction();
    else await session.abortTransaction();
  } finally {
    await session.endSession();
  }
}

/** Moves `amount` from account `from` to account `to`, with a ledger entry: 3 operations. */
async function transfer(
  c: AuthClusters,
  session: ClientSession,
  id: string,
  from: number,
  to: number,
  amount: number,
): Promise<void> {
  const db = c.appSrc.db(bank());
  const accounts = db.collection<AnyDoc>('accounts');
  await db.collection<AnyDoc>('ledger').insertOne(
    { _id: id, from: new Int32(from), to: new Int32(to), amount: new Int32(amount) },
    {
      session,
    },
  );
  await accounts.updateOne(
    { _id: new Int32(from) },
    { $inc: { balance: new Int32(-amount), seq: new Int32(1) } },
    { session },
  );
  await accounts.updateOne(
    { _id: new Int32(to) },
    { $inc: { balance: new Int32(amount), seq: new Int32(1) } },
    { session },
  );
}

/**
 * A transaction of `2 * pairs` operations over both collections, alternating: a ledger insert,
 * then an $inc of one account (round robin, so each account is updated pairs/ACCOUNTS times).
 */
async function largeTransaction(c: AuthClusters, tag: string, pairs: number): Promise<number> {
  const db = c.appSrc.db(bank());
  await transaction(c.appSrc, async (session) => {
    for (let i = 0; i < pairs; i++) {
      await db
        .collection<AnyDoc>('ledger')
        .insertOne({ _id: `${tag}-${i}`, amount: new Int32(i % 7) }, { session });
      await db
        .collection<AnyDoc>('accounts')
        .updateOne(
          { _id: new Int32(i % ACCOUNTS) },
          { $inc: { balance: new Int32(i % 7), seq: new Int32(1) } },
          { session },
        );
    }
  });
  return 2 * pairs;
}

/** The engine's events applied so far (this engine instance). */
const applied = (job: SyncJob): number => job.progress().totalEventsApplied ?? 0;

/**
 * The events applied once application has settled (no change for 500 ms). Change application
 * starts AT T0, inclusive: the seed's last operation (here the ledger's create) may be applied
 * after canCommit already holds.
 */
async function settledApplied(job: SyncJob): Promise<number> {
  let last = -1;
  for (;;) {
    const now = applied(job);
    if (now === last) return now;
    last = now;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Waits until exactly `expected` more events are applied, and that no more follow. */
async function expectApplied(job: SyncJob, baseline: number, expected: number): Promise<void> {
  await waitFor(
    () => applied(job) - baseline >= expected,
    60_000,
    `${expected} events applied`,
    () => JSON.stringify(job.progress()),
  );
  await new Promise((r) => setTimeout(r, 600)); // several feed waits: nothing else arrives
  expect(applied(job) - baseline).toBe(expected);
}

/** The `seq` each sent write gives an account (a $set, or a whole document), per account. */
function seqWrites(sent: SentWrite[]): Map<number, number[]> {
  const accounts = `${bank()}.accounts`;
  const out = new Map<number, number[]>();
  for (const { ns, op } of sent) {
    if (ns !== accounts) continue;
    const seq =
      op.kind === 'update'
        ? (op.update.$set as Document | undefined)?.seq
        : op.kind === 'replace'
          ? documentOf(op.replacement).seq
          : undefined;
    if (seq === undefined) continue;
    const id = Number(op.filter._id);
    const list = out.get(id) ?? [];
    list.push(Number(seq));
    out.set(id, list);
  }
  return out;
}

async function sourceSeqs(c: AuthClusters): Promise<Map<number, number>> {
  const docs = await c.src.db(bank()).collection<AnyDoc>('accounts').find().toArray();
  return new Map(docs.map((d) => [Number(d._id), Number(d.seq)]));
}

/**
 * The resume point saved in the destination's metadata: its cluster time and txnOpIndex (the
 * index of the operation in its transaction; 0 outside transactions). Decoded with the
 * emulator's decoder, which reads MongoDB's tokens as well (same KeyString layout).
 */
async function savedPosition(
  c: AuthClusters,
): Promise<{ clusterTime: Timestamp; txnOpIndex: number } | undefined> {
  const doc = await c.dst
    .db(INTERNAL_DATABASE)
    .collection<AnyDoc>('resumeData')
    .findOne({ _id: { $regex: /^changeEvents:/ } } as Document);
  if (!doc) return undefined;
  const data = decodeResumeToken(doc.resumeToken);
  return { clusterTime: data.clusterTime, txnOpIndex: data.txnOpIndex };
}

describeOn('replicaSets')('source transactions (replica set, authentication on)', () => {
  let c: AuthClusters;
  const engines: Engine[] = [];

  afterEach(async () => {
    for (const e of engines.splice(0)) await e.close().catch(() => undefined);
    await c.src.db('admin').command({ setUserWriteBlockMode: 1, global: false });
    await c.close();
  });

  async function started(tuning: Tuning = {}): Promise<Engine> {
    const engine = await txnEngine(c, tuning);
    engines.push(engine);
    if (engine.job.state === 'IDLE') await engine.job.start(request());
    await waitFor(
      () => engine.job.progress().canCommit === true,
      60_000,
      'canCommit',
      () => JSON.stringify(engine.job.progress()),
    );
    return engine;
  }

  it('applies every event of small and large committed transactions once, in order: the destination equals the source', async () => {
    c = await startAuthClusters();
    await seed(c);
    const { job, sent } = await started();
    const baseline = await settledApplied(job);

    let operations = 0;
    for (let t = 0; t < 30; t++) {
      await transaction(c.appSrc, async (s) => {
        await transfer(c, s, `small-${t}`, t % ACCOUNTS, (t * 7 + 1) % ACCOUNTS, 10 + t);
        // The same document twice in one transaction: both updates, in this order.
        await c.appSrc
          .db(bank())
          .collection<AnyDoc>('accounts')
          .updateOne(
            { _id: new Int32(t % ACCOUNTS) },
            { $set: { last: `small-${t}` }, $inc: { seq: new Int32(1) } },
            { session: s },
          );
      });
      operations += 4;
    }
    // A few thousand operations over two collections in one transaction.
    operations += await largeTransaction(c, 'large', 1_500);

    await expectApplied(job, baseline, operations);
    // In order: the engine's writes of each account carry a seq that never goes back, and end
    // at the source's.
    const wanted = await sourceSeqs(c);
    const writes = seqWrites(sent);
    for (const [id, seqs] of writes) {
      for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]!);
      expect(seqs[seqs.length - 1]).toBe(wanted.get(id));
    }
    expect(writes.size).toBe(ACCOUNTS);

    await commitAndWait(job);
    await expectEqualClusters(c);
  });

  it('never carries a write of an aborted transaction to the destination', async () => {
    c = await startAuthClusters();
    await seed(c);
    const { job, sent } = await started();
    const baseline = await settledApplied(job);
    const db = c.appSrc.db(bank());
    const ledger = db.collection<AnyDoc>('ledger');

    let operations = 0;
    let aborted = 0;
    for (let t = 0; t < 20; t++) {
      await transaction(c.appSrc, (s) =>
        transfer(c, s, `ok-${t}`, t % ACCOUNTS, (t + 3) % ACCOUNTS, 5),
      );
      operations += 3;
      // Aborted by the application after its writes.
      await transaction(
        c.appSrc,
        async (s) => {
          await transfer(c, s, `aborted-${t}`, (t + 1) % ACCOUNTS, (t + 2) % ACCOUNTS, 1_000);
          await ledger.deleteOne({ _id: `ok-${t}` } as Document, { session: s });
        },
        'abort',
      );
      aborted += 1;
      // Aborted by the server: a duplicate key half-way (the ledger entry exists).
      const failed = await transaction(c.appSrc, async (s) => {
        await transfer(c, s, `aborted-dup-${t}`, (t + 5) % ACCOUNTS, (t + 6) % ACCOUNTS, 1_000);
        await ledger.insertOne({ _id: `ok-${t}` }, { session: s });
      }).catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(MongoServerError);
      expect((failed as MongoServerError).code).toBe(11000);
      aborted += 1;
    }
    // Abandoned: its session ends with the transaction open (the server aborts it).
    const abandoned = c.appSrc.startSession();
    abandoned.startTransaction();
    await transfer(c, abandoned, 'aborted-abandoned', 0, 1, 1_000);
    await abandoned.endSession();
    aborted += 1;
    // A large aborted transaction.
    await transaction(
      c.appSrc,
      async (s) => {
        for (let i = 0; i < 500; i++)
          await ledger.insertOne({ _id: `aborted-large-${i}` }, { session: s });
      },
      'abort',
    );
    aborted += 1;

    await expectApplied(job, baseline, operations);
    expect(aborted).toBe(42);
    const leaked = sent.filter(({ op }) => String(op.filter._id).startsWith('aborted'));
    expect(leaked).toEqual([]);
    expect(
      await c.dst
        .db(bank())
        .collection<AnyDoc>('ledger')
        .countDocuments({ _id: { $regex: /^aborted/ } } as Document),
    ).toBe(0);
    // No balance moved by an aborted transfer (amount 1000) reached the destination.
    const balances = await c.dst.db(bank()).collection<AnyDoc>('accounts').find().toArray();
    const total = balances.reduce((sum, d) => sum + Number(d.balance), 0);
    expect(total).toBe(ACCOUNTS * 1000);

    await commitAndWait(job);
    await expectEqualClusters(c);
    expect(
      await c.src
        .db(bank())
        .collection<AnyDoc>('ledger')
        .countDocuments({ _id: { $regex: /^aborted/ } } as Document),
    ).toBe(0);
  });

  it('resumes inside a transaction after a stop and after a crash, each event applied exactly once more', async () => {
    c = await startAuthClusters();
    await seed(c);
    // Tiny batches, a short read-ahead and a checkpoint after every applied event: checkpoints
    // land between two events of one transaction.
    const tuning: Tuning = {
      maxBatchEvents: 5,
      maxInFlight: 10,
      checkpointEveryEvents: 1,
      checkpointIntervalMs: 0,
      writeDelayMs: 2,
    };
    const PAIRS = 600;
    const N = 2 * PAIRS;

    /**
     * Runs one large transaction and stops the engine (`how`) once its saved resume point is
     * inside the first half of it. Returns the txnOpIndex of the resume point saved last.
     */
    const stopInside = async (engine: Engine, tag: string, how: 'stop' | 'crash') => {
      await largeTransaction(c, tag, PAIRS);
      let inside: Timestamp | undefined;
      await waitFor(
        async () => {
          const at = await savedPosition(c);
          if (!at || at.txnOpIndex < 1 || at.txnOpIndex >= N / 2) return false;
          inside = at.clusterTime;
          return true;
        },
        30_000,
        'a resume point inside the transaction',
      );
      if (how === 'stop') await engine.close();
      else await engine.crash();
      engines.splice(engines.indexOf(engine), 1);
      const at = (await savedPosition(c))!;
      expect(at.clusterTime).toEqual(inside); // still that transaction
      if (process.env.TXN_FIGURES)
        process.stdout.write(`${how}: resume point after operation ${at.txnOpIndex} of ${N}\n`);
      return at.txnOpIndex;
    };

    // 1. A graceful stop: the lanes drain and the resume point saved last is the end of the
    // last batch read — inside the transaction.
    const first = await started(tuning);
    const stopped = await stopInside(first, 'stop', 'stop');
    expect(stopped).toBeGreaterThanOrEqual(1);
    expect(stopped).toBeLessThan(N - 1);
    // A reader of the destination DURING the sync sees part of the transaction.
    const partial = await c.dst
      .db(bank())
      .collection<AnyDoc>('ledger')
      .countDocuments({ _id: { $regex: /^stop-/ } } as Document);
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(PAIRS);

    const second = await started(tuning);
    await expectApplied(second.job, 0, N - (stopped + 1));
    expect(
      await c.dst
        .db(bank())
        .collection<AnyDoc>('ledger')
        .countDocuments({ _id: { $regex: /^stop-/ } } as Document),
    ).toBe(PAIRS);

    // 2. A crash: the resume point is the one saved last, inside the transaction; the events
    // applied after it before the crash are applied again (idempotent writes).
    const crashed = await stopInside(second, 'crash', 'crash');
    expect(crashed).toBeGreaterThanOrEqual(1);
    expect(crashed).toBeLessThan(N - 1);
    const third = await started(tuning);
    await expectApplied(third.job, 0, N - (crashed + 1));
    // The restarted engine's writes of each account: in order, ending at the source's.
    const wanted = await sourceSeqs(c);
    for (const [id, seqs] of seqWrites(third.sent)) {
      for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]!);
      expect(seqs[seqs.length - 1]).toBe(wanted.get(id));
    }

    await commitAndWait(third.job);
    await expectEqualClusters(c);
    const accounts = await c.dst.db(bank()).collection<AnyDoc>('accounts').find().toArray();
    // Each account: 2 * PAIRS / ACCOUNTS increments of seq, one per committed operation.
    for (const a of accounts) expect(Number(a.seq)).toBe((2 * PAIRS) / ACCOUNTS);
  });

  it('a commit with write blocking taken while transactions run: every committed transaction is on the destination, none half applied', async () => {
    c = await startAuthClusters();
    await seed(c);
    const { job } = await started();
    const committed: string[] = [];
    const outcomes = {
      committed: 0,
      committedAfterRequest: 0,
      blocked: 0,
      otherErrors: [] as string[],
    };
    let running = true;
    let commitRequested = false;
    let commitCall: Promise<void> | null = null;

    // Three sessions moving money with transfers (3 operations) and batches of 20 transfers
    // (60 operations), until the write block stops them.
    const app = async (worker: number): Promise<void> => {
      for (let t = 0; running; t++) {
        const id = `w${worker}-${t}`;
        const size = t % 5 === 4 ? 20 : 1;
        try {
          await transaction(c.appSrc, async (s) => {
            for (let k = 0; k < size; k++)
              await transfer(
                c,
                s,
                `${id}-${k}`,
                (t + k + worker) % ACCOUNTS,
                (t + 2 * k + worker + 1) % ACCOUNTS,
                1,
              );
            // The commit is requested while this transaction is open, its writes made and its
            // commit not sent: the write block waits for it (as mongod's does), so it commits.
            if (worker === 0 && !commitCall && outcomes.committed >= 30) {
              commitRequested = true;
              commitCall = job.commit();
              commitCall.catch(() => undefined); // awaited below
              await new Promise((r) => setTimeout(r, 200));
            }
            // Think time between the last write and the commit: the commit's write block is
            // likely to arrive right then (in the other sessions' transactions too).
            await new Promise((r) => setTimeout(r, 30));
          });
          committed.push(...Array.from({ length: size }, (_, k) => `${id}-${k}`));
          outcomes.committed += 1;
          if (commitRequested) outcomes.committedAfterRequest += 1;
        } catch (error) {
          const name = error instanceof MongoServerError ? error.codeName : String(error);
          if (name === 'UserWritesBlocked') {
            outcomes.blocked += 1;
            return;
          }
          if (name !== 'WriteConflict' && name !== 'NoSuchTransaction')
            outcomes.otherErrors.push(String(name));
        }
      }
    };
    const apps = [0, 1, 2].map((w) => app(w));
    await waitFor(() => commitCall !== null, 60_000, '30 committed transactions, then commit');
    await commitCall;
    await waitFor(
      () => job.progress().state === 'COMMITTED',
      60_000,
      'COMMITTED',
      () => JSON.stringify(job.progress()),
    );
    running = false;
    await Promise.all(apps);

    expect(outcomes.otherErrors).toEqual([]);
    expect(outcomes.blocked).toBeGreaterThan(0); // the block stopped the application
    // Transactions open when the commit began committed during it (before the commit point).
    expect(outcomes.committedAfterRequest).toBeGreaterThan(0);
    await expectEqualClusters(c);
    const dstLedger = await c.dst.db(bank()).collection<AnyDoc>('ledger').find().toArray();
    const onDestination = new Set(dstLedger.map((d) => String(d._id)));
    // Every acknowledged transfer is there, and nothing else.
    for (const id of committed) expect(onDestination.has(id)).toBe(true);
    expect(onDestination.size).toBe(committed.length);
    // Nothing half applied: the balances add up, and each account's seq counts its transfers.
    const accounts = await c.dst.db(bank()).collection<AnyDoc>('accounts').find().toArray();
    expect(accounts.reduce((sum, a) => sum + Number(a.balance), 0)).toBe(ACCOUNTS * 1000);
    const touches = new Map<number, number>();
    for (const d of dstLedger) {
      for (const side of [d.from, d.to])
        touches.set(Number(side), (touches.get(Number(side)) ?? 0) + 1);
    }
    for (const a of accounts) expect(Number(a.seq)).toBe(touches.get(Number(a._id)) ?? 0);
  });
});
