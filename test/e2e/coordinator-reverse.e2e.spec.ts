import type { MongoClient } from 'mongodb';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { stopAllProcesses } from '../helpers/processes';
import { describeOn, testDb } from '../helpers/real-clusters';
import {
  buildCoordinatorOnce,
  commandEventually,
  loadShardedSource,
  startCoordinatedWorker,
  startCoordinator,
  startRedis,
  type RedisServer,
  type StartedApp,
} from './support/coordinator-harness';
import {
  closeClients,
  connect,
  copyDone,
  startShardedCluster,
  steps,
  type ShardedCluster,
} from './support/harness';

type AnyDoc = { _id: number } & Record<string, unknown>;

/**
 * Reverse of a per-shard sync through the coordinator, built apps as processes and a real
 * redis-server: 2 source shards → 2 destination shards, one worker per source shard. Commit; the
 * application writes on the destination; `reverse` through the coordinator; a worker SIGKILLed
 * in the reversed sync and restarted; commit back: the old source equals the destination byte
 * for byte. (The clusters run without authorization, so write blocking binds no client here;
 * sync-commit-safety covers it with users.)
 */
describeOn('shardedClusters')('coordinator: reverse of a 2-shard → 2-shard sync', () => {
  let redis: RedisServer;
  let source: ShardedCluster;
  let destination: ShardedCluster;
  let src: MongoClient;
  let dst: MongoClient;
  let coordinator: StartedApp;
  const workers = new Map<string, StartedApp>();
  let shardIds: string[];
  const step = steps(150_000);
  const START = {
    source: 'cluster0',
    destination: 'cluster1',
    reversible: true,
    enableUserWriteBlocking: true,
  };
  const ENV = { CLUSTER_SYNC_WORKER_STALE_MS: '2000' };
  const databases = () => [testDb('app'), testDb('crm')];

  beforeAll(async () => {
    buildCoordinatorOnce();
    [redis, source, destination] = await Promise.all([
      startRedis(),
      startShardedCluster('rsrc', 2, false),
      startShardedCluster('rdst', 2, false),
    ]);
    [src, dst] = await Promise.all([connect(source.uri), connect(destination.uri)]);
    shardIds = source.shards.map((s) => s._id).sort();
    await loadShardedSource(src, 1_500);
  }, 180_000);

  afterAll(async () => {
    await closeClients();
    await stopAllProcesses();
  }, 60_000);

  const launchWorker = async (id: string): Promise<void> => {
    workers.set(id, await startCoordinatedWorker(source.uri, destination.uri, redis.url, id));
  };

  step('a reversible per-shard sync commits; the destination takes the writes', async () => {
    coordinator = await startCoordinator(source.uri, destination.uri, redis.url, {
      id: 'coord-r',
      env: ENV,
    });
    for (const id of shardIds) await launchWorker(id);
    await coordinator.api.waitFor(
      'both workers reporting',
      (p) =>
        ((p as unknown as { instances?: { progress: unknown }[] }).instances ?? []).filter(
          (i) => i.progress !== null,
        ).length === 2,
    );
    const started = await commandEventually(coordinator.api, 'start', 'r-start', 60_000, START);
    expect({ status: started.status, body: started.body }).toEqual({
      status: 200,
      body: expect.objectContaining({ success: true }),
    });
    await coordinator.api.waitFor('commit possible', (p) => copyDone(p) && p.canCommit, 120_000);
    const commit = await commandEventually(coordinator.api, 'commit', 'r-commit');
    expect(commit).toMatchObject({ status: 200, body: { success: true } });
    await coordinator.api.waitFor('COMMITTED', (p) => p.state === 'COMMITTED', 90_000);
    expect((await compareClusters(src, dst, { databases: databases() })).differences).toEqual([]);
    // The application moves: the destination takes writes on both shards.
    const users = dst.db(testDb('app')).collection<AnyDoc>('users');
    await users.insertMany(
      Array.from({ length: 50 }, (_, k) => ({ _id: 900_000 + k, uid: `r${k}` })),
    );
    await users.updateMany({ _id: { $lt: 300 } }, { $set: { moved: true } });
    await dst
      .db(testDb('app'))
      .collection<AnyDoc>('orders')
      .updateOne({ region: 'ap', _id: 0 }, { $set: { region: 'zz' } });
    await dst
      .db(testDb('crm'))
      .collection<AnyDoc>('notes')
      .deleteMany({ _id: { $lt: 100 } });
  });

  step('reverse through the coordinator; a worker killed and restarted; commit back', async () => {
    const reversed = await commandEventually(coordinator.api, 'reverse', 'r-reverse', 60_000, {});
    expect(reversed).toMatchObject({ status: 200, body: { success: true } });
    await coordinator.api.waitFor('RUNNING reversed', (p) => p.state === 'RUNNING', 60_000);
    // More writes on the new source while the reversed sync runs.
    const orders = dst.db(testDb('app')).collection<AnyDoc>('orders');
    await orders.insertMany(
      Array.from({ length: 30 }, (_, k) => ({ _id: 800_000 + k, region: ['eu', 'us'][k % 2] })),
    );
    const victim = workers.get(shardIds[1])!;
    victim.process.child.kill('SIGKILL');
    await victim.process.waitForExit(10_000);
    await victim.process.stop();
    await orders.deleteMany({ _id: { $gte: 800_000, $lt: 800_010 } });
    await launchWorker(shardIds[1]);
    await coordinator.api.waitFor(
      'both workers back and commit possible',
      (p) => {
        const instances = (p as unknown as { instances?: { missing: boolean }[] }).instances ?? [];
        return instances.length === 2 && instances.every((i) => !i.missing) && p.canCommit;
      },
      120_000,
    );
    const commit = await commandEventually(coordinator.api, 'commit', 'r-commit-back');
    expect({ status: commit.status, body: commit.body }).toEqual({
      status: 200,
      body: expect.objectContaining({ success: true }),
    });
    await coordinator.api.waitFor('COMMITTED back', (p) => p.state === 'COMMITTED', 90_000);

    const report = await compareClusters(dst, src, { databases: databases() });
    expect(report.differences).toEqual([]);
    expect(await src.db(testDb('app')).collection('users').countDocuments({ moved: true })).toBe(
      300,
    );
    expect(
      await src
        .db(testDb('app'))
        .collection<AnyDoc>('orders')
        .countDocuments({ _id: { $gte: 800_000 } }),
    ).toBe(20);
    // Handed back: the coordinator reports the old source writable again.
    expect((await coordinator.api.progress()).canWrite).toBe(true);
  });
});
