import type { MongoClient } from 'mongodb';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { stopAllProcesses } from '../helpers/processes';
import { describeOn, testDb, testNs } from '../helpers/real-clusters';
import {
  buildCoordinatorOnce,
  commandEventually,
  loadShardedSource,
  postCommand,
  postCommandRetrying503,
  receivedCount,
  startCoordinatedWorker,
  startCoordinator,
  startRedis,
  type RedisServer,
  type StartedApp,
} from './support/coordinator-harness';
import {
  SYNCER,
  closeClients,
  connect,
  copyDone,
  outputOf,
  startShardedCluster,
  steps,
  waitForDocument,
  type ShardedCluster,
} from './support/harness';

/**
 * A sharded → sharded migration driven only through the coordinator's API, every piece a real
 * process: redis-server (with a password), emulated sharded clusters (2 source shards, 3
 * destination shards), two workers joined with --redis --id <shard>, one coordinator. Commands
 * before the workers are there are refused by name; a duplicated start is applied once; Redis is
 * killed mid-sync (the coordinator answers 503, the workers keep syncing) and restarted (commands
 * work again); commit ends with a byte-equal destination.
 */
describeOn('shardedClusters')(
  'coordinator: a sharded migration through one API, with Redis killed mid-sync',
  () => {
    let redis: RedisServer;
    let source: ShardedCluster;
    let destination: ShardedCluster;
    let src: MongoClient;
    let dst: MongoClient;
    let coordinator: StartedApp;
    const workers = new Map<string, StartedApp>();
    let shardIds: string[];
    let documents: number;
    const step = steps(120_000);
    const START = { source: 'cluster0', destination: 'cluster1' };

    beforeAll(async () => {
      buildCoordinatorOnce();
      [redis, source, destination] = await Promise.all([
        startRedis(),
        startShardedCluster('src', 2, true),
        startShardedCluster('dst', 3, true),
      ]);
      [src, dst] = await Promise.all([
        connect(source.uriFor(SYNCER)),
        connect(destination.uriFor(SYNCER)),
      ]);
      shardIds = source.shards.map((s) => s._id).sort();
      documents = await loadShardedSource(src, 3_000);
    }, 180_000);

    afterAll(async () => {
      await closeClients();
      await stopAllProcesses();
    }, 60_000);

    const launchWorker = async (id: string): Promise<void> => {
      workers.set(
        id,
        await startCoordinatedWorker(
          source.uriFor(SYNCER),
          destination.uriFor(SYNCER),
          redis.url,
          id,
        ),
      );
    };

    step('refuses commands while no worker, then too few workers, have joined', async () => {
      coordinator = await startCoordinator(
        source.uriFor(SYNCER),
        destination.uriFor(SYNCER),
        redis.url,
        { id: 'coord-a' },
      );
      await coordinator.process.waitForJsonLine(
        (r) => r.msg === 'leading the coordinator replicas',
      );
      const none = await commandEventually(coordinator.api, 'start', 'early-1', 10_000, START);
      expect(none.status).toBe(409);
      expect(none.body.error).toBe('NoWorkersRegistered');
      await launchWorker(shardIds[0]);
      await coordinator.api.waitFor(
        'the first worker in progress',
        (p) => ((p as unknown as { instances?: unknown[] }).instances ?? []).length === 1,
      );
      const one = await postCommand(coordinator.api, 'start', START, 'early-2');
      expect(one.status).toBe(409);
      expect(one.body.error).toBe('WorkersMissing');
      expect(one.body.errorDescription).toContain(shardIds[1]);
      await launchWorker(shardIds[1]);
      await coordinator.api.waitFor(
        'both workers in progress',
        (p) => ((p as unknown as { instances?: unknown[] }).instances ?? []).length === 2,
      );
    });

    step('starts every worker once, even when the start is sent three times', async () => {
      const results = await Promise.all(
        [0, 1].map(() => postCommandRetrying503(coordinator.api, 'start', START, 'start-1')),
      );
      for (const result of results) {
        expect(result).toMatchObject({ status: 200, body: { success: true } });
      }
      expect(await postCommand(coordinator.api, 'start', START, 'start-1')).toMatchObject({
        status: 200,
      });
      for (const worker of workers.values()) expect(receivedCount(worker, 'start-1')).toBe(1);
      const progress = await coordinator.api.progress();
      expect(progress.state).toBe('RUNNING');
      expect(progress.syncID).toBe('coord-a');
      expect(progress.coordinatorID).toBe('coord-a');
      // A coordinated worker's own API serves progress but refuses commands.
      const direct = await workers.get(shardIds[0])!.api.post('pause');
      expect(direct).toMatchObject({ status: 409, body: { error: 'CommandsThroughCoordinator' } });
    });

    step('merges progress: the whole copy and each instance', async () => {
      const done = await coordinator.api.waitFor('the copy on every worker', copyDone);
      const all = done as unknown as {
        instances: Array<{ id: string; missing: boolean; progress: { state: string } | null }>;
        collectionCopy: { estimatedCopiedBytes: number; estimatedTotalBytes: number };
      };
      expect(all.instances.map((i) => i.id)).toEqual(shardIds);
      expect(all.instances.every((i) => !i.missing && i.progress !== null)).toBe(true);
      expect(all.collectionCopy.estimatedCopiedBytes).toBe(all.collectionCopy.estimatedTotalBytes);
      for (const key of [
        'canWrite',
        'info',
        'lagTimeSeconds',
        'totalEventsApplied',
        'directionMapping',
      ])
        expect(done).toHaveProperty(key);
    });

    step('pauses and resumes every worker through the coordinator', async () => {
      const pause = await postCommandRetrying503(coordinator.api, 'pause', {}, 'pause-1');
      if (pause.status !== 200)
        throw new Error(`pause answered ${pause.status}: ${JSON.stringify(pause.body)}`);
      const paused = await coordinator.api.progress();
      expect(paused.state).toBe('PAUSED');
      expect(paused.lagTimeSeconds).toBeNull();
      expect((await postCommand(coordinator.api, 'resume', {}, 'resume-1')).status).toBe(200);
      await coordinator.api.waitFor('RUNNING again', (p) => p.state === 'RUNNING');
    });

    step('Redis down: the coordinator answers 503, the workers keep syncing', async () => {
      redis.process.child.kill('SIGKILL');
      await redis.process.waitForExit(10_000);
      await redis.process.stop();
      const deadline = Date.now() + 20_000;
      let progress = await coordinator.api.progressResult();
      while (progress.status !== 503 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        progress = await coordinator.api.progressResult();
      }
      expect(progress).toMatchObject({ status: 503, body: { error: 'RedisUnavailable' } });
      const pause = await postCommand(coordinator.api, 'pause', {}, 'pause-during-outage');
      expect(pause.status).toBe(503);
      expect(['RedisUnavailable', 'NotLeader']).toContain(pause.body.error);
      await src
        .db(testDb('crm'))
        .collection<{ _id: unknown }>('notes')
        .insertOne({ _id: 'during-outage' });
      await src
        .db(testDb('app'))
        .collection<{ _id: unknown; region: string; total: number }>('orders')
        .insertOne({ _id: 900_001, region: 'us', total: 1 });
      await waitForDocument(dst, testNs('crm.notes'), 'during-outage');
      await waitForDocument(dst, testNs('app.orders'), 900_001);
      documents += 2;
    });

    step('Redis back: workers rejoin, commands work again, commit is byte-equal', async () => {
      redis = await startRedis(redis.port, redis.password);
      await coordinator.api.waitFor(
        'both workers reporting again',
        (p) => {
          const instances =
            (p as unknown as { instances?: Array<{ missing: boolean }> }).instances ?? [];
          return instances.length === 2 && instances.every((i) => !i.missing) && p.canCommit;
        },
        60_000,
      );
      const commit = await commandEventually(coordinator.api, 'commit', 'commit-1');
      expect(commit).toMatchObject({ status: 200, body: { success: true } });
      await coordinator.api.waitFor('COMMITTED', (p) => p.state === 'COMMITTED', 90_000);
      const report = await compareClusters(src, dst, { databases: [testDb('app'), testDb('crm')] });
      expect(report.differences).toEqual([]);
      expect(report.documents).toBe(documents);
    });

    step('never prints a password (Redis or MongoDB)', async () => {
      for (const app of [coordinator, ...workers.values()]) {
        const output = outputOf(app.process);
        expect(output).not.toContain(redis.password);
        expect(output).not.toContain(SYNCER.password);
      }
    });
  },
);
