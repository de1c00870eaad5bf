/**
 * Distributed transactions through mongos, checked through the driver against the emulated
 * sharded cluster — or, with `EMULATOR_CONFORMANCE_SHARDED_URI` (a real MongoDB 7.0 sharded
 * cluster's mongos, at least 2 shards, shards reachable at the hosts listShards reports), against
 * that cluster with the same expectations. Each run works in a database of its own and drops
 * it at the end.
 */
import { randomBytes } from 'node:crypto';
import {
  Long,
  MongoClient,
  MongoServerError,
  type ChangeStream,
  type ChangeStreamDocument,
  type ClientSession,
  type Collection,
  type Document,
  type Timestamp,
} from 'mongodb';
import { startShardedCluster, type EmulatedShardedCluster } from '../src';

const realUri = process.env.EMULATOR_CONFORMANCE_SHARDED_URI?.trim() || undefined;

interface Doc {
  _id: number;
  k: number;
  v?: string;
}

type Event = ChangeStreamDocument<Doc> & {
  lsid?: { id: { toString(enc: string): string } };
  txnNumber?: number;
  clusterTime?: Timestamp;
  documentKey?: Document;
  fullDocument?: Doc;
};

async function next(stream: ChangeStream<Doc>, n: number, waitMs = 5000): Promise<Event[]> {
  const out: Event[] = [];
  const deadline = Date.now() + waitMs;
  while (out.length < n && Date.now() < deadline) {
    const ev = await stream.tryNext();
    if (ev) out.push(ev as Event);
  }
  return out;
}

const hex = (id: unknown) =>
  Buffer.from((id as { buffer: Uint8Array }).buffer ?? (id as Uint8Array)).toString('hex');

describe('sharded topology: distributed transactions through mongos', () => {
  let cluster: EmulatedShardedCluster | undefined;
  let client: MongoClient;
  let noRetry: MongoClient;
  const direct = new Map<string, MongoClient>();
  const dbName = realUri ? `ectx${randomBytes(3).toString('hex')}` : 'txdb';
  let coll: Collection<Doc>;
  /** Shard owning k < 0 and k >= 0. */
  let low: string;
  let high: string;

  beforeAll(async () => {
    let uri = realUri;
    if (!uri) {
      cluster = await startShardedCluster({
        name: 'tx',
        shards: 2,
        mongos: 1,
        noopIntervalMs: 3_600_000,
      });
      uri = cluster.uri;
    }
    client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });
    noRetry = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, retryWrites: false });
    await Promise.all([client.connect(), noRetry.connect()]);
    const shards = (await client.db('admin').command({ listShards: 1 })).shards as Document[];
    for (const s of shards.slice(0, 2)) {
      const [rs, hosts] = String(s.host).split('/');
      const c = new MongoClient(`mongodb://${hosts}/?replicaSet=${rs}`, {
        serverSelectionTimeoutMS: 5000,
      });
      await c.connect();
      direct.set(String(s._id), c);
    }
    [low, high] = [...direct.keys()];
    const admin = client.db('admin');
    await admin.command({ enableSharding: dbName });
    await admin.command({ shardCollection: `${dbName}.c`, key: { k: 1 } });
    await admin.command({ split: `${dbName}.c`, middle: { k: 0 } });
    const ns = `${dbName}.c`;
    const uuid = (
      await client
        .db('config')
        .collection('collections')
        .findOne({ _id: ns as never })
    )?.uuid;
    for (const [k, to] of [
      [-1, low],
      [1, high],
    ] as const) {
      const chunk = await client
        .db('config')
        .collection('chunks')
        .findOne({ uuid, 'min.k': k < 0 ? { $lt: 0 } : 0 });
      if (chunk?.shard !== to) await admin.command({ moveChunk: ns, find: { k }, to });
    }
    coll = client.db(dbName).collection<Doc>('c');
  });

  afterAll(async () => {
    await client
      ?.db(dbName)
      .dropDatabase()
      .catch(() => undefined);
    await client?.close();
    await noRetry?.close();
    await Promise.all([...direct.values()].map((c) => c.close()));
    await cluster?.stop();
  });

  const on = (shard: string) => direct.get(shard)!.db(dbName).collection<Doc>('c');
  const oplogOf = (shard: string, filter: Document) =>
    direct
      .get(shard)!
      .db('local')
      .collection('oplog.rs')
      .find(filter)
      .sort({ $natural: 1 })
      .toArray();

  async function watchAll(): Promise<{
    merged: ChangeStream<Doc>;
    lowStream: ChangeStream<Doc>;
    highStream: ChangeStream<Doc>;
    close(): Promise<void>;
  }> {
    const merged = coll.watch<Doc>([], { maxAwaitTimeMS: 50 });
    const lowStream = on(low).watch<Doc>([], { maxAwaitTimeMS: 50 });
    const highStream = on(high).watch<Doc>([], { maxAwaitTimeMS: 50 });
    await Promise.all([merged.tryNext(), lowStream.tryNext(), highStream.tryNext()]);
    return {
      merged,
      lowStream,
      highStream,
      close: async () => {
        await Promise.all([merged.close(), lowStream.close(), highStream.close()]);
      },
    };
  }

  /** An event of the session's latest transaction (pooled server sessions keep counting). */
  function expectTxnEvent(ev: Event, session: ClientSession): void {
    expect(hex(ev.lsid?.id)).toBe(hex(session.id!.id));
    expect(Number(ev.txnNumber)).toBe(session.serverSession.txnNumber);
    expect(Object.keys(ev).slice(0, 2)).toEqual(['txnNumber', 'lsid']);
  }

  it('commits a transaction writing on two shards with two-phase commit, seen only after the commit', async () => {
    const streams = await watchAll();
    const session = client.startSession();
    try {
      session.startTransaction({ readConcern: { level: 'snapshot' } });
      await coll.insertOne({ _id: 1, k: -5, v: 'a' }, { session });
      await coll.insertOne({ _id: 2, k: 5, v: 'b' }, { session });
      // Its own writes are visible inside; nothing is visible outside before the commit.
      expect(await coll.find({}, { session }).sort({ _id: 1 }).toArray()).toEqual([
        { _id: 1, k: -5, v: 'a' },
        { _id: 2, k: 5, v: 'b' },
      ]);
      expect(await coll.find({ _id: { $in: [1, 2] } }).toArray()).toEqual([]);
      expect(await next(streams.merged, 1, 300)).toEqual([]);
      expect(await next(streams.lowStream, 1, 100)).toEqual([]);
      await session.commitTransaction();
      // A retried commit of a committed transaction succeeds again.
      await session.commitTransaction();

      expect(await on(low).find().toArray()).toEqual([{ _id: 1, k: -5, v: 'a' }]);
      expect(await on(high).find().toArray()).toEqual([{ _id: 2, k: 5, v: 'b' }]);

      const merged = await next(streams.merged, 2);
      expect(merged.map((e) => [e.operationType, e.documentKey, e.fullDocument])).toEqual(
        expect.arrayContaining([
          ['insert', { k: -5, _id: 1 }, { _id: 1, k: -5, v: 'a' }],
          ['insert', { k: 5, _id: 2 }, { _id: 2, k: 5, v: 'b' }],
        ]),
      );
      expect(merged).toHaveLength(2);
      const lowEvents = await next(streams.lowStream, 1);
      const highEvents = await next(streams.highStream, 1);
      expect(lowEvents.map((e) => e.documentKey)).toEqual([{ k: -5, _id: 1 }]);
      expect(highEvents.map((e) => e.documentKey)).toEqual([{ k: 5, _id: 2 }]);
      const all = [...merged, ...lowEvents, ...highEvents];
      const clusterTime = merged[0].clusterTime!;
      for (const ev of all) {
        expectTxnEvent(ev, session);
        expect(ev.clusterTime).toEqual(clusterTime);
      }

      // Each shard: a prepare entry (applyOps, prepare: true) then a commitTransaction entry at
      // the events' time, whose commitTimestamp is not before any prepare.
      const prepares: Timestamp[] = [];
      for (const shard of [low, high]) {
        const entries = await oplogOf(shard, {
          'lsid.id': session.id!.id,
          txnNumber: Long.fromNumber(session.serverSession.txnNumber),
        });
        expect(entries.map((e) => [e.op, e.ns, Object.keys(e.o as Document)])).toEqual([
          ['c', 'admin.$cmd', ['applyOps', 'prepare']],
          ['c', 'admin.$cmd', ['commitTransaction', 'commitTimestamp']],
        ]);
        expect((entries[0].o as Document).prepare).toBe(true);
        expect((entries[0].o as Document).applyOps).toHaveLength(1);
        expect(entries[1].ts).toEqual(clusterTime);
        expect(entries[1].prevOpTime.ts).toEqual(entries[0].ts);
        prepares.push(entries[0].ts as Timestamp);
      }
      const commitTimestamp = (
        (
          await oplogOf(low, {
            'lsid.id': session.id!.id,
            txnNumber: Long.fromNumber(session.serverSession.txnNumber),
            'o.commitTransaction': 1,
          })
        )[0].o as Document
      ).commitTimestamp as Timestamp;
      for (const p of prepares) expect(commitTimestamp.compare(p)).toBeGreaterThanOrEqual(0);
    } finally {
      await session.endSession();
      await streams.close();
    }
  });

  it('commits a single write shard directly: one applyOps entry, no prepare', async () => {
    const session = client.startSession();
    try {
      await session.withTransaction(async () => {
        await coll.insertOne({ _id: 3, k: -3 }, { session });
        await coll.insertOne({ _id: 4, k: -4 }, { session });
      });
      const mine = {
        'lsid.id': session.id!.id,
        txnNumber: Long.fromNumber(session.serverSession.txnNumber),
      };
      const entries = await oplogOf(low, mine);
      expect(entries.map((e) => [e.op, Object.keys(e.o as Document)])).toEqual([
        ['c', ['applyOps']],
      ]);
      expect((entries[0].o as Document).applyOps).toHaveLength(2);
      expect(await oplogOf(high, mine)).toEqual([]);
    } finally {
      await session.endSession();
    }
  });

  it('leaves nothing and reports nothing for an aborted transaction', async () => {
    const streams = await watchAll();
    const session = client.startSession();
    try {
      session.startTransaction({ readConcern: { level: 'snapshot' } });
      await coll.insertOne({ _id: 20, k: -20 }, { session });
      await coll.insertOne({ _id: 21, k: 21 }, { session });
      await session.abortTransaction();
      expect(await coll.find({ _id: { $in: [20, 21] } }).toArray()).toEqual([]);
      expect(await on(low).findOne({ _id: 20 })).toBeNull();
      expect(await on(high).findOne({ _id: 21 })).toBeNull();
      // The next events of every stream are a later write's, not the aborted transaction's.
      await coll.insertOne({ _id: 22, k: 22 });
      await coll.insertOne({ _id: 23, k: -23 });
      expect((await next(streams.merged, 2)).map((e) => e.documentKey)).toEqual([
        { k: 22, _id: 22 },
        { k: -23, _id: 23 },
      ]);
      expect((await next(streams.highStream, 1)).map((e) => e.documentKey)).toEqual([
        { k: 22, _id: 22 },
      ]);
      expect((await next(streams.lowStream, 1)).map((e) => e.documentKey)).toEqual([
        { k: -23, _id: 23 },
      ]);
      // Nothing of it in any shard's oplog either (it was never prepared).
      for (const shard of [low, high])
        expect(await oplogOf(shard, { 'o.applyOps.o._id': { $in: [20, 21] } })).toEqual([]);
    } finally {
      await session.endSession();
      await streams.close();
    }
  });

  it('fails the second of two conflicting transactions with WriteConflict, then NoSuchTransaction', async () => {
    await coll.insertOne({ _id: 30, k: 30, v: 'start' });
    const s1 = client.startSession();
    const s2 = client.startSession();
    try {
      s1.startTransaction();
      s2.startTransaction();
      await coll.updateOne({ _id: 30, k: 30 }, { $set: { v: 's1' } }, { session: s1 });
      const err = await coll
        .updateOne({ _id: 30, k: 30 }, { $set: { v: 's2' } }, { session: s2 })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MongoServerError);
      expect((err as MongoServerError).code).toBe(112);
      expect((err as MongoServerError).hasErrorLabel('TransientTransactionError')).toBe(true);
      const after = await coll
        .insertOne({ _id: 31, k: -31 }, { session: s2 })
        .catch((e: unknown) => e);
      expect((after as MongoServerError).code).toBe(251);
      expect((after as MongoServerError).hasErrorLabel('TransientTransactionError')).toBe(true);
      await s2.abortTransaction();
      await s1.commitTransaction();
      expect(await coll.find({ _id: { $in: [30, 31] } }).toArray()).toEqual([
        { _id: 30, k: 30, v: 's1' },
      ]);
    } finally {
      await s1.endSession();
      await s2.endSession();
    }
  });

  it('reads at one snapshot on every shard, taken at the first statement', async () => {
    await coll.insertMany([
      { _id: 40, k: -40 },
      { _id: 41, k: 41 },
    ]);
    const session = client.startSession();
    try {
      session.startTransaction({ readConcern: { level: 'snapshot' } });
      // The first statement reads the low shard only.
      expect(await coll.findOne({ k: -40 }, { session })).toEqual({ _id: 40, k: -40 });
      // Written after the transaction's read timestamp, on the shard it has not read yet.
      await coll.insertOne({ _id: 42, k: 42 });
      await coll.updateOne({ _id: 41, k: 41 }, { $set: { v: 'later' } });
      expect(await coll.find({ k: { $gte: 41, $lte: 42 } }, { session }).toArray()).toEqual([
        { _id: 41, k: 41 },
      ]);
      await session.commitTransaction();
    } finally {
      await session.endSession();
    }
  });

  it('moves a document to another shard when a transaction changes its shard key', async () => {
    await coll.insertOne({ _id: 50, k: -50, v: 'x' });
    const streams = await watchAll();
    const session = client.startSession();
    try {
      await session.withTransaction(async () => {
        const res = await coll.updateOne({ _id: 50, k: -50 }, { $set: { k: 50 } }, { session });
        expect(res.modifiedCount).toBe(1);
        expect(await coll.findOne({ _id: 50 }, { session })).toEqual({ _id: 50, k: 50, v: 'x' });
      });
      expect(await on(low).findOne({ _id: 50 })).toBeNull();
      expect(await on(high).findOne({ _id: 50 })).toEqual({ _id: 50, k: 50, v: 'x' });
      const events = await next(streams.merged, 2);
      expect(events.map((e) => [e.operationType, e.documentKey])).toEqual(
        expect.arrayContaining([
          ['delete', { k: -50, _id: 50 }],
          ['insert', { k: 50, _id: 50 }],
        ]),
      );
      expect(events).toHaveLength(2);
      for (const ev of events) expectTxnEvent(ev, session);
      expect(events[0].clusterTime).toEqual(events[1].clusterTime);
    } finally {
      await session.endSession();
      await streams.close();
    }
  });

  it('moves a document the transaction itself wrote when it changes its shard key', async () => {
    const session = client.startSession();
    try {
      await session.withTransaction(async () => {
        await coll.insertOne({ _id: 55, k: -55 }, { session });
        await coll.updateOne({ _id: 55, k: -55 }, { $set: { k: 55, v: 'moved' } }, { session });
      });
      expect(await on(low).findOne({ _id: 55 })).toBeNull();
      expect(await on(high).findOne({ _id: 55 })).toEqual({ _id: 55, k: 55, v: 'moved' });
    } finally {
      await session.endSession();
    }
  });

  it('moves a document to another shard for a retryable write, and refuses it otherwise', async () => {
    await coll.insertMany([
      { _id: 60, k: -60 },
      { _id: 61, k: -61 },
    ]);
    const res = await coll.updateOne({ _id: 60, k: -60 }, { $set: { k: 60 } });
    expect(res.modifiedCount).toBe(1);
    expect(await on(low).findOne({ _id: 60 })).toBeNull();
    expect(await on(high).findOne({ _id: 60 })).toEqual({ _id: 60, k: 60 });

    const err = await noRetry
      .db(dbName)
      .collection<Doc>('c')
      .updateOne({ _id: 61, k: -61 }, { $set: { k: 61 } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MongoServerError);
    expect((err as MongoServerError).code).toBe(20);
    expect((err as MongoServerError).message).toContain(
      'Must run update to shard key field in a multi-statement transaction or with retryWrites: true.',
    );
    expect(await on(low).findOne({ _id: 61 })).toEqual({ _id: 61, k: -61 });
  });

  it('resumes the merged stream from a token inside a transaction: the rest, exactly once', async () => {
    const merged = coll.watch<Doc>([], { maxAwaitTimeMS: 50 });
    await merged.tryNext();
    const session = client.startSession();
    try {
      await session.withTransaction(
        async () => {
          await coll.insertMany(
            [
              { _id: 70, k: -70 },
              { _id: 71, k: 71 },
              { _id: 72, k: -72 },
              { _id: 73, k: 73 },
            ],
            { session },
          );
        },
        { readConcern: { level: 'snapshot' } },
      );
      const events = await next(merged, 4);
      expect(events.map((e) => (e.documentKey as Document)._id).sort()).toEqual([70, 71, 72, 73]);
      const times = new Set(events.map((e) => e.clusterTime!.toString()));
      expect(times.size).toBe(1);
      await coll.insertOne({ _id: 74, k: 74 });
      const resumed = coll.watch<Doc>([], { maxAwaitTimeMS: 50, resumeAfter: events[1]._id });
      try {
        const rest = await next(resumed, 3);
        expect(rest.map((e) => (e.documentKey as Document)._id)).toEqual([
          (events[2].documentKey as Document)._id,
          (events[3].documentKey as Document)._id,
          74,
        ]);
        expect(await next(resumed, 1, 300)).toEqual([]);
      } finally {
        await resumed.close();
      }
    } finally {
      await session.endSession();
      await merged.close();
    }
  });
});
