import type { MongoClient } from 'mongodb';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { stopAllProcesses } from '../helpers/processes';
import { describeOn, testDb, testNs } from '../helpers/real-clusters';
import {
  buildCoordinatorOnce,
  commandEventually,
  loadShardedSource,
  startCoordinatedWorker,
  startCoordinator,
  startRedis,
  receivedCount,
  type RedisServer,
  type StartedApp,
} from './support/coordinator-harness';
import {
  closeClients,
  connect,
  copyDone,
  startShardedCluster,
  steps,
  waitForDocument,
  type Progress,
  type ShardedCluster,
} from './support/harness';

interface Instance {
  id: string;
  missing: boolean;
  progress: { state: string } | null;
}
interface Merged {
  instances?: Instance[];
  missingInstances?: string[];
  collectionCopy?: { estimatedCopiedBytes: number; estimatedTotalBytes: number };
}
const merged = (p: Progress): Merged => p as unknown as Merged;

/**
 * The workers of a coordinated sync (2 source shards, 3 destination shards, one worker per
 * source shard, one coordinator): a start the workers' engines refuse starts none (every worker
 * validates it first); a worker SIGKILLed while it applies change events is shown missing —
 * never dropped from the sums — and commit is not offered; restarted with the same arguments it
 * rejoins (taking its shard claim over once the dead one's is stale), and commit through the
 * coordinator ends byte-equal.
 */
describeOn('shardedClusters')(
  'coordinator: start validated on every worker; a worker SIGKILLed and restarted',
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
    const ENV = { CLUSTER_SYNC_WORKER_STALE_MS: '2000' };

    beforeAll(async () => {
      buildCoordinatorOnce();
      [redis, source, destination] = await Promise.all([
        startRedis(),
        startShardedCluster('src', 2, false),
        startShardedCluster('dst', 3, false),
      ]);
      [src, dst] = await Promise.all([connect(source.uri), connect(destination.uri)]);
      shardIds = source.shards.map((s) => s._id).sort();
      documents = await loadShardedSource(src, 2_000);
    }, 180_000);

    afterAll(async () => {
      await closeClients();
      await stopAllProcesses();
    }, 60_000);

    const launchWorker = async (id: string): Promise<void> => {
      workers.set(id, await startCoordinatedWorker(source.uri, destination.uri, redis.url, id));
    };

    step('a start every worker’s engine refuses starts none; a valid one starts all', async () => {
      coordinator = await startCoordinator(source.uri, destination.uri, redis.url, {
        id: 'coord-w',
        env: ENV,
      });
      for (const id of shardIds) await launchWorker(id);
      await coordinator.api.waitFor(
        'both workers reporting',
        (p) => (merged(p).instances ?? []).filter((i) => i.progress !== null).length === 2,
      );
      // Cluster-dependent: 2 source shards, 3 destination shards — no reversible sync.
      const refused = await commandEventually(coordinator.api, 'start', 'bad-start', 30_000, {
        ...START,
        reversible: true,
        enableUserWriteBlocking: true,
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe('ReversibleUnsupportedShardCountMismatch');
      for (const worker of workers.values()) {
        expect(receivedCount(worker, 'bad-start')).toBe(0); // validated, never sent start
        expect(
          worker.process.stdoutLines.some(
            (l) => l.includes('"start validation received"') && l.includes('"bad-start"'),
          ),
        ).toBe(true);
      }
      expect((await coordinator.api.progress()).state).toBe('IDLE');
      const jobs = await dst
        .db('sync_reserved_for_internal_use')
        .collection('jobs')
        .countDocuments();
      expect(jobs).toBe(0);

      // A 503 (CommandPending on a loaded machine) is resent with the same command id, as a
      // client must; the start still applies exactly once on each worker (checked below).
      const started = await commandEventually(
        coordinator.api,
        'start',
        'good-start',
        60_000,
        START,
      );
      expect(started).toMatchObject({ status: 200, body: { success: true } });
      for (const worker of workers.values()) expect(receivedCount(worker, 'good-start')).toBe(1);
      expect((await coordinator.api.progress()).state).toBe('RUNNING');
    });

    step(
      'a worker SIGKILLed while applying change events is shown missing, still summed',
      async () => {
        const before = await coordinator.api.waitFor(
          'the copy done and commit possible',
          (p) => copyDone(p) && p.canCommit,
          90_000,
        );
        const copied = merged(before).collectionCopy!;
        const victim = workers.get(shardIds[1])!;
        victim.process.child.kill('SIGKILL');
        await victim.process.waitForExit(10_000);
        await victim.process.stop();
        // Writes meanwhile: hashed _ids land on both workers' shares.
        const users = src.db(testDb('app')).collection<{ _id: number; uid: string }>('users');
        await users.insertMany(
          Array.from({ length: 40 }, (_, k) => ({ _id: 500_000 + k, uid: `k${k}` })),
        );
        documents += 40;
        const missing = await coordinator.api.waitFor(
          'the killed worker missing',
          (p) => (merged(p).missingInstances ?? []).includes(shardIds[1]),
          30_000,
        );
        const view = merged(missing);
        expect(view.instances!.map((i) => i.id)).toEqual(shardIds);
        expect(view.instances!.find((i) => i.id === shardIds[1])).toMatchObject({ missing: true });
        expect(view.instances!.find((i) => i.id === shardIds[0])).toMatchObject({ missing: false });
        expect(missing.canCommit).toBe(false);
        // Its last snapshot stays in the sums: the whole copy is still complete.
        expect(view.collectionCopy).toEqual(copied);
      },
    );

    step('restarted with the same arguments it rejoins; commit is byte-equal', async () => {
      await launchWorker(shardIds[1]);
      await coordinator.api.waitFor(
        'both workers back and commit possible',
        (p) => {
          const instances = merged(p).instances ?? [];
          return instances.length === 2 && instances.every((i) => !i.missing) && p.canCommit;
        },
        60_000,
      );
      for (const k of [0, 13, 39]) await waitForDocument(dst, testNs('app.users'), 500_000 + k);
      const commit = await commandEventually(coordinator.api, 'commit', 'commit-w');
      expect(commit).toMatchObject({ status: 200, body: { success: true } });
      await coordinator.api.waitFor('COMMITTED', (p) => p.state === 'COMMITTED', 90_000);
      const report = await compareClusters(src, dst, { databases: [testDb('app'), testDb('crm')] });
      expect(report.differences).toEqual([]);
      expect(report.documents).toBe(documents);
    });
  },
);
