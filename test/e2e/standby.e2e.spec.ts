import type { MongoClient } from 'mongodb';
import { BackgroundWriter } from '../../scripts/lib/background-writer';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { loadSampleStore } from '../../scripts/lib/sample-data';
import { spawnProcess, stopAllProcesses } from '../helpers/processes';
import { describeOn } from '../helpers/real-clusters';
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
  APP,
  SYNCER,
  WORKER,
  WorkerApi,
  closeClients,
  connect,
  sleep,
  startShardedCluster,
  type Progress,
  type ShardedCluster,
} from './support/harness';

/**
 * Issue 23 item 4: standby workers. A 2-shard source synced to a 2-shard destination through the
 * coordinator, each source shard with an active worker and a standby (`--standby`, same `--id`),
 * the application writing all along. The active worker of a shard is SIGKILLed during the copy,
 * during change application and during the commit (alternating shards): each time the standby
 * takes the shard over within a few seconds (the claim stale by the destination's clock: renew
 * 1 s, stale 4 s), resumes from the checkpoint, and a new standby is started for that shard. The
 * commit goes through the coordinator, the destination ends byte-equal to the source, and the
 * coordinator's progress shows which instance is active and which are standby per shard.
 */

interface StandbyView {
  id: string;
  instance: string | null;
  missing: boolean;
}
interface InstanceView {
  id: string;
  status: string;
  missing: boolean;
  role?: string;
  instance?: string | null;
  standbys?: StandbyView[];
}
const instancesOf = (p: Progress): InstanceView[] =>
  (p as unknown as { instances?: InstanceView[] }).instances ?? [];

interface Member {
  app: StartedApp;
  standby: boolean;
}

describeOn('shardedClusters')('standby workers take a killed shard worker over in seconds', () => {
  let redis: RedisServer;
  let source: ShardedCluster;
  let destination: ShardedCluster;
  let src: MongoClient;
  let dst: MongoClient;
  let coordinator: StartedApp;
  let writer: BackgroundWriter;
  let shardIds: string[];
  /** Per shard: its active worker and its standby. */
  const members = new Map<string, { active: Member; standby: Member }>();
  const takeovers: Array<{
    shard: string;
    phase: string;
    ms: number;
    activeAgainMs: number;
    victimState: string | undefined;
  }> = [];

  afterAll(async () => {
    await writer?.stop().catch(() => undefined);
    await closeClients();
    await stopAllProcesses();
  }, 60_000);

  const startStandby = async (id: string): Promise<StartedApp> => {
    const args = [WORKER, '--cluster0', source.uriFor(SYNCER), '--cluster1'];
    args.push(destination.uriFor(SYNCER), '--port', '0', '--redis', redis.url, '--id', id);
    args.push('--standby');
    const worker = spawnProcess('node', args);
    const listening = await worker.waitForJsonLine((r) => r.msg === 'worker listening');
    return { process: worker, api: new WorkerApi(listening.url as string) };
  };

  const everyShardCovered = (p: Progress) => {
    const instances = instancesOf(p);
    return (
      instances.length === 2 &&
      instances.every(
        (i) => !i.missing && i.status === 'active' && (i.standbys ?? []).some((s) => !s.missing),
      )
    );
  };

  /** The standby's own API while standby: role standby, commands refused by name. */
  const expectStandbyApi = async (app: StartedApp, state: string) => {
    // It reads the job's state from the destination every second.
    const own = await app.api.waitFor(`standby says ${state}`, (p) => p.state === state, 10_000);
    expect(own).toMatchObject({ role: 'standby', state, standby: expect.any(Object) });
    const refused = await app.api.post('pause', {});
    expect(refused).toMatchObject({ status: 409, body: { error: 'WorkerIsStandby' } });
  };

  /**
   * SIGKILLs the active worker of `shard`; measures until its standby logs the takeover and
   * until the coordinator shows the shard active again; starts a new standby for the shard.
   */
  const killActive = async (shard: string, phase: string) => {
    const pair = members.get(shard)!;
    const before = pair.standby.app.process.stdoutLines.some((l) =>
      l.includes('standby took its shard over'),
    );
    expect(before).toBe(false); // never took over from a live active worker
    const standbyOwn = await pair.standby.app.api.progress();
    const successor = (standbyOwn as unknown as { standby: { instance: string } }).standby.instance;
    const victimState = (await pair.active.app.api.progress().catch(() => null))?.state;
    const killedAt = Date.now();
    pair.active.app.process.child.kill('SIGKILL');
    await pair.active.app.process.waitForExit(10_000);
    await pair.standby.app.process.waitForJsonLine(
      (r) => r.msg === 'standby took its shard over',
      30_000,
    );
    const ms = Date.now() - killedAt;
    await coordinator.api.waitFor(
      `shard ${shard} active again`,
      (p) =>
        instancesOf(p).some(
          (i) => i.id === shard && i.status === 'active' && !i.missing && i.instance === successor,
        ),
      60_000,
      100,
    );
    const activeAgainMs = Date.now() - killedAt;
    takeovers.push({ shard, phase, ms, activeAgainMs, victimState });
    console.log(
      `[standby] ${phase} (the killed worker was ${victimState}): shard ${shard} taken over by its standby ${ms} ms after the SIGKILL; the coordinator shows it active after ${activeAgainMs} ms`,
    );
    // It resumed the persisted sync, as a restarted worker does.
    await pair.standby.app.process.waitForJsonLine((r) => r.msg === 'persisted sync restored');
    await pair.active.app.process.stop();
    // The former standby is the active worker now; a new standby stands by it.
    members.set(shard, {
      active: { ...pair.standby, standby: false },
      standby: { app: await startStandby(shard), standby: true },
    });
  };

  it('copy, change application and commit survive SIGKILLs of active workers; byte-equal', async () => {
    buildCoordinatorOnce();
    [redis, source, destination] = await Promise.all([
      startRedis(),
      startShardedCluster('standby-src', 2, true),
      startShardedCluster('standby-dst', 2, true),
    ]);
    [src, dst] = await Promise.all([
      connect(source.uriFor(SYNCER)),
      connect(destination.uriFor(SYNCER)),
    ]);
    const app = await connect(source.uriFor(APP));
    shardIds = source.shards.map((s) => s._id).sort();
    await loadShardedSource(src, 4_000);
    await loadSampleStore(app, { customers: 2_000, orders: 8_000, products: 100 });

    coordinator = await startCoordinator(
      source.uriFor(SYNCER),
      destination.uriFor(SYNCER),
      redis.url,
      { id: 'coord-standby' },
    );
    for (const id of shardIds) {
      const active = await startCoordinatedWorker(
        source.uriFor(SYNCER),
        destination.uriFor(SYNCER),
        redis.url,
        id,
      );
      members.set(id, {
        active: { app: active, standby: false },
        standby: { app: await startStandby(id), standby: true },
      });
    }
    const covered = await coordinator.api.waitFor(
      'each shard with an active worker and a standby',
      everyShardCovered,
      60_000,
    );
    for (const instance of instancesOf(covered)) {
      expect(instance).toMatchObject({ role: 'active', instance: expect.any(String) });
      expect(instance.standbys).toHaveLength(1);
      expect(instance.standbys![0]!.instance).not.toBe(instance.instance);
    }
    // Before any sync: the standby says what it is and refuses commands.
    await expectStandbyApi(members.get(shardIds[0]!)!.standby.app, 'IDLE');

    writer = new BackgroundWriter(app, 2_000);
    writer.start(5, 40);
    const started = await commandEventually(coordinator.api, 'start', 'standby-start', 60_000, {
      source: 'cluster0',
      destination: 'cluster1',
      enableUserWriteBlocking: true,
    });
    expect(started).toMatchObject({ status: 200, body: { success: true } });

    // 1. During the copy: shard 0's active worker.
    const first = members.get(shardIds[0]!)!;
    const copying = await first.active.app.api.waitFor(
      'shard 0 copying',
      (p) => p.state === 'RUNNING' && p.info === 'collection copy',
      60_000,
      50,
    );
    expect(copying.info).toBe('collection copy');
    await expectStandbyApi(first.standby.app, 'RUNNING');
    await killActive(shardIds[0]!, 'copy');

    // A plain duplicate (same --id, no --standby) is still refused, and told about --standby.
    const duplicate = await startCoordinatedWorker(
      source.uriFor(SYNCER),
      destination.uriFor(SYNCER),
      redis.url,
      shardIds[1]!,
    );
    const deadline = Date.now() + 30_000;
    let answer = await duplicate.api.progressResult();
    while (answer.body.error !== 'DuplicateShardWorker' && Date.now() < deadline) {
      await sleep(200);
      answer = await duplicate.api.progressResult();
    }
    expect(answer).toMatchObject({ status: 409, body: { error: 'DuplicateShardWorker' } });
    expect(answer.body.errorDescription).toMatch(/--standby/);
    await duplicate.process.stop();

    // 2. During change application: shard 1's active worker.
    const second = members.get(shardIds[1]!)!;
    await second.active.app.api.waitFor(
      'shard 1 applying change events',
      (p) => p.state === 'RUNNING' && p.info === 'change event application',
      120_000,
    );
    await sleep(1_000);
    await killActive(shardIds[1]!, 'change event application');

    await coordinator.api.waitFor(
      'every shard active with a standby, canCommit',
      (p) => everyShardCovered(p) && p.canCommit,
      120_000,
    );

    // 3. During the commit: shard 0's active worker (the former standby).
    const commit = await commandEventually(coordinator.api, 'commit', 'standby-commit', 60_000);
    expect(commit).toMatchObject({ status: 200, body: { success: true } });
    await killActive(shardIds[0]!, 'commit');
    const committed = await coordinator.api.waitFor(
      'COMMITTED',
      (p) => p.state === 'COMMITTED',
      120_000,
      250,
    );
    expect(committed.state).toBe('COMMITTED');
    await writer.stop();

    console.log(
      `[standby] takeovers: ${takeovers.map((t) => `${t.phase} (shard ${t.shard}): ${t.ms} ms, active again after ${t.activeAgainMs} ms`).join('; ')}; ` +
        `application writes acknowledged: ${writer.stats.inserts} inserts, ${writer.stats.updates} updates, ${writer.stats.deletes} deletes`,
    );
    expect(takeovers.map((t) => t.victimState)).toEqual(['RUNNING', 'RUNNING', 'COMMITTING']);
    expect(takeovers).toHaveLength(3);
    // "Within a few seconds": stale after 4 s of the last renewal (renewed every second).
    for (const t of takeovers) expect(t.ms).toBeLessThan(8_000);
    expect(writer.stats.lastError).toBe('UserWritesBlocked');
    const report = await compareClusters(src, dst, {});
    expect(report.differences).toEqual([]);
    expect(report.documents).toBeGreaterThan(10_000);
  }, 300_000);
});
