import { ChangeApplier } from '@sync/engine/apply';
import {
  CatalogEventRouter,
  JobSession,
  silentLogger,
  systemClock,
  type JobRecord,
} from '@sync/engine';
import { MongoClusterDirectory } from '@sync/mongo/mongo-cluster-directory';
import { MongoChangeFeed } from '@sync/mongo/change-feed';
import { MongoChangeWriter } from '@sync/mongo/change-writer';
import { MongoCheckpointStore } from '@sync/mongo/change-checkpoint-store';
import { MongoDocumentLookup } from '@sync/mongo/change-lookup';
import { EXACT_BSON } from '@sync/mongo/exact-bson';
import { BSON, Decimal128, Double, Int32, Long, type Document, type Timestamp } from 'bson';
import { MongoClient } from 'mongodb';
import { startTestCluster, type TestCluster } from '../helpers/clusters';
import { describeOn, testDb, testNs } from '../helpers/real-clusters';

/** Test documents with any `_id` type. */
type AnyDoc = { _id: unknown } & Document;

/** Latest cluster time of a deployment (what the commit point is read as). */
async function clusterTime(client: MongoClient): Promise<Timestamp> {
  const reply = await client.db('admin').command({ ping: 1 });
  return (reply.operationTime ?? reply.$clusterTime?.clusterTime) as Timestamp;
}

async function dump(client: MongoClient, db: string, coll: string): Promise<string[]> {
  const docs = await client.db(db).collection(coll).find({}, EXACT_BSON).sort({ _id: 1 }).toArray();
  return docs.map((d: Document) => Buffer.from(BSON.serialize(d)).toString('hex'));
}

describeOn('replicaSets')('change application against replica sets', () => {
  let source: TestCluster;
  let destination: TestCluster;
  let src: MongoClient;
  let dst: MongoClient;

  beforeAll(async () => {
    source = await startTestCluster('source', { kind: 'replicaSet' });
    destination = await startTestCluster('destination', { kind: 'replicaSet' });
    src = await new MongoClient(source.uri).connect();
    dst = await new MongoClient(destination.uri).connect();
  });

  afterAll(async () => {
    await src?.close();
    await dst?.close();
    await source?.stop();
    await destination?.stop();
  });

  it('replays CRUD and DDL from T0 so the destination equals the source byte for byte', async () => {
    const t0 = await clusterTime(src);
    const db = src.db(testDb('shop'));
    const c = db.collection<AnyDoc>('items');
    await db.createCollection('items');
    await c.createIndex({ sku: 1 }, { unique: true, name: 'sku_1' });
    await c.insertMany([
      { _id: new Int32(1), sku: 'a', n: new Int32(1), l: Long.fromNumber(5), d: new Double(1.5) },
      { _id: new Int32(2), sku: 'b', nested: { x: new Int32(1), y: 'keep' }, arr: [1, 2, 3, 4, 5] },
      { _id: new Int32(3), sku: 'c', dec: Decimal128.fromString('1.10'), tags: ['x', 'y', 'z'] },
      { _id: new Int32(4), sku: 'd' },
    ]);
    await c.updateOne(
      { _id: new Int32(1) },
      { $inc: { n: new Int32(2), l: Long.fromNumber(1), d: new Double(0.25) } },
    );
    await c.updateOne(
      { _id: new Int32(2) },
      { $set: { 'nested.x': new Int32(9), 'nested.z': true }, $unset: { 'nested.y': '' } },
    );
    await c.updateOne({ _id: new Int32(2) }, [{ $set: { arr: { $slice: ['$arr', 2] } } }]);
    await c.updateOne({ _id: new Int32(3) }, {
      $inc: { dec: Decimal128.fromString('0.01') },
      $push: { tags: 'w' },
    } as Document);
    await c.updateOne({ _id: new Int32(3) }, { $pull: { tags: 'x' } } as Document);
    await c.updateOne({ _id: new Int32(3) }, { $pop: { tags: 1 } });
    await c.replaceOne({ _id: new Int32(4) }, { sku: 'd2', replaced: true });
    await c.deleteOne({ _id: new Int32(1) });
    await db.createCollection('temp');
    await db.collection<AnyDoc>('temp').insertOne({ _id: 1, v: 'moved' });
    await db.collection<AnyDoc>('temp').rename('renamed');
    await src.db(testDb('scratch')).collection<AnyDoc>('gone').insertOne({ _id: 1 });
    await src.db(testDb('scratch')).dropDatabase();
    await db.collection<AnyDoc>('dropme').insertOne({ _id: 1 });
    await db.collection<AnyDoc>('dropme').drop();
    const commitPoint = await clusterTime(src);

    // An empty catalog listed at T0: every namespace comes from the events themselves.
    const directory = new MongoClusterDirectory({ src: source.uri, dst: destination.uri }, 'test');
    const job = {
      _id: 'test',
      request: { source: 'src', destination: 'dst', buildIndexes: 'beforeDataCopy' },
      state: 'RUNNING',
      phase: 'copied',
      t0,
      listedUntil: t0,
      estimatedTotalBytes: 0,
      namespaces: [],
      nextPartitionSet: 1,
      reversals: 0,
    } as unknown as JobRecord;
    const session = new JobSession(
      job,
      [],
      directory.source('src'),
      directory.destination('dst'),
      directory.jobStore('dst'),
      { source: 'src', destination: 'dst' },
      systemClock,
    );
    const writer = new MongoChangeWriter(dst);
    const applier = new ChangeApplier({
      feed: new MongoChangeFeed(src, { maxAwaitTimeMS: 200 }),
      writer,
      lookup: new MongoDocumentLookup(src),
      checkpoints: new MongoCheckpointStore(dst, 'changeEvents:test'),
      router: new CatalogEventRouter({
        session,
        destination: directory.destination('dst'),
        source: directory.source('src'),
        selected: () => true,
        buildIndexes: 'beforeDataCopy',
        copyIn: async () => {
          throw new Error('nothing enters the filter in this test');
        },
        logger: silentLogger,
      }),
      startAtOperationTime: t0,
    });
    const ctrl = new AbortController();
    const running = applier.run(ctrl.signal);
    try {
      await applier.waitUntilApplied(commitPoint);
    } finally {
      ctrl.abort();
      await running;
    }

    expect(await dump(dst, testDb('shop'), 'items')).toEqual(
      await dump(src, testDb('shop'), 'items'),
    );
    expect(await dump(dst, testDb('shop'), 'renamed')).toEqual(
      await dump(src, testDb('shop'), 'renamed'),
    );
    const names = (
      await dst.db(testDb('shop')).listCollections({}, { nameOnly: true }).toArray()
    ).map((x) => x.name);
    expect(names.sort()).toEqual(['items', 'renamed']);
    const indexes = await dst
      .db(testDb('shop'))
      .collection<AnyDoc>('items')
      .listIndexes()
      .toArray();
    expect(indexes.find((i) => i.name === 'sku_1')?.unique).toBeUndefined();
    // The catalog follows by UUID: the renamed collection under its new name, dropped ones gone,
    // the relaxed unique index recorded for commit — and the last DDL's position with it.
    const catalog = session.job.namespaces.map((n) => `${n.database}.${n.collection}`).sort();
    expect(catalog).toEqual(['shop.items', 'shop.renamed'].map(testNs));
    const items = session.job.namespaces.find((n) => n.collection === 'items')!;
    expect(items.relaxedIndexes.map((r) => r.name)).toEqual(['sku_1']);
    expect(session.job.ddlApplied).toBeDefined();
    const stored = await directory.jobStore('dst').load();
    expect(stored!.job.namespaces.map((n) => n.key).sort()).toEqual(
      session.job.namespaces.map((n) => n.key).sort(),
    );
    expect(applier.lagSeconds(await clusterTime(src))).toBeLessThanOrEqual(1);

    await directory.close();
    const saved = await new MongoCheckpointStore(dst, 'changeEvents:test').load();
    expect(saved?.resumeToken).toBeDefined();
  });
});
