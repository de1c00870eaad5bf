import { Int32, type Document } from 'bson';
import { silentLogger } from '@sync/engine';
import { createSyncEngine } from '../../apps/worker/src/composition/create-sync-engine';
import { MongoClient } from 'mongodb';
import { describeOn, testDb, testNs } from '../helpers/real-clusters';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { waitFor } from './copy-helpers';
import { PER_SHARD_START, TUNING, useShardedClusters } from './sync-helpers';

type AnyDoc = { _id: unknown } & Document;

const START = PER_SHARD_START;

const log = process.env.SYNC_TEST_LOG
  ? {
      debug: () => undefined,
      info: (m: string, f?: object) => console.log('INFO', m, JSON.stringify(f ?? {})),
      warn: (m: string, f?: object) => console.log('WARN', m, JSON.stringify(f ?? {})),
      error: (m: string, f?: object) => console.log('ERROR', m, JSON.stringify(f ?? {})),
    }
  : silentLogger;

/**
 * Sharded → sharded with one worker per source shard (`--id`), driven directly (no Redis):
 * source 2 shards, destination 3 shards, range/compound/hashed keys, unsharded collections in
 * two databases with different primary shards, writes on every shard during the sync
 * (including a shard-key change that moves a document between shards) and DDL seen by both
 * workers; both commit; the destination equals the source, read through the routers.
 */
describeOn('shardedClusters')(
  'sharded → sharded, one worker per source shard (2 → 3 shards)',
  () => {
    const fixture = useShardedClusters({
      source: 'src',
      destination: 'dst',
      sourceShards: 2,
      destinationShards: 3,
      logger: log,
    });
    const worker = fixture.worker;

    it('copies and follows each shard with its own worker, DDL once, commits on both', async () => {
      const { source, destination, src, dst } = fixture;
      const [shard0, shard1] = source.shards.map((s) => s._id).sort() as [string, string];
      const admin = src.db('admin');
      // Two databases: round-robin primaries put them on different shards.
      await src
        .db(testDb('app'))
        .collection<AnyDoc>('settings')
        .insertOne({ _id: 'theme', v: 'dark' });
      await src
        .db(testDb('app'))
        .collection<AnyDoc>('logs')
        .insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: i, k: i % 10 })));
      await src.db(testDb('crm')).collection<AnyDoc>('notes').insertOne({ _id: 1, text: 'hello' });
      await admin.command({ shardCollection: testNs('app.users'), key: { uid: 'hashed' } });
      await admin.command({ shardCollection: testNs('app.orders'), key: { region: 1, _id: 1 } });
      await admin.command({ split: testNs('app.orders'), middle: { region: 'm', _id: 0 } });
      const ordersChunks = await src
        .db('config')
        .collection('collections')
        .findOne({ _id: testNs('app.orders') as never });
      expect(ordersChunks).not.toBeNull();
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
      // The upper orders chunk (us) moves to the other shard: both shards own orders.
      const primary = (await src
        .db('config')
        .collection('databases')
        .findOne({ _id: testDb('app') as never }))!.primary as string;
      const other = primary === shard0 ? shard1 : shard0;
      await admin.command({
        moveChunk: testNs('app.orders'),
        find: { region: 'us', _id: 0 },
        to: other,
      });

      // Bad input first: nothing may be written by a refused start.
      const stranger = await worker('not-a-shard');
      await expect(stranger.start(START)).rejects.toMatchObject({ error: 'InvalidShardId' });
      expect(stranger.state).toBe('IDLE');

      // The follower may start first: it waits for the coordinator (the smallest shard id).
      const follower = await worker(shard1);
      await follower.start(START);
      await waitFor(
        () => /lead worker/.test(String(follower.progress().waitingFor ?? '')),
        20_000,
        'follower waits for the coordinator',
        () => JSON.stringify(follower.progress()),
      );
      expect(follower.progress()).toMatchObject({ syncID: shard1, coordinatorID: shard0 });
      const coordinator = await worker(shard0);
      await coordinator.start(START);
      expect(coordinator.progress()).toMatchObject({ syncID: shard0, coordinatorID: shard0 });
      // The balancers are off for the sync.
      expect((await admin.command({ balancerStatus: 1 })).mode).toBe('off');

      // A second process for the same shard is refused; so is a lone worker (no --id).
      // (It finds shard1's job at boot and refuses to resume it; every call answers the error.)
      const twin = await createSyncEngine({
        clusters: { cluster0: source.uri, cluster1: destination.uri },
        id: shard1,
        logger: silentLogger,
        onFatal: () => undefined,
        engine: { ...TUNING, shardClaim: { staleMs: 2_000, renewMs: 300 } },
      });
      await expect(twin.ready).rejects.toMatchObject({ error: 'DuplicateShardWorker' });
      expect(() => twin.progress()).toThrow(/another worker runs shard/);
      await twin.close();
      const lone = await worker();
      await expect(lone.start(START)).rejects.toMatchObject({ error: 'PerShardSyncInProgress' });
      await lone.close();

      // Someone turns the source's balancer back on: the coordinator warns until it is off again.
      await admin.command({ balancerStart: 1 });
      await waitFor(
        () => JSON.stringify(coordinator.progress().warnings ?? []).includes('BalancerRunning'),
        20_000,
        'balancer warning',
        () => JSON.stringify(coordinator.progress()),
      );
      await admin.command({ balancerStop: 1 });
      await waitFor(() => !coordinator.progress().warnings, 20_000, 'warning cleared');

      const both = () => [coordinator, follower];
      const allCanCommit = () => both().every((w) => w.progress().canCommit === true);
      const show = () => JSON.stringify(both().map((w) => w.progress()));
      await waitFor(allCanCommit, 90_000, 'canCommit on both', show);
      // Each worker copied only its shard's share; together, everything.
      const copied = both().map(
        (w) =>
          (w.progress().collectionCopy as { estimatedCopiedBytes: number }).estimatedCopiedBytes,
      );
      expect(copied.every((b) => b > 0)).toBe(true);

      // Writes on every shard, a shard-key change moving a document, and DDL.
      await app.collection<AnyDoc>('users').updateMany({}, { $set: { seen: true } });
      await app.collection<AnyDoc>('orders').deleteMany({ region: 'ap' });
      await app
        .collection<AnyDoc>('orders')
        .insertOne({ _id: new Int32(999), region: 'us', total: 1 });
      await app
        .collection<AnyDoc>('orders')
        .updateOne({ region: 'eu', _id: new Int32(0) }, { $set: { region: 'us' } });
      // A shard-key change within one shard, and a replacement that moves a document.
      await app
        .collection<AnyDoc>('orders')
        .updateOne({ region: 'eu', _id: new Int32(3) }, { $set: { region: 'af' } });
      await app
        .collection<AnyDoc>('orders')
        .replaceOne({ region: 'us', _id: new Int32(1) }, { region: 'ca', total: 5 });
      await src.db(testDb('crm')).collection<AnyDoc>('notes').insertOne({ _id: 2, text: 'again' });
      await app.collection('settings').drop();
      await app.collection<AnyDoc>('settings').insertOne({ _id: 'theme', v: 'light' });
      await app.collection<AnyDoc>('orders').createIndex({ total: 1 }, { name: 'total_1' });
      await src.db(testDb('crm')).collection('notes').rename('archive');
      // Sharded on the source during the sync: sharded on the destination with the same key.
      await app.collection('logs').createIndex({ k: 1 }, { name: 'k_1' });
      await admin.command({ shardCollection: testNs('app.logs'), key: { k: 1 } });
      await app.collection<AnyDoc>('logs').insertOne({ _id: 100, k: 3 });
      await src
        .db(testDb('crm'))
        .collection<AnyDoc>('archive')
        .insertOne({ _id: 3, text: 'moved' });

      await waitFor(allCanCommit, 90_000, 'canCommit again', show);
      // commit completes only when every worker has received it.
      await coordinator.commit();
      await new Promise((r) => setTimeout(r, 500));
      expect(coordinator.progress().state).toBe('COMMITTING');
      expect(String(coordinator.progress().waitingFor)).toContain(shard1);
      await follower.commit();
      await waitFor(
        () => both().every((w) => w.progress().state === 'COMMITTED'),
        90_000,
        'COMMITTED on both',
        show,
      );
      expect(both().every((w) => w.progress().canWrite === true)).toBe(true);

      const report = await compareClusters(src, dst, { databases: [testDb('app'), testDb('crm')] });
      if (process.env.SYNC_TEST_LOG) console.log(JSON.stringify(report));
      expect(report.differences).toEqual([]);
      expect(report.documents).toBe(600 + 268 + 1 + 3 + 51);
      const config = dst.db('config').collection('collections');
      expect(await config.findOne({ _id: testNs('app.users') as never })).toMatchObject({
        key: { uid: 'hashed' },
      });
      expect(await config.findOne({ _id: testNs('app.orders') as never })).toMatchObject({
        key: { region: 1, _id: 1 },
      });
      expect(await config.findOne({ _id: testNs('app.logs') as never })).toMatchObject({
        key: { k: 1 },
      });
      // No orphan and no duplicate: counts through the router equal the source's.
      expect(await dst.db(testDb('app')).collection('orders').countDocuments()).toBe(268);
      expect(
        await dst
          .db(testDb('app'))
          .collection('orders')
          .findOne({ _id: new Int32(0) } as Document),
      ).toMatchObject({ region: 'us' });
      // Presplit before the copy: both sharded collections are spread over all 3 shards.
      for (const coll of ['orders', 'users']) {
        const perShard = await Promise.all(
          destination.shards.map(async (shard) => {
            const direct = await new MongoClient(shard.uri).connect();
            try {
              return await direct.db(testDb('app')).collection(coll).countDocuments();
            } finally {
              await direct.close();
            }
          }),
        );
        expect({ coll, spread: perShard.every((n) => n > 0) }).toEqual({ coll, spread: true });
      }
      // Balancers back as they were.
      expect((await admin.command({ balancerStatus: 1 })).mode).toBe('full');
      expect((await dst.db('admin').command({ balancerStatus: 1 })).mode).toBe('full');
    }, 240_000);
  },
);
