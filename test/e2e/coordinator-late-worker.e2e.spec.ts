import type { MongoClient } from 'mongodb';
import { Redis } from 'ioredis';
import { stopAllProcesses } from '../helpers/processes';
import { describeOn } from '../helpers/real-clusters';
import {
  buildCoordinatorOnce,
  commandEventually,
  loadShardedSource,
  postCommand,
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
  sleep,
  startShardedCluster,
  steps,
  type Progress,
  type ShardedCluster,
} from './support/harness';

interface Instance {
  id: string;
  pendingCommands: number | null;
}
const instancesOf = (p: Progress): Instance[] =>
  ((p as unknown as { instances?: Instance[] }).instances ?? []) as Instance[];

/**
 * BullMQ as designed (issue 23, item 1): a command that times out is withdrawn from every
 * queue. A worker frozen (SIGSTOP) while `pause` is sent does not take it; the call answers
 * CommandPending naming it, its queue is emptied, and once it thaws it never runs that pause
 * (before the rework the job stayed queued and a late worker took it alone).
 */
describeOn('shardedClusters')('coordinator: a late worker never runs a withdrawn command', () => {
  let redis: RedisServer;
  let raw: Redis;
  let source: ShardedCluster;
  let destination: ShardedCluster;
  let src: MongoClient;
  let coordinator: StartedApp;
  const workers = new Map<string, StartedApp>();
  let shardIds: string[];
  const step = steps(120_000);

  beforeAll(async () => {
    buildCoordinatorOnce();
    [redis, source, destination] = await Promise.all([
      startRedis(),
      startShardedCluster('src', 2, false),
      startShardedCluster('dst', 2, false),
    ]);
    raw = new Redis({ port: redis.port, password: redis.password, host: '127.0.0.1' });
    src = await connect(source.uri);
    await connect(destination.uri);
    shardIds = source.shards.map((s) => s._id).sort();
    await loadShardedSource(src, 500);
  }, 180_000);

  afterAll(async () => {
    for (const worker of workers.values()) worker.process.child.kill('SIGCONT');
    raw?.disconnect();
    await closeClients();
    await stopAllProcesses();
  }, 60_000);

  step('a pause the frozen worker did not take is withdrawn and never runs late', async () => {
    coordinator = await startCoordinator(source.uri, destination.uri, redis.url, {
      id: 'coord-late',
      env: { CLUSTER_SYNC_COMMAND_TIMEOUT_MS: '5000' },
    });
    // The frozen worker must outlive its freeze (longer than the command timeout): a claim
    // lease longer than the default's 4.8 s, as an operator expecting such pauses would set.
    const claim = { SYNC_CLAIM_STALE_MS: '15000', SYNC_CLAIM_RENEW_MS: '2000' };
    for (const id of shardIds)
      workers.set(
        id,
        await startCoordinatedWorker(source.uri, destination.uri, redis.url, id, claim),
      );
    await coordinator.api.waitFor(
      'both workers registered',
      (p) => instancesOf(p).filter((i) => i.pendingCommands !== null).length === 2,
    );
    const started = await commandEventually(coordinator.api, 'start', 'late-start', 60_000, {
      source: 'cluster0',
      destination: 'cluster1',
    });
    expect(started).toMatchObject({ status: 200, body: { success: true } });
    await coordinator.api.waitFor('copy done', (p) => copyDone(p) && p.canCommit, 90_000);

    const [awake, frozenId] = shardIds;
    const frozen = workers.get(frozenId)!;
    frozen.process.child.kill('SIGSTOP');
    const paused = await postCommand(coordinator.api, 'pause', {}, 'late-pause');
    expect(paused.status).toBe(503);
    expect(paused.body.error).toBe('CommandPending');
    expect(String(paused.body.errorDescription)).toContain(frozenId);
    // Withdrawn from the frozen worker's queue (nothing waiting there any more).
    const queued = await raw.lrange(`cluster-sync:sync.commands.${frozenId}:wait`, 0, -1);
    expect(queued).toEqual([]);
    expect(await raw.zcard(`cluster-sync:sync.commands.${frozenId}:delayed`)).toBe(0);
    expect(receivedCount(workers.get(awake)!, 'late-pause')).toBe(1);

    frozen.process.child.kill('SIGCONT');
    await coordinator.api.waitFor(
      'the thawed worker reporting, nothing queued for it',
      (p) => instancesOf(p).find((i) => i.id === frozenId)?.pendingCommands === 0,
      30_000,
    );
    await sleep(3_000);
    expect(receivedCount(frozen, 'late-pause')).toBe(0);
    expect((await frozen.api.progress()).state).toBe('RUNNING');
    expect((await workers.get(awake)!.api.progress()).state).toBe('PAUSED');
  });
});
