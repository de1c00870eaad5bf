import {
  type ChangeStream,
  type Collection,
  type Db,
  type Document,
  type MongoClient,
  type Timestamp,
} from 'mongodb';
import { TestCluster } from './helpers/cluster';
import { describeEmulatorOnly } from './helpers/real-server';

interface TestDoc {
  _id: number | string;
  [key: string]: unknown;
}

const suite = describeEmulatorOnly("the disableSnapshotting fail point and the emulator's oplog");

/**
 * mongod's `disableSnapshotting` fail point: while it is on, the majority-committed snapshot
 * stays where it was (ReplicationCoordinatorImpl::_updateCommittedSnapshot returns early), so
 * readConcern majority reads and change streams do not see newer writes, and w:"majority"
 * writes wait (_doneWaitingForReplication_inlock waits for the committed snapshot).
 */
suite('disableSnapshotting: a lagging majority commit point', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let db: Db;
  let coll: Collection<TestDoc>;

  const admin = () => client.db('admin');
  const failPoint = (mode: unknown) =>
    admin().command({ configureFailPoint: 'disableSnapshotting', mode });
  const w1 = { writeConcern: { w: 1 } };
  const majority = { readConcern: { level: 'majority' as const } };

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect({ retryWrites: false, retryReads: false });
  });
  afterEach(async () => {
    await failPoint('off');
    // The snapshot moves again with the next oplog entry.
    await admin().command({ appendOplogNote: 1, data: { msg: 'release' } });
  });
  afterAll(() => cluster.close());
  beforeEach(async () => {
    db = client.db(`maj_${Math.random().toString(36).slice(2, 8)}`);
    coll = db.collection<TestDoc>('c');
    await coll.insertMany([
      { _id: 1, v: 'old' },
      { _id: 2, v: 'old' },
      { _id: 3, v: 'old' },
    ]);
  });

  it("an aggregate's $unionWith and $lookup read other collections at the majority snapshot too", async () => {
    const other = db.collection<TestDoc>('other');
    await other.insertMany([
      { _id: 1, o: 'old' },
      { _id: 2, o: 'old' },
    ]);
    await failPoint('alwaysOn');
    await other.insertOne({ _id: 3, o: 'new' }, w1);
    await other.updateOne({ _id: 1 }, { $set: { o: 'new' } }, w1);
    await other.deleteOne({ _id: 2 }, w1);
    const union = (options: Document) =>
      coll
        .aggregate(
          [
            { $match: { _id: 1 } },
            { $unionWith: { coll: 'other', pipeline: [{ $sort: { _id: 1 } }] } },
          ],
          options,
        )
        .toArray();
    expect(await union(majority)).toEqual([
      { _id: 1, v: 'old' },
      { _id: 1, o: 'old' },
      { _id: 2, o: 'old' },
    ]);
    expect(await union({})).toEqual([
      { _id: 1, v: 'old' },
      { _id: 1, o: 'new' },
      { _id: 3, o: 'new' },
    ]);
    const joined = await coll
      .aggregate(
        [
          { $match: { _id: { $lte: 2 } } },
          { $lookup: { from: 'other', localField: '_id', foreignField: '_id', as: 'o' } },
          { $sort: { _id: 1 } },
        ],
        majority,
      )
      .toArray();
    expect(joined).toEqual([
      { _id: 1, v: 'old', o: [{ _id: 1, o: 'old' }] },
      { _id: 2, v: 'old', o: [{ _id: 2, o: 'old' }] },
    ]);
  });

  it('majority reads keep seeing the snapshot taken before the fail point', async () => {
    await failPoint('alwaysOn');
    await coll.insertOne({ _id: 4, v: 'new' }, w1);
    await coll.updateOne({ _id: 1 }, { $set: { v: 'new' } }, w1);
    await coll.deleteOne({ _id: 2 }, w1);
    await coll.replaceOne({ _id: 3 }, { w: 'replaced' }, w1);

    const local = await coll.find({}).sort({ _id: 1 }).toArray();
    expect(local).toEqual([
      { _id: 1, v: 'new' },
      { _id: 3, w: 'replaced' },
      { _id: 4, v: 'new' },
    ]);
    const snapshot = [
      { _id: 1, v: 'old' },
      { _id: 2, v: 'old' },
      { _id: 3, v: 'old' },
    ];
    // Natural order included: the deleted document is back in its place.
    expect(await coll.find({}, majority).toArray()).toEqual(snapshot);
    expect(
      await coll
        .find({ v: 'old' }, { ...majority, projection: { _id: 1 } })
        .sort({ _id: 1 })
        .toArray(),
    ).toEqual([{ _id: 1 }, { _id: 2 }, { _id: 3 }]);
    expect(await coll.countDocuments({}, majority)).toBe(3);
    expect(await coll.distinct('v', {}, majority)).toEqual(['old']);
    expect(
      await coll
        .aggregate([{ $match: { _id: { $lte: 2 } } }, { $sort: { _id: -1 } }], majority)
        .toArray(),
    ).toEqual([
      { _id: 2, v: 'old' },
      { _id: 1, v: 'old' },
    ]);
    // A collection created after the snapshot is empty at the snapshot.
    await db.collection<TestDoc>('later').insertOne({ _id: 1 }, w1);
    expect(await db.collection<TestDoc>('later').find({}, majority).toArray()).toEqual([]);

    // replSetGetStatus: the commit point moves on, the majority read point does not.
    const status = await admin().command({ replSetGetStatus: 1 });
    const committed = status.optimes.lastCommittedOpTime.ts as Timestamp;
    const readable = status.optimes.readConcernMajorityOpTime.ts as Timestamp;
    expect(readable.lessThan(committed)).toBe(true);

    // The read reports the snapshot's time as its operationTime.
    const reply = await db.command({ find: 'c', readConcern: { level: 'majority' } });
    expect((reply.operationTime as Timestamp).equals(readable)).toBe(true);

    // Once the fail point is off, the next oplog entry moves the snapshot forward.
    await failPoint('off');
    expect(await coll.countDocuments({}, majority)).toBe(3);
    await admin().command({ appendOplogNote: 1, data: { msg: 'tick' } });
    expect(await coll.find({}, majority).sort({ _id: 1 }).toArray()).toEqual(local);
  });

  it('change streams return only majority-committed events', async () => {
    const stream: ChangeStream = coll.watch([], { maxAwaitTimeMS: 100 });
    expect(await stream.tryNext()).toBeNull();
    await failPoint('alwaysOn');
    await coll.insertOne({ _id: 10 }, w1);
    for (let i = 0; i < 3; i++) expect(await stream.tryNext()).toBeNull();
    await failPoint('off');
    await coll.insertOne({ _id: 11 }, w1);
    const ids: unknown[] = [];
    for (let i = 0; i < 20 && ids.length < 2; i++) {
      const e = await stream.tryNext();
      if (e && e.operationType === 'insert') ids.push(e.documentKey._id);
    }
    expect(ids).toEqual([10, 11]);
    await stream.close();
  });

  it('w:"majority" writes wait for the snapshot: wtimeout gives writeConcernError 64', async () => {
    await failPoint('alwaysOn');
    const started = Date.now();
    // The driver turns a writeConcernError into a MongoWriteConcernError carrying the reply.
    const err = await db
      .command({
        insert: 'c',
        documents: [{ _id: 20 }],
        writeConcern: { w: 'majority', wtimeout: 200 },
      })
      .catch((e: unknown) => e);
    expect(Date.now() - started).toBeGreaterThanOrEqual(180);
    expect(err).toMatchObject({ name: 'MongoWriteConcernError', code: 64 });
    expect((err as { result: Document }).result).toMatchObject({
      n: 1,
      ok: 1,
      writeConcernError: {
        code: 64,
        codeName: 'WriteConcernFailed',
        errmsg: 'waiting for replication timed out',
        errInfo: {
          wtimeout: true,
          writeConcern: { w: 'majority', wtimeout: 200, provenance: 'clientSupplied' },
        },
      },
    });
    // The write itself is applied.
    expect(await coll.findOne({ _id: 20 })).toEqual({ _id: 20 });
    // w:1 does not wait.
    const w1Reply = await db.command({
      insert: 'c',
      documents: [{ _id: 21 }],
      writeConcern: { w: 1 },
    });
    expect(w1Reply.writeConcernError).toBeUndefined();
  });

  it('a write with the implicit default write concern (majority) blocks until the snapshot moves', async () => {
    await failPoint('alwaysOn');
    let done = false;
    const pending = coll.insertOne({ _id: 30 }).then((r) => {
      done = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(done).toBe(false);
    await failPoint('off');
    await admin().command({ appendOplogNote: 1, data: { msg: 'tick' } });
    await expect(pending).resolves.toMatchObject({ acknowledged: true, insertedId: 30 });
  });

  it('a majority read after a later cluster time waits for the snapshot, up to maxTimeMS', async () => {
    await failPoint('alwaysOn');
    const write = await db.command({
      insert: 'c',
      documents: [{ _id: 40 }],
      writeConcern: { w: 1 },
    });
    const err = await db
      .command({
        find: 'c',
        readConcern: { level: 'majority', afterClusterTime: write.operationTime },
        maxTimeMS: 200,
      })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 50, codeName: 'MaxTimeMSExpired' });

    // Without maxTimeMS it waits until the snapshot reaches the time.
    const read = db.command({
      find: 'c',
      filter: { _id: 40 },
      readConcern: { level: 'majority', afterClusterTime: write.operationTime },
    });
    await new Promise((r) => setTimeout(r, 100));
    await failPoint('off');
    await admin().command({ appendOplogNote: 1, data: { msg: 'tick' } });
    expect((await read).cursor.firstBatch).toEqual([{ _id: 40 }]);
  });

  it('honours {times: n}: the snapshot stays for n oplog entries', async () => {
    await failPoint({ times: 2 });
    await coll.insertOne({ _id: 50 }, w1);
    await coll.insertOne({ _id: 51 }, w1);
    expect(await coll.countDocuments({}, majority)).toBe(3);
    await coll.insertOne({ _id: 52 }, w1);
    expect(await coll.countDocuments({}, majority)).toBe(6);
  });
});
