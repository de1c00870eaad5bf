import { ObjectId, type MongoClient } from 'mongodb';
import { BackgroundWriter } from '../../scripts/lib/background-writer';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { loadSampleStore, rng } from '../../scripts/lib/sample-data';
import { stopAllProcesses } from '../helpers/processes';
import {
  APP,
  SYNCER,
  buildOnce,
  closeClients,
  connect,
  crash,
  outputOf,
  sleep,
  startCluster,
  startWorker,
  tryWrite,
  type Cluster,
  type Progress,
  type StartedWorker,
} from './support/harness';
import { describeOn } from '../helpers/real-clusters';
import { RestoreInvariants } from './support/restore-invariants';

/**
 * Issue 13 point 2, the crash loop: the worker process is SIGKILLed at KILLS random moments
 * spread over the copy, change event application and the commit, with the application writing
 * to the source throughout, and restarted each time. After every restart the restored progress
 * must keep the sync's invariants; at the end the destination equals the source byte for byte,
 * every acknowledged write included, and only the destination takes writes.
 *
 * Sized for CI (20 kills). CRASH_KILLS and CRASH_SEED make longer or reproducible runs, e.g.
 * `CRASH_KILLS=200 CRASH_SEED=7 npx jest test/e2e/crash-loop`.
 */
const KILLS = Number(process.env.CRASH_KILLS ?? 20);
const SEED = Number(process.env.CRASH_SEED ?? Date.now() % 100_000);
const SIZE = { customers: 3_000, orders: 16_000, products: 300 };

/** Shares of the kills per phase: copy, change application, commit. */
const PLAN = {
  copy: Math.round(KILLS * 0.35),
  apply: Math.round(KILLS * 0.4),
  commit: 0,
};
PLAN.commit = KILLS - PLAN.copy - PLAN.apply;

interface Observation {
  kill: number;
  phase: 'copy' | 'apply' | 'commit';
  stateKilled: string;
  stateRestored: string;
  /** Copy percentage at the kill, while the copy was not done (else null). */
  copyPercent: number | null;
}

function copyPercent(p: Progress | null): number | null {
  const copy = p?.collectionCopy;
  if (!p || !copy || p.info !== 'collection copy') return null;
  return Math.floor((100 * copy.estimatedCopiedBytes) / Math.max(1, copy.estimatedTotalBytes));
}

describeOn('replicaSets')(
  `crash loop: ${KILLS} SIGKILLs over copy, change application and commit (seed ${SEED})`,
  () => {
    let source: Cluster;
    let destination: Cluster;
    let sourceAdmin: MongoClient;
    let destinationAdmin: MongoClient;
    let sourceApp: MongoClient;
    let destinationApp: MongoClient;
    let worker: StartedWorker;
    let writer: BackgroundWriter;
    const random = rng(SEED);
    const observations: Observation[] = [];
    /** What every later restore must not go back on. */
    const invariants = new RestoreInvariants();

    afterAll(async () => {
      await writer?.stop().catch(() => undefined);
      await closeClients();
      await stopAllProcesses();
    }, 60_000);

    const launch = async (): Promise<Progress> => {
      worker = await startWorker(source.uriFor(SYNCER), destination.uriFor(SYNCER));
      return worker.api.waitFor(
        'the worker to restore its job',
        (p) => p.state !== 'INITIALIZING',
        120_000,
        20,
      );
    };

    /**
     * Kills, then restarts. Change application and commit kills come at a random moment
     * `[minMs, maxMs)` after the worker restored its job. Copy kills come when the copy reaches a
     * random percentage below `maxPercent` (polled every 10 ms): on a fast machine the whole copy
     * takes well under a second, so a wall-clock delay would often miss it altogether.
     */
    const killAndRestart = async (
      phase: Observation['phase'],
      when: { minMs: number; maxMs: number } | { maxPercent: number },
    ) => {
      let before: Progress | null = null;
      if ('maxPercent' in when) {
        const target = Math.floor(random() * when.maxPercent);
        const deadline = Date.now() + 10_000;
        for (;;) {
          before = await worker.api.progress().catch(() => null);
          const percent = copyPercent(before);
          const copyOver = before !== null && before.canCommit && percent === null;
          if ((percent !== null && percent >= target) || copyOver || Date.now() > deadline) break;
          await sleep(10);
        }
      } else {
        await sleep(when.minMs + Math.floor(random() * (when.maxMs - when.minMs)));
        before = await worker.api.progress().catch(() => null);
      }
      await crash(worker);
      const restored = await launch();
      const kill = observations.length + 1;
      invariants.check(restored as Progress & Record<string, unknown>, kill);
      observations.push({
        kill,
        phase,
        stateKilled: before?.state ?? 'unknown',
        stateRestored: restored.state,
        copyPercent: copyPercent(before),
      });
    };

    it('ends byte-equal with every acknowledged write, through every kill', async () => {
      buildOnce();
      [source, destination] = await Promise.all([
        startCluster('source', true),
        startCluster('destination', true),
      ]);
      [sourceAdmin, destinationAdmin, sourceApp, destinationApp] = await Promise.all([
        connect(source.uriFor(SYNCER)),
        connect(destination.uriFor(SYNCER)),
        connect(source.uriFor(APP)),
        connect(destination.uriFor(APP)),
      ]);
      await loadSampleStore(sourceApp, SIZE);
      await launch();
      writer = new BackgroundWriter(sourceApp, SIZE.customers);
      writer.start(10, 30);
      await worker.api.expectSuccess('start', {
        source: 'cluster0',
        destination: 'cluster1',
        enableUserWriteBlocking: true,
      });

      // Copy: kills at random points of the copy, while partitions are being copied (a killed
      // partition is copied again from its start; whole ones stay done).
      for (let k = 0; k < PLAN.copy; k++) await killAndRestart('copy', { maxPercent: 90 });
      await worker.api.waitFor(
        'change event application',
        (p) => p.canCommit && (p.totalEventsApplied ?? 0) >= 0 && p.info !== 'collection copy',
        180_000,
      );

      // Change application: kills while the writer keeps the stream busy.
      for (let k = 0; k < PLAN.apply; k++)
        await killAndRestart('apply', { minMs: 200, maxMs: 2_000 });
      await worker.api.waitFor('canCommit', (p) => p.canCommit, 120_000);

      // Commit: requested once, with the writer still writing; every later kill restores a
      // COMMITTING job that carries on by itself (or, once done, COMMITTED).
      const marker = { _id: new ObjectId(), marker: 'the last write before the commit' };
      await sourceApp.db('shop').collection('orders').insertOne(marker);
      await worker.api.expectSuccess('commit');
      invariants.commitRequested = true;
      for (let k = 0; k < PLAN.commit; k++)
        await killAndRestart('commit', { minMs: 0, maxMs: 600 });
      const committed = await worker.api.waitFor(
        'COMMITTED',
        (p) => p.state === 'COMMITTED',
        180_000,
      );
      invariants.check(committed as Progress & Record<string, unknown>, KILLS);
      await writer.stop();

      const byPhase = (phase: string) =>
        observations
          .filter((o) => o.phase === phase)
          .map(
            (o) =>
              `${o.stateKilled}${o.copyPercent !== null ? `@${o.copyPercent}%` : ''}→${o.stateRestored}`,
          )
          .join(' ');
      console.log(
        `[crash-loop] seed ${SEED}: ${observations.length} kills survived ` +
          `(copy ${PLAN.copy}, change application ${PLAN.apply}, commit ${PLAN.commit}); ` +
          `application writes acknowledged: ${writer.stats.inserts} inserts, ` +
          `${writer.stats.updates} updates, ${writer.stats.deletes} deletes; ` +
          `states killed→restored: copy [${byPhase('copy')}] apply [${byPhase('apply')}] commit [${byPhase('commit')}]`,
      );

      expect(observations).toHaveLength(KILLS);
      // the copy kills did land inside the copy (a partition cut short is copied again)
      if (PLAN.copy > 0) {
        expect(observations.filter((o) => o.copyPercent !== null).length).toBeGreaterThan(0);
      }
      if (PLAN.commit > 0)
        expect(observations.some((o) => o.stateKilled === 'COMMITTING')).toBe(true);
      expect(writer.stats.inserts + writer.stats.updates).toBeGreaterThan(0);
      // The writer ended on the source's refusal (the commit's write block), nothing else.
      expect(writer.stats.lastError).toBe('UserWritesBlocked');
      const report = await compareClusters(sourceAdmin, destinationAdmin, { compareUnique: true });
      expect(report.differences).toEqual([]);
      expect(report.documents).toBeGreaterThan(SIZE.customers + SIZE.orders);
      expect(
        await destinationAdmin.db('shop').collection('orders').countDocuments({ _id: marker._id }),
      ).toBe(1);
      expect(
        await tryWrite(() =>
          sourceApp.db('shop').collection('orders').insertOne({ _id: new ObjectId() }),
        ),
      ).toBe('UserWritesBlocked');
      expect(
        await tryWrite(() =>
          destinationApp.db('shop').collection('orders').insertOne({ _id: new ObjectId() }),
        ),
      ).toBe('ok');
      expect(outputOf(worker)).not.toContain(SYNCER.password);
    }, 600_000);
  },
);
