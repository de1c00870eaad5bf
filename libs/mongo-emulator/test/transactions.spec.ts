import { Long, MongoClient, MongoServerError, type ClientSession, type Document } from 'mongodb';
import { TestCluster } from './helpers/cluster';
import { emulatorOnly } from './helpers/real-server';

type TestDoc = { _id: number | string; [key: string]: unknown };

/**
 * Multi-document transactions on a replica set, through the driver. Expected values come from
 * MongoDB's documentation (transactions, change events), the server's error_labels.cpp and
 * oplog writer (applyOps / partialTxn / count / prevOpTime), and the change-stream transform
 * stage (txnNumber and lsid before _id).
 */
describe('transactions (replica set)', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let other: MongoClient;
  let dbName: string;

  beforeAll(async () => {
    cluster = await TestCluster.start({ transactionLifetimeLimitSeconds: 5 });
    client = await cluster.connect();
    other = await cluster.connect();
    dbName = cluster.dbName('txn');
  });
  afterAll(async () => {
    await other.close();
    await client.close();
    await cluster.close();
  });

  const coll = (name: string, c = client) => c.db(dbName).collection<TestDoc>(name);
  /** Sends a raw command in `session` with an explicit txnNumber (the driver keeps it). */
  const raw = (session: ClientSession, cmd: Document, db = dbName) =>
    client.db(db).command(cmd, { session });

  it('commits: own writes visible inside, nothing outside before the commit', async () => {
    await coll('a').insertOne({ _id: 1, v: 0 });
    const session = client.startSession();
    session.startTransaction();
    await coll('a').insertOne({ _id: 2, v: 0 }, { session });
    await coll('a').updateOne({ _id: 1 }, { $set: { v: 1 } }, { session });
    expect(await coll('a').find({}, { session }).sort({ _id: 1 }).toArray()).toEqual([
      { _id: 1, v: 1 },
      { _id: 2, v: 0 },
    ]);
    expect(await coll('a', other).find().sort({ _id: 1 }).toArray()).toEqual([{ _id: 1, v: 0 }]);
    await session.commitTransaction();
    expect(await coll('a', other).find().sort({ _id: 1 }).toArray()).toEqual([
      { _id: 1, v: 1 },
      { _id: 2, v: 0 },
    ]);
    await session.endSession();
  });

  it('reads a snapshot taken at the first command', async () => {
    await coll('snap').insertOne({ _id: 1, v: 'old' });
    const session = client.startSession();
    session.startTransaction();
    expect(await coll('snap').findOne({ _id: 1 }, { session })).toEqual({ _id: 1, v: 'old' });
    await coll('snap', other).updateOne({ _id: 1 }, { $set: { v: 'new' } });
    await coll('snap', other).insertOne({ _id: 2 });
    expect(await coll('snap').find({}, { session }).toArray()).toEqual([{ _id: 1, v: 'old' }]);
    await session.commitTransaction();
    await session.endSession();
  });

  it('aborts: nothing is written', async () => {
    const session = client.startSession();
    session.startTransaction();
    await coll('ab').insertOne({ _id: 1 }, { session });
    await session.abortTransaction();
    expect(await coll('ab', other).countDocuments()).toBe(0);
    await session.endSession();
  });

  it('fails a write to a document changed since the snapshot with WriteConflict (112)', async () => {
    await coll('wc').insertOne({ _id: 1, v: 0 });
    const session = client.startSession();
    session.startTransaction();
    await coll('wc').findOne({ _id: 1 }, { session });
    await coll('wc', other).updateOne({ _id: 1 }, { $set: { v: 'outside' } });
    const err = await coll('wc')
      .updateOne({ _id: 1 }, { $set: { v: 'txn' } }, { session })
      .catch((e: MongoServerError) => e);
    expect(err).toMatchObject({ code: 112, codeName: 'WriteConflict' });
    expect((err as MongoServerError).hasErrorLabel('TransientTransactionError')).toBe(true);
    // The transaction is aborted: the next statement gets NoSuchTransaction (251).
    await expect(coll('wc').findOne({}, { session })).rejects.toMatchObject({ code: 251 });
    await session.abortTransaction().catch(() => undefined);
    await session.endSession();
    expect(await coll('wc').findOne({ _id: 1 })).toEqual({ _id: 1, v: 'outside' });
  });

  it('fails a write to a document another open transaction wrote with WriteConflict', async () => {
    await coll('wc2').insertOne({ _id: 1, v: 0 });
    const s1 = client.startSession();
    const s2 = client.startSession();
    s1.startTransaction();
    s2.startTransaction();
    await coll('wc2').updateOne({ _id: 1 }, { $set: { v: 1 } }, { session: s1 });
    const err = await coll('wc2')
      .updateOne({ _id: 1 }, { $set: { v: 2 } }, { session: s2 })
      .catch((e: MongoServerError) => e);
    expect(err).toMatchObject({ code: 112 });
    expect((err as MongoServerError).errorLabels).toContain('TransientTransactionError');
    await s1.commitTransaction();
    await s2.abortTransaction().catch(() => undefined);
    expect(await coll('wc2').findOne({ _id: 1 })).toEqual({ _id: 1, v: 1 });
    await s1.endSession();
    await s2.endSession();
  });

  it('answers success to a retried commitTransaction', async () => {
    const session = client.startSession();
    session.startTransaction();
    await coll('retry').insertOne({ _id: 1 }, { session });
    await session.commitTransaction();
    // The driver sends commitTransaction again (same txnNumber): success again, applied once.
    await session.commitTransaction();
    expect(await coll('retry').find().toArray()).toEqual([{ _id: 1 }]);
    await session.endSession();
  });

  it('answers TransactionTooOld (225) and NoSuchTransaction (251) for stale and unknown txnNumbers', async () => {
    // Not causally consistent: the driver would add a readConcern to every raw command.
    const session = client.startSession({ causalConsistency: false });
    const t = (n: number) => Long.fromNumber(n);
    await raw(session, {
      insert: 'raw',
      documents: [{ _id: 1 }],
      txnNumber: t(5),
      startTransaction: true,
      autocommit: false,
    });
    // Continuing the open transaction works.
    await raw(session, { find: 'raw', txnNumber: t(5), autocommit: false });
    await expect(
      raw(session, { find: 'raw', txnNumber: t(4), startTransaction: true, autocommit: false }),
    ).rejects.toMatchObject({ code: 225, codeName: 'TransactionTooOld' });
    const err = await raw(session, { find: 'raw', txnNumber: t(9), autocommit: false }).catch(
      (e: MongoServerError) => e,
    );
    expect(err).toMatchObject({ code: 251, codeName: 'NoSuchTransaction' });
    expect((err as MongoServerError).errorLabels).toContain('TransientTransactionError');
    // Starting a newer transaction aborts the open one: its write never lands.
    await raw(session, {
      find: 'raw',
      txnNumber: t(10),
      startTransaction: true,
      autocommit: false,
    });
    await expect(
      raw(session, { find: 'raw', txnNumber: t(5), autocommit: false }),
    ).rejects.toMatchObject({ code: 225 });
    expect(await coll('raw', other).countDocuments()).toBe(0);
    // The server forgets the session (the driver pools it, with a lower txnNumber of its own).
    await client.db('admin').command({ endSessions: [session.id] });
    await session.endSession();
  });

  it('refuses commands that cannot run in a transaction (263)', async () => {
    const session = client.startSession();
    session.startTransaction();
    await expect(coll('a').countDocuments({}, { session })).resolves.toBeGreaterThan(0);
    await expect(client.db(dbName).command({ dbStats: 1 }, { session })).rejects.toMatchObject({
      code: 263,
    });
    await session.abortTransaction().catch(() => undefined);
    await session.endSession();
  });

  it('aborts the open transaction when its session ends', async () => {
    const session = client.startSession();
    session.startTransaction();
    await coll('ended').insertOne({ _id: 1 }, { session });
    await client.db('admin').command({ endSessions: [session.id] });
    await expect(session.commitTransaction()).rejects.toMatchObject({ code: 251 });
    expect(await coll('ended').countDocuments()).toBe(0);
    await session.endSession().catch(() => undefined);
  });

  emulatorOnly('transactionLifetimeLimitSeconds set at launch')(
    'aborts a transaction older than transactionLifetimeLimitSeconds',
    async () => {
      const session = client.startSession();
      session.startTransaction();
      await coll('life').insertOne({ _id: 1 }, { session });
      await new Promise((r) => setTimeout(r, 6000));
      await expect(session.commitTransaction()).rejects.toMatchObject({ code: 251 });
      expect(await coll('life').countDocuments()).toBe(0);
      await session.endSession();
    },
    15_000,
  );

  it('writes one applyOps oplog entry at commit', async () => {
    // Created beforehand: a collection the transaction creates adds a `c` op to its applyOps.
    await client.db(dbName).createCollection('op');
    const session = client.startSession();
    session.startTransaction();
    await coll('op').insertOne({ _id: 1, x: 1 }, { session });
    await coll('op').deleteOne({ _id: 1 }, { session });
    await session.commitTransaction();
    const [entry] = await client
      .db('local')
      .collection('oplog.rs')
      .find({ op: 'c', ns: 'admin.$cmd', 'o.applyOps.ns': `${dbName}.op` })
      .sort({ $natural: -1 })
      .limit(1)
      .toArray();
    expect(entry.o.applyOps.map((o: Document) => o.op)).toEqual(['i', 'd']);
    expect(entry.o.applyOps[0].o).toEqual({ _id: 1, x: 1 });
    expect(entry.o.partialTxn).toBeUndefined();
    expect(entry.lsid.id.toString('hex')).toBe(session.id!.id.toString('hex'));
    expect(typeof entry.txnNumber).toBe('number');
    expect(entry.prevOpTime.t).toBe(-1);
    await session.endSession();
  });

  it('reports one event per operation at the commit time, resumable inside the transaction', async () => {
    const stream = coll('cs').watch();
    await stream.tryNext(); // opens the stream
    const session = client.startSession();
    session.startTransaction();
    await coll('cs').insertMany([{ _id: 1 }, { _id: 2 }], { session });
    await coll('cs').updateOne({ _id: 1 }, { $set: { a: 1 } }, { session });
    expect(await stream.tryNext()).toBeNull();
    await session.commitTransaction();
    const events: Document[] = [];
    while (events.length < 3) {
      const e = await stream.tryNext();
      if (e) events.push(e);
    }
    await stream.close();
    expect(events.map((e) => e.operationType)).toEqual(['insert', 'insert', 'update']);
    for (const e of events) {
      expect(e.clusterTime).toEqual(events[0].clusterTime);
      expect(e.txnNumber).toBe(events[0].txnNumber);
      expect(typeof e.txnNumber).toBe('number');
      expect(e.lsid.id.toString('hex')).toBe(session.id!.id.toString('hex'));
    }
    expect(Object.keys(events[0]).slice(0, 3)).toEqual(['txnNumber', 'lsid', '_id']);
    // Resuming after the first event returns the other two.
    const resumed = coll('cs').watch([], { resumeAfter: events[0]._id });
    const rest: Document[] = [];
    while (rest.length < 2) {
      const e = await resumed.tryNext();
      if (e) rest.push(e);
    }
    expect(rest.map((e) => e._id)).toEqual([events[1]._id, events[2]._id]);
    await resumed.close();
    await session.endSession();
  });

  it('reports nothing for an aborted transaction', async () => {
    const stream = coll('csa').watch();
    await stream.tryNext();
    const session = client.startSession();
    session.startTransaction();
    await coll('csa').insertOne({ _id: 1 }, { session });
    await session.abortTransaction();
    await coll('csa').insertOne({ _id: 'after' });
    let e: Document | null = null;
    while (!e) e = await stream.tryNext();
    expect(e.documentKey).toEqual({ _id: 'after' });
    await stream.close();
    await session.endSession();
  });
});

describe('large transactions (partialTxn chain)', () => {
  let cluster: TestCluster;
  let client: MongoClient;

  beforeAll(async () => {
    cluster = await TestCluster.start({ maxTransactionOpsPerOplogEntry: 2 });
    client = await cluster.connect();
  });
  afterAll(async () => {
    await client.close();
    await cluster.close();
  });

  emulatorOnly('maxTransactionOpsPerOplogEntry set at launch')(
    'chains partialTxn entries by prevOpTime and reports every operation once, at the commit',
    async () => {
      const coll = await client.db('big').createCollection<TestDoc>('c');
      const stream = coll.watch();
      await stream.tryNext();
      const session = client.startSession();
      session.startTransaction();
      await coll.insertMany(
        [1, 2, 3, 4, 5].map((i) => ({ _id: i })),
        { session },
      );
      await session.commitTransaction();
      const entries = await client
        .db('local')
        .collection('oplog.rs')
        .find({ op: 'c', ns: 'admin.$cmd' })
        .toArray();
      expect(entries.map((e) => e.o.applyOps.length)).toEqual([2, 2, 1]);
      expect(entries.map((e) => e.o.partialTxn)).toEqual([true, true, undefined]);
      expect(entries[2].o.count).toBe(5);
      expect(entries[1].prevOpTime.ts).toEqual(entries[0].ts);
      expect(entries[2].prevOpTime.ts).toEqual(entries[1].ts);
      const events: Document[] = [];
      while (events.length < 5) {
        const e = await stream.tryNext();
        if (e) events.push(e);
      }
      expect(events.map((e) => e.documentKey._id)).toEqual([1, 2, 3, 4, 5]);
      for (const e of events) expect(e.clusterTime).toEqual(entries[2].ts);
      // Resuming after the 3rd event (inside the second partial entry) returns 4 and 5.
      const resumed = coll.watch([], { resumeAfter: events[2]._id });
      const rest: Document[] = [];
      while (rest.length < 2) {
        const e = await resumed.tryNext();
        if (e) rest.push(e);
      }
      expect(rest.map((e) => e.documentKey._id)).toEqual([4, 5]);
      await resumed.close();
      await stream.close();
      await session.endSession();
    },
  );
});
