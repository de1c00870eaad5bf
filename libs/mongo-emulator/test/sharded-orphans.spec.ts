import { Long, MongoClient, type Document } from 'mongodb';
import { startShardedCluster, type EmulatedShardedCluster } from '../src';
import { describeEmulatorOnly } from './helpers/real-server';

const suite = describeEmulatorOnly(
  'an emulated sharded cluster; no real sharded cluster is wired into these specs',
);

type Doc = { _id: number; x: number; g?: string };

/**
 * Orphans (documents a shard holds outside the chunks it owns) are filtered by the shards for
 * reads a router sends (mongod's shard filtering); a client connected to the shard sees them.
 */
suite('sharded topology: routers never return orphans', () => {
  let cluster: EmulatedShardedCluster;
  let router: MongoClient;
  const direct: MongoClient[] = [];
  let primary = 0;
  let other = 1;

  beforeAll(async () => {
    cluster = await startShardedCluster({
      name: 'or',
      shards: 2,
      mongos: 1,
      noopIntervalMs: 3_600_000,
    });
    router = new MongoClient(cluster.uri, { serverSelectionTimeoutMS: 5000 });
    await router.connect();
    for (const s of cluster.shards) {
      const c = new MongoClient(s.uri, { serverSelectionTimeoutMS: 5000 });
      await c.connect();
      direct.push(c);
    }
    const admin = router.db('admin');
    await admin.command({ enableSharding: 'odb' });
    await admin.command({ shardCollection: 'odb.c', key: { x: 1 } });
    const entry = await router
      .db('config')
      .collection('databases')
      .findOne({ _id: 'odb' as never });
    primary = cluster.shards.findIndex((s) => s._id === entry!.primary);
    other = 1 - primary;
    await admin.command({ split: 'odb.c', middle: { x: 0 } });
    await admin.command({ moveChunk: 'odb.c', find: { x: 0 }, to: cluster.shards[other]._id });
    // [MinKey, 0) on the primary, [0, MaxKey) on the other shard.
    await router
      .db('odb')
      .collection<Doc>('c')
      .insertMany(
        [-3, -2, -1, 0, 1, 2, 3].map((x) => ({ _id: x + 10, x, g: x < 0 ? 'neg' : 'pos' })),
      );
    // Orphans: each written straight into the shard that does not own its key.
    await direct[other].db('odb').collection<Doc>('c').insertOne({ _id: 100, x: -50, g: 'orphan' });
    await direct[primary]
      .db('odb')
      .collection<Doc>('c')
      .insertOne({ _id: 101, x: 50, g: 'orphan' });
  });

  afterAll(async () => {
    await Promise.all(direct.map((c) => c.close()));
    await router?.close();
    await cluster?.stop();
  });

  const coll = () => router.db('odb').collection<Doc>('c');
  const ids = (docs: Document[]) => docs.map((d) => d._id as number);

  it('the shards hold the orphans (a direct connection sees them)', async () => {
    expect(await direct[other].db('odb').collection('c').countDocuments({ g: 'orphan' })).toBe(1);
    expect(await direct[primary].db('odb').collection('c').countDocuments({ g: 'orphan' })).toBe(1);
  });

  it('find and getMore through the router skip orphans (broadcast, sorted, limited)', async () => {
    expect(ids(await coll().find().sort({ _id: 1 }).toArray())).toEqual([7, 8, 9, 10, 11, 12, 13]);
    expect(ids(await coll().find({ g: 'orphan' }).toArray())).toEqual([]);
    expect(ids(await coll().find({}, { batchSize: 2 }).sort({ x: -1 }).limit(3).toArray())).toEqual(
      [13, 12, 11],
    );
    expect(
      ids(
        await coll()
          .find({ x: { $lt: 0 } })
          .sort({ x: 1 })
          .toArray(),
      ),
    ).toEqual([7, 8, 9]);
    expect(
      ids(
        await coll()
          .find({ x: { $gt: 40 } })
          .toArray(),
      ),
    ).toEqual([]);
  });

  it('targeted reads (shard key equality) skip orphans too', async () => {
    expect(await coll().findOne({ x: -50 })).toBeNull();
    expect(await coll().findOne({ x: 50 })).toBeNull();
    expect(await coll().findOne({ x: 2 })).toEqual({ _id: 12, x: 2, g: 'pos' });
  });

  it('aggregate, countDocuments, count with a predicate and distinct skip orphans', async () => {
    expect(await coll().countDocuments()).toBe(7);
    expect(await coll().countDocuments({ g: 'orphan' })).toBe(0);
    expect(await coll().countDocuments({ x: { $gte: -100 } })).toBe(7);
    const grouped = await coll()
      .aggregate([{ $group: { _id: '$g', n: { $sum: 1 } } }, { $sort: { _id: 1 } }])
      .toArray();
    expect(grouped).toEqual([
      { _id: 'neg', n: 3 },
      { _id: 'pos', n: 4 },
    ]);
    expect(
      ids(
        await coll()
          .aggregate([{ $match: { x: { $in: [-50, 50, 1] } } }])
          .toArray(),
      ),
    ).toEqual([11]);
    const count = await router
      .db('odb')
      .command({ count: 'c', query: { g: { $in: ['orphan', 'pos'] } } });
    expect(count.n).toBe(4);
    expect((await coll().distinct('g')).sort()).toEqual(['neg', 'pos']);
    expect(await coll().distinct('x', { x: { $gt: 2 } })).toEqual([3]);
  });

  it("each shard's serverStatus metrics.document.returned counts what it returned to the router", async () => {
    const returned = async (i: number): Promise<number> => {
      const status = await direct[i]
        .db('admin')
        .command({ serverStatus: 1 }, { promoteLongs: false });
      return (status.metrics.document.returned as Long).toNumber();
    };
    const before = [await returned(0), await returned(1)];
    expect(await coll().find().toArray()).toHaveLength(7);
    // [MinKey, 0): 3 documents on the primary; [0, MaxKey): 4 on the other; orphans stay home.
    expect((await returned(primary)) - before[primary]).toBe(3);
    expect((await returned(other)) - before[other]).toBe(4);
    // A targeted read touches one shard only.
    expect(await coll().findOne({ x: 2 })).not.toBeNull();
    expect((await returned(primary)) - before[primary]).toBe(3);
    expect((await returned(other)) - before[other]).toBe(5);
  });

  it('a count without a predicate is a metadata count, orphans included, as in mongod', async () => {
    // mongod's "fast count" reads collection metadata and is not shard-filtered (SERVER-33753).
    expect(await coll().estimatedDocumentCount()).toBe(9);
  });

  it('a range moved away leaves no visible duplicates, and orphans stay invisible', async () => {
    // Move [0, MaxKey) back to the primary: the primary's old orphan x: 50 becomes owned.
    await router
      .db('admin')
      .command({ moveChunk: 'odb.c', find: { x: 0 }, to: cluster.shards[primary]._id });
    const all = ids(await coll().find().sort({ _id: 1 }).toArray());
    expect(all).toEqual([7, 8, 9, 10, 11, 12, 13, 101]);
    // The other shard's orphan x: -50 is still an orphan there (it owns nothing now).
    expect(await coll().countDocuments({ _id: 100 })).toBe(0);
    await router
      .db('admin')
      .command({ moveChunk: 'odb.c', find: { x: 0 }, to: cluster.shards[other]._id });
  });
});
