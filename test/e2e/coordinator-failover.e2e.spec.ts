import type { MongoClient } from 'mongodb';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { spawnProcess, stopAllProcesses } from '../helpers/processes';
import { describeOn, testDb } from '../helpers/real-clusters';
import {
  COORDINATOR,
  buildCoordinatorOnce,
  commandEventually,
  freePort,
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
  startShardedCluster,
  steps,
  type ShardedCluster,
} from './support/harness';

/**
 * Two coordinator replicas over one Redis (lease TTL 3 s): one leads, the other forwards
 * commands to it. The leader is SIGKILLed mid-sync; the survivor takes the lease within the TTL
 * with a higher fencing epoch (recorded on the destination) and drives pause, resume and commit.
 */
describeOn('shardedClusters')('coordinator replicas: the leader SIGKILLed mid-sync', () => {
  let redis: RedisServer;
  let source: ShardedCluster;
  let destination: ShardedCluster;
  let src: MongoClient;
  let dst: MongoClient;
  const replicas = new Map<string, StartedApp>();
  const workers: StartedApp[] = [];
  let documents: number;
  let leaderId: string;
  let followerId: string;
  const step = steps(120_000);
  const ENV = { CLUSTER_SYNC_LEASE_TTL_MS: '3000' };

  beforeAll(async () => {
    buildCoordinatorOnce();
    [redis, source, destination] = await Promise.all([
      startRedis(),
      startShardedCluster('src', 2, false),
      startShardedCluster('dst', 2, false),
    ]);
    [src, dst] = await Promise.all([connect(source.uri), connect(destination.uri)]);
    documents = await loadShardedSource(src, 2_000);
  }, 180_000);

  afterAll(async () => {
    await closeClients();
    await stopAllProcesses();
  }, 60_000);

  step('an unreachable Redis at launch: one line, exit code 2, no password', async () => {
    const port = await freePort();
    const url = `redis://:Never-Shown-pw@127.0.0.1:${port}`;
    const run = spawnProcess('node', [
      COORDINATOR,
      '--cluster0',
      source.uri,
      '--cluster1',
      destination.uri,
      '--redis',
      url,
    ]);
    expect(await run.waitForExit(30_000)).toEqual({ code: 2, signal: null });
    expect(run.stderr().trim().split('\n')).toHaveLength(1);
    expect(run.stderr()).toContain('cannot reach Redis at redis://<credentials>@127.0.0.1');
    expect(run.stderr() + run.stdout()).not.toContain('Never-Shown-pw');
  });

  step('two replicas: one leads, the follower forwards commands to it', async () => {
    for (const id of ['coord-a', 'coord-b']) {
      replicas.set(
        id,
        await startCoordinator(source.uri, destination.uri, redis.url, { id, env: ENV }),
      );
    }
    for (const shard of source.shards.map((s) => s._id).sort())
      workers.push(await startCoordinatedWorker(source.uri, destination.uri, redis.url, shard));
    const leader = await Promise.race(
      [...replicas].map(async ([id, app]) => {
        await app.process.waitForJsonLine((r) => r.msg === 'leading the coordinator replicas');
        return id;
      }),
    );
    leaderId = leader;
    followerId = leaderId === 'coord-a' ? 'coord-b' : 'coord-a';
    const follower = replicas.get(followerId)!;
    await follower.api.waitFor(
      'both workers seen by the follower',
      (p) => ((p as unknown as { instances?: unknown[] }).instances ?? []).length === 2,
    );
    const start = await commandEventually(follower.api, 'start', 'fo-start', 30_000, {
      source: 'cluster0',
      destination: 'cluster1',
    });
    expect(start).toMatchObject({ status: 200, body: { success: true } });
    const progress = await follower.api.progress();
    expect(progress.state).toBe('RUNNING');
    expect(progress.coordinatorID).toBe(leaderId);
  });

  step('the leader is SIGKILLed: the other replica leads with a higher epoch', async () => {
    await replicas.get(followerId)!.api.waitFor('the copy', copyDone);
    const leader = replicas.get(leaderId)!;
    leader.process.child.kill('SIGKILL');
    await leader.process.waitForExit(10_000);
    await leader.process.stop();
    const survivor = replicas.get(followerId)!;
    await survivor.process.waitForJsonLine(
      (r) => r.msg === 'leading the coordinator replicas' && r.epoch === 2,
      30_000,
    );
    const record = await dst
      .db('sync_reserved_for_internal_use')
      .collection<{ _id: string; epoch: number; leader: string }>('leadership')
      .findOne({ _id: 'coordinator' });
    expect(record).toMatchObject({ epoch: 2, leader: followerId });
  });

  step('commands work through the new leader, each applied once', async () => {
    const survivor = replicas.get(followerId)!;
    expect((await commandEventually(survivor.api, 'pause', 'fo-pause')).status).toBe(200);
    expect((await postCommand(survivor.api, 'pause', {}, 'fo-pause')).status).toBe(200);
    expect((await survivor.api.progress()).state).toBe('PAUSED');
    expect((await postCommand(survivor.api, 'resume', {}, 'fo-resume')).status).toBe(200);
    for (const worker of workers) {
      expect(receivedCount(worker, 'fo-start')).toBe(1);
      expect(receivedCount(worker, 'fo-pause')).toBe(1);
    }
    await survivor.api.waitFor('canCommit', (p) => p.state === 'RUNNING' && p.canCommit);
    expect((await postCommand(survivor.api, 'commit', {}, 'fo-commit')).status).toBe(200);
    await survivor.api.waitFor('COMMITTED', (p) => p.state === 'COMMITTED', 90_000);
    const report = await compareClusters(src, dst, { databases: [testDb('app'), testDb('crm')] });
    expect(report.differences).toEqual([]);
    expect(report.documents).toBe(documents);
  });
});
