import { ObjectId, type MongoClient } from 'mongodb';
import { BackgroundWriter } from '../../scripts/lib/background-writer';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { loadSampleStore } from '../../scripts/lib/sample-data';
import { stopAllProcesses } from '../helpers/processes';
import { describeEmulatorOnly, describeOn } from '../helpers/real-clusters';
import {
  APP,
  SYNCER,
  buildOnce,
  closeClients,
  connect,
  copyDone,
  copyFiguresDone,
  crash,
  outputOf,
  startCluster,
  startWorker,
  steps,
  tryWrite,
  waitUntil,
  waitForDocument,
  type Cluster,
  type Progress,
  type StartedWorker,
} from './support/harness';

/**
 * Issue 4: a worker killed (SIGKILL) while it applies change events, or in the middle of a
 * commit, and restarted with the same clusters, finishes the job: after commit the destination
 * equals the source, every acknowledged application write included.
 */

const SIZE = { customers: 1_000, orders: 4_000, products: 200 };

interface Scenario {
  source: Cluster;
  destination: Cluster;
  sourceAdmin: MongoClient;
  destinationAdmin: MongoClient;
  sourceApp: MongoClient;
  destinationApp: MongoClient;
  worker: StartedWorker;
  writer: BackgroundWriter;
}

/** Two clusters with auth, the sample store, a worker, the application writing, sync started. */
async function startScenario(): Promise<Scenario> {
  const [source, destination] = await Promise.all([
    startCluster('source', true),
    startCluster('destination', true),
  ]);
  const [sourceAdmin, destinationAdmin, sourceApp, destinationApp] = await Promise.all([
    connect(source.uriFor(SYNCER)),
    connect(destination.uriFor(SYNCER)),
    connect(source.uriFor(APP)),
    connect(destination.uriFor(APP)),
  ]);
  await loadSampleStore(sourceApp, SIZE);
  const worker = await startWorker(source.uriFor(SYNCER), destination.uriFor(SYNCER));
  await worker.api.waitFor('IDLE after boot', (p) => p.state === 'IDLE', 60_000);
  const writer = new BackgroundWriter(sourceApp, SIZE.customers);
  writer.start(10, 40);
  await worker.api.expectSuccess('start', {
    source: 'cluster0',
    destination: 'cluster1',
    enableUserWriteBlocking: true,
  });
  return {
    source,
    destination,
    sourceAdmin,
    destinationAdmin,
    sourceApp,
    destinationApp,
    worker,
    writer,
  };
}

async function restartWorker(s: Scenario): Promise<Progress> {
  s.worker = await startWorker(s.source.uriFor(SYNCER), s.destination.uriFor(SYNCER));
  return s.worker.api.waitFor(
    'the persisted job to be restored',
    (p) => p.state !== 'INITIALIZING',
    120_000,
  );
}

async function expectCommittedAndEqual(s: Scenario): Promise<void> {
  const committed = await s.worker.api.waitFor(
    'COMMITTED',
    (p) => p.state === 'COMMITTED',
    120_000,
  );
  expect(committed).toMatchObject({
    canWrite: true,
    lagTimeSeconds: 0,
    info: 'commit completed',
  });
  await s.writer.stop(); // it stops by itself once the source refuses writes
  const report = await compareClusters(s.sourceAdmin, s.destinationAdmin, { compareUnique: true });
  expect(report.differences).toEqual([]);
  expect(report.documents).toBeGreaterThan(SIZE.customers + SIZE.orders);
  expect(
    await tryWrite(() =>
      s.sourceApp.db('shop').collection('orders').insertOne({ _id: new ObjectId() }),
    ),
  ).toBe('UserWritesBlocked');
  expect(
    await tryWrite(() =>
      s.destinationApp.db('shop').collection('orders').insertOne({ _id: new ObjectId() }),
    ),
  ).toBe('ok');
  expect(outputOf(s.worker)).not.toContain(SYNCER.password);
}

describeOn('replicaSets')(
  'worker crash during change event application and commit (issue 4)',
  () => {
    afterAll(async () => {
      await closeClients();
      await stopAllProcesses();
    }, 60_000);

    describe('SIGKILL while applying change events', () => {
      let s: Scenario;
      const step = steps(240_000);

      beforeAll(async () => {
        buildOnce();
        s = await startScenario();
      }, 300_000);

      // Each scenario ends with its worker: on real clusters the next one shares the clusters.
      afterAll(async () => {
        await s?.writer.stop().catch(() => undefined);
        await stopAllProcesses();
      }, 60_000);

      step('kills the worker after the copy, while the writer is active', async () => {
        await s.worker.api.waitFor('the copy figures to reach 100%', copyFiguresDone, 180_000);
        const applying = await s.worker.api.waitFor(
          'change event application with events applied',
          (p) => copyDone(p) && (p.totalEventsApplied ?? 0) > 0,
          60_000,
        );
        expect(applying.state).toBe('RUNNING');
        const before = s.writer.stats.inserts + s.writer.stats.updates;
        await waitUntil(
          () => s.writer.stats.inserts + s.writer.stats.updates > before + 20,
          'application writes',
        );
        await crash(s.worker);
      });

      step('restarts, resumes applying, commits and ends equal', async () => {
        const marker = { _id: new ObjectId(), marker: 'written while the worker was down' };
        await s.sourceApp.db('shop').collection('orders').insertOne(marker);
        const restored = await restartWorker(s);
        expect(restored.state).toBe('RUNNING');
        await waitForDocument(s.destinationAdmin, 'shop.orders', marker._id);
        await s.worker.api.waitFor('canCommit after restart', (p) => p.canCommit, 120_000);
        await s.worker.api.expectSuccess('commit'); // the writer is still writing
        await expectCommittedAndEqual(s);
      });
    });

    describeEmulatorOnly('holds the commit with the failCommand fail point (blockConnection)')(
      'SIGKILL during commit',
      () => {
        let s: Scenario;
        let observed: string | undefined;
        const step = steps(240_000);

        beforeAll(async () => {
          buildOnce();
          s = await startScenario();
        }, 300_000);

        afterAll(async () => {
          await s?.writer.stop().catch(() => undefined);
          await stopAllProcesses();
        }, 60_000);

        step('kills the worker while it is COMMITTING', async () => {
          await s.worker.api.waitFor('canCommit', (p) => p.canCommit, 180_000);
          // Hold the commit for a moment where it blocks writes on the source, so the kill lands
          // inside COMMITTING (the fail point delays that command once, then lets it run).
          await s.sourceAdmin.db('admin').command({
            configureFailPoint: 'failCommand',
            mode: { times: 1 },
            data: {
              failCommands: ['setUserWriteBlockMode'],
              blockConnection: true,
              blockTimeMS: 3_000,
            },
          });
          const commit = s.worker.api.post('commit').catch((error: unknown) => error);
          const seen = await s.worker.api.waitFor(
            'COMMITTING',
            (p) => p.state === 'COMMITTING' || p.state === 'COMMITTED',
            60_000,
            10,
          );
          observed = seen.state;
          await crash(s.worker);
          await commit; // the connection died with the worker (or the answer came first)
          expect(observed).toBe('COMMITTING');
        });

        step('restarts and completes the commit; destination equals source', async () => {
          const restored = await restartWorker(s);
          expect(['COMMITTING', 'COMMITTED']).toContain(restored.state);
          await expectCommittedAndEqual(s);
        });
      },
    );
  },
);
