import { Int32, type Document } from 'bson';
import { silentLogger, type SyncJob } from '@sync/engine';
import { createSyncEngine } from '../../apps/worker/src/composition/create-sync-engine';
import { MongoClient } from 'mongodb';
import { startTestCluster, type TestCluster } from '../helpers/clusters';
import { describeOn, testDb, testNs } from '../helpers/real-clusters';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { waitFor } from './copy-helpers';
import { CEA_TUNING, TUNING } from './sync-helpers';

type AnyDoc = { _id: unknown } & Document;

/** Replica set → sharded cluster through mongos, one worker (`sharding` option). */
describeOn('replicaSetAndShardedClusters')(
  'replica set → sharded cluster (mongos, 2 shards)',
  () => {
    let source: TestCluster;
    let destination: TestCluster;
    let src: MongoClient;
    let dst: MongoClient;
    let job: SyncJob | null = null;

    beforeAll(async () => {
      source = await startTestCluster('source', { kind: 'replicaSet' });
      destination = await startTestCluster('destination', {
        kind: 'sharded',
        name: 'sharded',
        shards: 2,
      });
      src = await new MongoClient(source.uri).connect();
      dst = await new MongoClient(destination.uri).connect();
    });

    afterAll(async () => {
      await job?.close();
      await src?.close();
      await dst?.close();
      await destination?.stop();
      await source?.stop();
    });

    it('shards the listed collections with their keys before copying, then commits exactly', async () => {
      const shop = src.db(testDb('shop'));
      await shop.collection('items').createIndex({ sku: 1 }, { unique: true, name: 'sku_1' });
      await shop.collection<AnyDoc>('items').insertMany(
        Array.from({ length: 1500 }, (_, i) => ({
          _id: new Int32(i),
          sku: `sku-${i}`,
          v: i % 7,
        })),
      );
      await shop
        .collection<AnyDoc>('events')
        .insertMany(Array.from({ length: 800 }, (_, i) => ({ _id: new Int32(i), at: i })));
      await shop.collection<AnyDoc>('plain').insertMany([{ _id: 1 }, { _id: 2 }]);

      const engine = await createSyncEngine({
        clusters: { cluster0: source.uri, cluster1: destination.uri },
        logger: process.env.SYNC_TEST_LOG
          ? {
              debug: () => undefined,
              info: (m, f) => console.log('INFO', m, JSON.stringify(f ?? {})),
              warn: (m, f) => console.log('WARN', m, JSON.stringify(f ?? {})),
              error: (m, f) => console.log('ERROR', m, JSON.stringify(f ?? {})),
            }
          : silentLogger,
        engine: { ...TUNING, verification: { recheckMs: 200 } },
        changeApplication: CEA_TUNING,
      });
      await engine.ready;
      job = engine as unknown as SyncJob;
      await job.start({
        source: 'cluster0',
        destination: 'cluster1',
        buildIndexes: 'beforeDataCopy',
        enableUserWriteBlocking: false,
        reversible: false,
        sharding: {
          createSupportingIndexes: true,
          shardingEntries: [
            {
              database: testDb('shop'),
              collection: 'items',
              shardCollection: { key: [{ sku: 1 }] },
            },
            {
              database: testDb('shop'),
              collection: 'events',
              shardCollection: { key: [{ at: 'hashed' }] },
            },
          ],
        },
      });
      await waitFor(
        () => job!.progress().canCommit === true,
        60_000,
        'canCommit',
        () => JSON.stringify(job!.progress()),
      );
      await shop.collection<AnyDoc>('items').updateMany({ v: 3 }, { $set: { touched: true } });
      await shop.collection<AnyDoc>('events').deleteMany({ at: { $lt: 100 } });
      await shop.collection<AnyDoc>('events').insertOne({ _id: new Int32(5000), at: 5000 });
      // Fields reordered by a pipeline update: replayed in place, then repaired by the live
      // verifier from the source — on a sharded collection, by its shard key and _id.
      await shop
        .collection<AnyDoc>('items')
        .updateOne({ _id: new Int32(9) }, [
          { $replaceWith: { _id: '$_id', v: '$v', sku: '$sku' } },
        ]);
      await waitFor(
        () =>
          (job!.progress().verification as { documentsRepaired?: number } | undefined)
            ?.documentsRepaired === 1,
        60_000,
        'the reordered document repaired',
        () => JSON.stringify(job!.progress().verification),
      );
      await waitFor(() => job!.progress().canCommit === true, 60_000, 'canCommit again');
      await job.commit();
      await waitFor(
        () => job!.progress().state === 'COMMITTED',
        60_000,
        'COMMITTED',
        () => JSON.stringify(job!.progress()).slice(0, 1500),
      );

      const report = await compareClusters(src, dst, { databases: [testDb('shop')] });
      // The supporting index the destination needed for the hashed key stays after commit.
      expect(report.differences).toEqual([
        { namespace: testNs('shop.events'), problem: 'index at_hashed only on destination' },
      ]);
      expect(report.documents).toBe(1500 + 701 + 2);

      const config = dst.db('config');
      const items = await config
        .collection('collections')
        .findOne({ _id: testNs('shop.items') as never });
      expect(items).toMatchObject({ key: { sku: 1 } });
      const events = await config
        .collection('collections')
        .findOne({ _id: testNs('shop.events') as never });
      expect(events).toMatchObject({ key: { at: 'hashed' } });
      expect(
        await config.collection('collections').findOne({ _id: testNs('shop.plain') as never }),
      ).toBeNull();
      // The hashed collection's documents are spread over both shards.
      const perShard = await Promise.all(
        destination.shards.map(async (shard) => {
          const direct = await new MongoClient(shard.uri).connect();
          try {
            return await direct.db(testDb('shop')).collection('events').countDocuments();
          } finally {
            await direct.close();
          }
        }),
      );
      expect(perShard.every((n) => n > 0)).toBe(true);
      expect(perShard.reduce((a, b) => a + b, 0)).toBe(701);
    });
  },
);

/** Replica set → sharded with the source's own index as the key's support, buildIndexes never. */
describeOn('replicaSetAndShardedClusters')(
  'replica set → sharded cluster, createSupportingIndexes false, buildIndexes never',
  () => {
    let source: TestCluster;
    let destination: TestCluster;
    let src: MongoClient;
    let dst: MongoClient;
    let job: SyncJob | null = null;

    beforeAll(async () => {
      source = await startTestCluster('source', { kind: 'replicaSet' });
      destination = await startTestCluster('destination', {
        kind: 'sharded',
        name: 'sharded',
        shards: 2,
      });
      src = await new MongoClient(source.uri).connect();
      dst = await new MongoClient(destination.uri).connect();
    });

    afterAll(async () => {
      await job?.close();
      await src?.close();
      await dst?.close();
      await destination?.stop();
      await source?.stop();
    });

    it('needs the key index on the source, keeps only it after commit, and is exact', async () => {
      const inv = src.db(testDb('inv'));
      await inv.collection('parts').createIndex({ sku: 1, bin: 1 }, { name: 'sku_bin' });
      await inv.collection('parts').createIndex({ weight: 1 }, { name: 'weight_1' });
      await inv.collection<AnyDoc>('parts').insertMany(
        Array.from({ length: 900 }, (_, i) => ({
          _id: new Int32(i),
          sku: `p${i % 300}`,
          bin: i % 7,
          weight: i / 10,
        })),
      );
      const engine = await createSyncEngine({
        clusters: { cluster0: source.uri, cluster1: destination.uri },
        logger: silentLogger,
        engine: TUNING,
        changeApplication: CEA_TUNING,
      });
      await engine.ready;
      job = engine as unknown as SyncJob;
      const request = (key: Record<string, 1>) => ({
        source: 'cluster0',
        destination: 'cluster1',
        buildIndexes: 'never' as const,
        enableUserWriteBlocking: false,
        reversible: false,
        sharding: {
          createSupportingIndexes: false,
          shardingEntries: [
            { database: testDb('inv'), collection: 'parts', shardCollection: { key: [key] } },
          ],
        },
      });
      // No source index starts with `bin`: refused, nothing written.
      await expect(job.start(request({ bin: 1 }))).rejects.toMatchObject({
        error: 'ShardKeyIndexMissing',
      });
      expect(job.state).toBe('IDLE');
      expect(await dst.db(testDb('inv')).listCollections().toArray()).toEqual([]);

      await job.start(request({ sku: 1 }));
      const show = () => JSON.stringify(job!.progress());
      await waitFor(() => job!.progress().canCommit === true, 60_000, 'canCommit', show);
      await inv.collection<AnyDoc>('parts').updateMany({ bin: 3 }, { $set: { moved: true } });
      await inv.collection<AnyDoc>('parts').insertOne({ _id: new Int32(5000), sku: 'p1', bin: 0 });
      await waitFor(() => job!.progress().canCommit === true, 60_000, 'canCommit again', show);
      await job.commit();
      await waitFor(() => job!.progress().state === 'COMMITTED', 60_000, 'COMMITTED', show);

      const report = await compareClusters(src, dst, { databases: [testDb('inv')] });
      // buildIndexes never: no secondary index but the key's own (shardCollection made it).
      expect(report.documents).toBe(901);
      expect(report.differences.filter((d) => !/^index /.test(d.problem))).toEqual([]);
      const indexes = (await dst.db(testDb('inv')).collection('parts').listIndexes().toArray()).map(
        (i) => i.name as string,
      );
      expect(indexes.sort()).toEqual(['_id_', 'sku_1']);
      expect(
        await dst
          .db('config')
          .collection('collections')
          .findOne({ _id: testNs('inv.parts') as never }),
      ).toMatchObject({ key: { sku: 1 } });
    }, 180_000);
  },
);

/** Sharded → sharded through the routers with a single worker (no --id). */
describeOn('shardedClusters')('sharded → sharded with one worker (2 + 3 shards)', () => {
  let source: TestCluster;
  let destination: TestCluster;
  let src: MongoClient;
  let dst: MongoClient;
  let job: SyncJob | null = null;

  beforeAll(async () => {
    source = await startTestCluster('source', { kind: 'sharded', name: 'src', shards: 2 });
    destination = await startTestCluster('destination', {
      kind: 'sharded',
      name: 'dst',
      shards: 3,
    });
    src = await new MongoClient(source.uri).connect();
    dst = await new MongoClient(destination.uri).connect();
  });

  afterAll(async () => {
    await job?.close();
    await src?.close();
    await dst?.close();
    await destination?.stop();
    await source?.stop();
  });

  it('shards each collection as the source does, copies and follows changes, commits exactly', async () => {
    const admin = src.db('admin');
    await admin.command({ shardCollection: testNs('app.users'), key: { uid: 'hashed' } });
    await admin.command({ shardCollection: testNs('app.orders'), key: { region: 1, _id: 1 } });
    const app = src.db(testDb('app'));
    await app
      .collection<AnyDoc>('users')
      .insertMany(Array.from({ length: 600 }, (_, i) => ({ _id: new Int32(i), uid: `u${i}` })));
    await app.collection<AnyDoc>('orders').insertMany(
      Array.from({ length: 400 }, (_, i) => ({
        _id: new Int32(i),
        region: ['eu', 'us', 'ap'][i % 3],
        total: i,
      })),
    );
    await app.collection<AnyDoc>('settings').insertOne({ _id: 'theme', v: 'dark' });

    const engine = await createSyncEngine({
      clusters: { cluster0: source.uri, cluster1: destination.uri },
      logger: silentLogger,
      engine: TUNING,
      changeApplication: CEA_TUNING,
    });
    await engine.ready;
    job = engine as unknown as SyncJob;
    await expect(
      job.start({
        source: 'cluster0',
        destination: 'cluster1',
        buildIndexes: 'beforeDataCopy',
        enableUserWriteBlocking: false,
        reversible: false,
        sharding: { createSupportingIndexes: false, shardingEntries: [] },
      }),
    ).rejects.toMatchObject({ error: 'ShardingNotAllowed' });
    await job.start({
      source: 'cluster0',
      destination: 'cluster1',
      buildIndexes: 'beforeDataCopy',
      enableUserWriteBlocking: false,
      reversible: false,
    });
    await waitFor(
      () => job!.progress().canCommit === true,
      60_000,
      'canCommit',
      () => JSON.stringify(job!.progress()),
    );
    await app.collection<AnyDoc>('users').updateMany({}, { $set: { seen: true } });
    await app.collection<AnyDoc>('orders').deleteMany({ region: 'ap' });
    // Shard-key changes: the change stream's documentKey names the NEW key.
    await app
      .collection<AnyDoc>('orders')
      .updateOne({ region: 'eu', _id: new Int32(3) }, { $set: { region: 'af' } });
    await app
      .collection<AnyDoc>('orders')
      .replaceOne({ region: 'us', _id: new Int32(1) }, { region: 'ca', total: 5 });
    await app
      .collection<AnyDoc>('orders')
      .insertOne({ _id: new Int32(999), region: 'eu', total: 1 });
    await waitFor(() => job!.progress().canCommit === true, 60_000, 'canCommit again');
    await job.commit();
    await waitFor(
      () => job!.progress().state === 'COMMITTED',
      60_000,
      'COMMITTED',
      () => JSON.stringify(job!.progress()),
    );

    const report = await compareClusters(src, dst, { databases: [testDb('app')] });
    expect(report.differences).toEqual([]);
    expect(report.documents).toBe(600 + 267 + 1 + 1);
    const config = dst.db('config').collection('collections');
    expect(await config.findOne({ _id: testNs('app.users') as never })).toMatchObject({
      key: { uid: 'hashed' },
    });
    expect(await config.findOne({ _id: testNs('app.orders') as never })).toMatchObject({
      key: { region: 1, _id: 1 },
    });
    expect(await config.findOne({ _id: testNs('app.settings') as never })).toBeNull();
  });
});
