import type { MongoClient } from 'mongodb';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { stopAllProcesses } from '../helpers/processes';
import { describeOn, testDb } from '../helpers/real-clusters';
import {
  buildCoordinatorOnce,
  commandEventually,
  loadShardedSource,
  receivedCount,
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
  type Progress,
  type ShardedCluster,
} from './support/harness';

type AnyDoc = { _id: number } & Record<string, unknown>;

const reporting = (p: Progress, n: number): boolean =>
  (
    (p as unknown as { instances?: { progress: unknown; missing: boolean }[] }).instances ?? []
  ).filter((i) => i.progress !== null && !i.missing).length === n;

/**
 * Redis restarted EMPTY (no persistence) while a per-shard sync runs (2 → 2 shards, two workers,
 * one coordinator, built apps, real redis-server): Redis holds no state the sync needs. The
 * workers register again and the coordinator rebuilds its view from them; the command ids the
 * workers applied before live in their job documents on the destination, so an old command a
 * client sends again after the restart (its queues, sequence numbers and records gone) is
 * answered as applied and NOT applied again — a pause sent before a resume does not pause the
 * sync a second time — and the commit ends byte-equal.
 */
describeOn('shardedClusters')('coordinator: Redis restarted empty while a sync runs', () => {
  let redis: RedisServer;
  let source: ShardedCluster;
  let destination: ShardedCluster;
  let src: MongoClient;
  let dst: MongoClient;
  let coordinator: StartedApp;
  const workers = new Map<string, StartedApp>();
  let shardIds: string[];
  const step = steps(150_000);
  const ENV = { CLUSTER_SYNC_WORKER_STALE_MS: '2000' };

  beforeAll(async () => {
    buildCoordinatorOnce();
    [redis, source, destination] = await Promise.all([
      startRedis(),
      startShardedCluster('esrc', 2, false),
      startShardedCluster('edst', 2, false),
    ]);
    [src, dst] = await Promise.all([connect(source.uri), connect(destination.uri)]);
    shardIds = source.shards.map((s) => s._id).sort();
    await loadShardedSource(src, 1_500);
    coordinator = await startCoordinator(source.uri, destination.uri, redis.url, {
      id: 'coord-e',
      env: ENV,
    });
    for (const id of shardIds) {
      workers.set(id, await startCoordinatedWorker(source.uri, destination.uri, redis.url, id));
    }
  }, 180_000);

  afterAll(async () => {
    await closeClients();
    await stopAllProcesses();
  }, 60_000);

  step('start, pause and resume, each applied once', async () => {
    await coordinator.api.waitFor('both workers reporting', (p) => reporting(p, 2));
    const start = { source: 'cluster0', destination: 'cluster1', enableUserWriteBlocking: true };
    expect(
      await commandEventually(coordinator.api, 'start', 'e-start', 60_000, start),
    ).toMatchObject({ status: 200, body: { success: true } });
    await coordinator.api.waitFor(
      'copy done',
      (p) => copyDone(p) && p.state === 'RUNNING',
      120_000,
    );
    expect(await commandEventually(coordinator.api, 'pause', 'e-pause')).toMatchObject({
      status: 200,
    });
    await coordinator.api.waitFor('PAUSED', (p) => p.state === 'PAUSED', 30_000);
    expect(await commandEventually(coordinator.api, 'resume', 'e-resume')).toMatchObject({
      status: 200,
    });
    await coordinator.api.waitFor('RUNNING', (p) => p.state === 'RUNNING', 30_000);
    for (const worker of workers.values()) expect(receivedCount(worker, 'e-pause')).toBe(1);
  });

  step('Redis killed and restarted empty while the application writes', async () => {
    redis.process.child.kill('SIGKILL');
    await redis.process.waitForExit(10_000);
    await redis.process.stop();
    // Writes while Redis is down: the workers keep applying change events (Redis is control only).
    const users = src.db(testDb('app')).collection<AnyDoc>('users');
    await users.insertMany(
      Array.from({ length: 40 }, (_, k) => ({ _id: 700_000 + k, uid: `e${k}` })),
    );
    redis = await startRedis(redis.port, redis.password);
    const view = await coordinator.api.waitFor(
      'both workers registered again and reporting',
      (p) => reporting(p, 2) && p.state === 'RUNNING',
      60_000,
    );
    expect(view.state).toBe('RUNNING');
  });

  step(
    'the workers register again; an old command sent again is not applied again; commit',
    async () => {
      // A client retrying its old pause (same X-Command-Id) after the resume: "retry" (503,
      // NotReady) until the workers have registered again, then answered as applied by the
      // workers' own records — the sync stays RUNNING.
      const again = await commandEventually(coordinator.api, 'pause', 'e-pause', 60_000);
      expect({ status: again.status, body: again.body }).toEqual({
        status: 200,
        body: expect.objectContaining({ success: true }),
      });
      for (const worker of workers.values()) expect(receivedCount(worker, 'e-pause')).toBe(2);
      await new Promise((r) => setTimeout(r, 1_000));
      expect((await coordinator.api.progress()).state).toBe('RUNNING');
      await src
        .db(testDb('app'))
        .collection<AnyDoc>('orders')
        .updateMany({ region: 'eu' }, { $set: { after: true } });
      await coordinator.api.waitFor(
        'commit possible',
        (p) => reporting(p, 2) && p.canCommit,
        120_000,
      );
      const commit = await commandEventually(coordinator.api, 'commit', 'e-commit');
      expect(commit).toMatchObject({ status: 200, body: { success: true } });
      await coordinator.api.waitFor('COMMITTED', (p) => p.state === 'COMMITTED', 90_000);
      const report = await compareClusters(src, dst, { databases: [testDb('app'), testDb('crm')] });
      expect(report.differences).toEqual([]);
      expect(
        await dst
          .db(testDb('app'))
          .collection('users')
          .countDocuments({ _id: { $gte: 700_000 } } as never),
      ).toBe(40);
    },
  );
});
