import Redis from 'ioredis';
import type { MongoClient } from 'mongodb';
import { BackgroundWriter } from '../../scripts/lib/background-writer';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { loadSampleStore, rng } from '../../scripts/lib/sample-data';
import { stopAllProcesses } from '../helpers/processes';
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
  closeClients,
  connect,
  outputOf,
  sleep,
  startShardedCluster,
  type Progress,
  type ShardedCluster,
} from './support/harness';
import { describeOn } from '../helpers/real-clusters';

/**
 * Issue 13 point 2 with the coordinator: a 2-shard source synced to a 2-shard destination by two
 * workers (one per source shard) under a coordinator over Redis, the application writing all
 * along. In turn a worker, the coordinator, the other worker and Redis are SIGKILLed at random
 * moments — during the copy and change application, then during the commit — and restarted
 * (Redis empty: it keeps no state the sync needs). The commit goes through the coordinator; at
 * the end the destination equals the source byte for byte, and Redis holds no connection
 * string or password (workers and coordinator exchange commands and progress there, never
 * credentials).
 *
 * COORDINATOR_CRASH_KILLS (default 8) and CRASH_SEED make longer or reproducible runs.
 */
const KILLS = Number(process.env.COORDINATOR_CRASH_KILLS ?? 8);
const SEED = Number(process.env.CRASH_SEED ?? Date.now() % 100_000);
const BEFORE_COMMIT = Math.ceil(KILLS / 2);
const ENV = { CLUSTER_SYNC_WORKER_STALE_MS: '2000' };

type Victim = 'worker0' | 'coordinator' | 'worker1' | 'redis';
const ROTATION: Victim[] = ['worker0', 'coordinator', 'worker1', 'redis'];

interface Instance {
  id: string;
  missing: boolean;
}
const instancesOf = (p: Progress): Instance[] =>
  (p as unknown as { instances?: Instance[] }).instances ?? [];

describeOn('shardedClusters')(
  `crash loop through the coordinator: ${KILLS} SIGKILLs of workers, coordinator and Redis (seed ${SEED})`,
  () => {
    let redis: RedisServer;
    let source: ShardedCluster;
    let destination: ShardedCluster;
    let src: MongoClient;
    let dst: MongoClient;
    let coordinator: StartedApp;
    const workers = new Map<string, StartedApp>();
    let shardIds: string[];
    let writer: BackgroundWriter;
    const random = rng(SEED);
    const killed: string[] = [];
    const outputs: string[] = [];

    afterAll(async () => {
      await writer?.stop().catch(() => undefined);
      await closeClients();
      await stopAllProcesses();
    }, 60_000);

    const launchCoordinator = async () => {
      coordinator = await startCoordinator(
        source.uriFor(SYNCER),
        destination.uriFor(SYNCER),
        redis.url,
        { id: 'coord-crash', env: ENV },
      );
    };
    const launchWorker = async (id: string) => {
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
    const allReporting = (p: Progress) => {
      const instances = instancesOf(p);
      return instances.length === 2 && instances.every((i) => !i.missing);
    };

    const kill = async (victim: Victim) => {
      const app =
        victim === 'redis'
          ? redis.process
          : victim === 'coordinator'
            ? coordinator.process
            : workers.get(shardIds[victim === 'worker0' ? 0 : 1]!)!.process;
      const state = (await coordinator.api.progress().catch(() => null))?.state ?? 'unknown';
      outputs.push(outputOf(app));
      app.child.kill('SIGKILL');
      expect(await app.waitForExit(10_000)).toEqual({ code: null, signal: 'SIGKILL' });
      await app.stop();
      if (victim === 'redis') redis = await startRedis(redis.port, redis.password);
      else if (victim === 'coordinator') await launchCoordinator();
      else await launchWorker(shardIds[victim === 'worker0' ? 0 : 1]!);
      killed.push(`${victim}@${state}`);
    };

    const killSome = async (count: number, minMs: number, maxMs: number) => {
      for (let k = 0; k < count; k++) {
        await sleep(minMs + Math.floor(random() * (maxMs - minMs)));
        await kill(ROTATION[killed.length % ROTATION.length]!);
      }
    };

    it('commits byte-equal through every kill, and Redis holds no credentials', async () => {
      buildCoordinatorOnce();
      [redis, source, destination] = await Promise.all([
        startRedis(),
        startShardedCluster('crash-src', 2, true),
        startShardedCluster('crash-dst', 2, true),
      ]);
      [src, dst] = await Promise.all([
        connect(source.uriFor(SYNCER)),
        connect(destination.uriFor(SYNCER)),
      ]);
      const app = await connect(source.uriFor(APP));
      shardIds = source.shards.map((s) => s._id).sort();
      await loadShardedSource(src, 2_000);
      await loadSampleStore(app, { customers: 1_000, orders: 4_000, products: 100 });

      await launchCoordinator();
      for (const id of shardIds) await launchWorker(id);
      await coordinator.api.waitFor('both workers reporting', allReporting, 60_000);
      writer = new BackgroundWriter(app, 1_000);
      writer.start(5, 40);
      const started = await commandEventually(coordinator.api, 'start', 'crash-start', 60_000, {
        source: 'cluster0',
        destination: 'cluster1',
        enableUserWriteBlocking: true,
      });
      expect(started).toMatchObject({ status: 200, body: { success: true } });

      // Copy and change application, the writer busy.
      await killSome(BEFORE_COMMIT, 500, 3_000);
      await coordinator.api.waitFor(
        'every worker back and canCommit',
        (p) => allReporting(p) && p.canCommit,
        180_000,
      );

      // The commit, requested once (resent with the same id while it is not done: a command
      // lost with a killed Redis or coordinator is applied once all the same).
      const commit = await commandEventually(coordinator.api, 'commit', 'crash-commit', 60_000);
      expect(commit.status).toBe(200);
      await killSome(KILLS - BEFORE_COMMIT, 200, 2_000);
      const deadline = Date.now() + 240_000;
      let last: Progress | null = null;
      while (Date.now() < deadline) {
        last = await coordinator.api.progress().catch(() => null);
        if (last?.state === 'COMMITTED' && allReporting(last)) break;
        if (last && !['RUNNING', 'COMMITTING'].includes(last.state)) break;
        await commandEventually(coordinator.api, 'commit', 'crash-commit', 10_000).catch(
          () => undefined,
        );
        await sleep(2_000);
      }
      expect(last?.state).toBe('COMMITTED');
      await writer.stop();

      console.log(
        `[crash-loop/coordinator] seed ${SEED}: ${killed.length} kills survived (${killed.join(', ')}); ` +
          `application writes acknowledged: ${writer.stats.inserts} inserts, ` +
          `${writer.stats.updates} updates, ${writer.stats.deletes} deletes`,
      );
      expect(killed).toHaveLength(KILLS);
      expect(writer.stats.lastError).toBe('UserWritesBlocked');
      const report = await compareClusters(src, dst, {});
      expect(report.differences).toEqual([]);
      expect(report.documents).toBeGreaterThan(5_000);

      // Redis: every key and value the coordinator and workers left there.
      const client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
      await client.connect();
      const dump: string[] = [];
      try {
        let cursor = '0';
        do {
          const [next, keys] = await client.scan(cursor, 'COUNT', 500);
          cursor = next;
          for (const key of keys) dump.push(key, await valueOf(client, key));
        } while (cursor !== '0');
      } finally {
        client.disconnect();
      }
      const stored = dump.join('\n');
      expect(dump.length).toBeGreaterThan(0);
      for (const secret of [SYNCER.password, APP.password, redis.password, 'mongodb://']) {
        expect(stored).not.toContain(secret);
      }
      for (const output of [
        ...outputs,
        outputOf(coordinator.process),
        ...[...workers.values()].map((w) => outputOf(w.process)),
      ]) {
        expect(output).not.toContain(SYNCER.password);
        expect(output).not.toContain(redis.password);
      }
    }, 900_000);
  },
);

/** A key's value as text, whatever its Redis type (BullMQ uses hashes, lists, sets, streams). */
async function valueOf(client: Redis, key: string): Promise<string> {
  const type = await client.type(key);
  switch (type) {
    case 'string':
      return (await client.get(key)) ?? '';
    case 'hash':
      return JSON.stringify(await client.hgetall(key));
    case 'list':
      return JSON.stringify(await client.lrange(key, 0, -1));
    case 'set':
      return JSON.stringify(await client.smembers(key));
    case 'zset':
      return JSON.stringify(await client.zrange(key, 0, -1, 'WITHSCORES'));
    case 'stream':
      return JSON.stringify(await client.xrange(key, '-', '+'));
    default:
      return `(${type})`;
  }
}
