import type { MongoClient } from 'mongodb';
import { Redis } from 'ioredis';
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
  sleep,
  startShardedCluster,
  steps,
  type Progress,
  type ShardedCluster,
} from './support/harness';

interface Copy {
  estimatedTotalBytes: number;
  estimatedCopiedBytes: number;
}
interface Instance {
  id: string;
  status: string;
  missing: boolean;
  lastSeenSecondsAgo: number | null;
  progress: { collectionCopy: Copy | null } | null;
}
const instancesOf = (p: Progress): Instance[] =>
  ((p as unknown as { instances?: Instance[] }).instances ?? []) as Instance[];

const SKEW_MS = -10_000;

/**
 * Liveness by one clock (issue 23, item 3): one worker's clock is 10 s behind
 * (CLUSTER_SYNC_TEST_CLOCK_OFFSET_MS, test only) — with ages judged by comparing its clock with
 * the coordinator's it would be missing forever (stale limit 2 s) and commit never offered.
 * Judged by Redis' clock it is active like the other, canCommit is unaffected, every instance
 * carries the whole sync's estimatedTotalBytes; a stale registration (a worker gone long ago)
 * expires instead of refusing every command with WorkersMissing; commit ends byte-equal.
 */
describeOn('shardedClusters')('coordinator: 10 s of clock skew on one worker changes nothing', () => {
  let redis: RedisServer;
  let raw: Redis;
  let source: ShardedCluster;
  let destination: ShardedCluster;
  let src: MongoClient;
  let dst: MongoClient;
  let coordinator: StartedApp;
  let shardIds: string[];
  let documents: number;
  const step = steps(120_000);
  const ENV = { CLUSTER_SYNC_WORKER_STALE_MS: '2000', CLUSTER_SYNC_WORKER_EXPIRE_MS: '5000' };

  beforeAll(async () => {
    buildCoordinatorOnce();
    [redis, source, destination] = await Promise.all([
      startRedis(),
      startShardedCluster('src', 2, false),
      startShardedCluster('dst', 2, false),
    ]);
    raw = new Redis({ port: redis.port, password: redis.password, host: '127.0.0.1' });
    [src, dst] = await Promise.all([connect(source.uri), connect(destination.uri)]);
    shardIds = source.shards.map((s) => s._id).sort();
    documents = await loadShardedSource(src, 1_000);
  }, 180_000);

  afterAll(async () => {
    raw?.disconnect();
    await closeClients();
    await stopAllProcesses();
  }, 60_000);

  step('a worker 10 s behind is active, and commit is offered', async () => {
    coordinator = await startCoordinator(source.uri, destination.uri, redis.url, {
      id: 'coord-skew',
      env: ENV,
    });
    const [skewed, other] = shardIds;
    await startCoordinatedWorker(source.uri, destination.uri, redis.url, skewed, {
      CLUSTER_SYNC_TEST_CLOCK_OFFSET_MS: String(SKEW_MS),
    });
    await startCoordinatedWorker(source.uri, destination.uri, redis.url, other);
    await coordinator.api.waitFor(
      'both workers reporting',
      (p) => instancesOf(p).filter((i) => i.progress !== null).length === 2,
    );
    // The offset is really in effect: the skewed worker's own timestamp lags Redis' by ~10 s.
    const [seconds] = await raw.time();
    const report = JSON.parse((await raw.get(`cluster-sync:report:${skewed}`))!) as { at: number };
    expect(Number(seconds) * 1000 - report.at).toBeGreaterThan(8_000);

    const started = await commandEventually(coordinator.api, 'start', 'skew-start', 60_000, {
      source: 'cluster0',
      destination: 'cluster1',
    });
    expect(started).toMatchObject({ status: 200, body: { success: true } });
    await coordinator.api.waitFor('copy done, commit offered', (p) => copyDone(p) && p.canCommit, 90_000);

    // For 5 s: never missing, seen within a heartbeat or two, canCommit stays true.
    for (let look = 0; look < 10; look++) {
      const p = await coordinator.api.progress();
      const instances = instancesOf(p);
      expect(instances.map((i) => [i.id, i.status, i.missing])).toEqual([
        [shardIds[0], 'active', false],
        [shardIds[1], 'active', false],
      ]);
      for (const i of instances) expect(i.lastSeenSecondsAgo).toBeLessThan(3);
      expect(p.canCommit).toBe(true);
      expect((p as unknown as { missingInstances?: string[] }).missingInstances).toBeUndefined();
      // MongoDB's tool: the whole sync's total on every instance, shares never above it.
      const total = (p.collectionCopy as Copy).estimatedTotalBytes;
      const copies = instances.map((i) => i.progress!.collectionCopy!);
      for (const c of copies) expect(c.estimatedTotalBytes).toBe(total);
      expect(copies.reduce((n, c) => n + c.estimatedCopiedBytes, 0)).toBeLessThanOrEqual(total);
      expect((p as unknown as { lag: unknown }).lag).toMatchObject({
        overallLagSeconds: p.lagTimeSeconds,
      });
      await sleep(500);
    }
  });

  step('a stale registration expires instead of refusing commands; commit is byte-equal', async () => {
    // A worker gone long ago (its last heartbeat a minute back by Redis' clock) under an id that
    // names no source shard: without expiry every command answers WorkersMissing.
    const [seconds] = await raw.time();
    await raw.hset(
      'cluster-sync:workers',
      'ghost',
      JSON.stringify({ id: 'ghost', shardId: 'ghost', queue: 'sync.commands.ghost', url: null, registeredAt: 0 }),
    );
    await raw.hset('cluster-sync:seen', 'ghost', String(Number(seconds) * 1000 - 60_000));
    // The coordinator's next read (every 0.5 s) drops it: gone from Redis, then from progress.
    const deadline = Date.now() + 10_000;
    while ((await raw.hexists('cluster-sync:workers', 'ghost')) === 1) {
      if (Date.now() > deadline) throw new Error('the ghost registration never expired');
      await sleep(200);
    }
    await coordinator.api.waitFor(
      'no ghost instance and commit offered',
      (p) => instancesOf(p).every((i) => i.id !== 'ghost') && p.canCommit,
      30_000,
    );
    const commit = await commandEventually(coordinator.api, 'commit', 'skew-commit');
    expect(commit).toMatchObject({ status: 200, body: { success: true } });
    await coordinator.api.waitFor('COMMITTED', (p) => p.state === 'COMMITTED', 90_000);
    const report = await compareClusters(src, dst, { databases: [testDb('app'), testDb('crm')] });
    expect(report.differences).toEqual([]);
    expect(report.documents).toBe(documents);
  });
});
