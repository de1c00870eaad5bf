import { Int32, ObjectId, type MongoClient } from 'mongodb';
import { BackgroundWriter } from '../../scripts/lib/background-writer';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { loadSampleStore } from '../../scripts/lib/sample-data';
import { stopAllProcesses } from '../helpers/processes';
import { describeOn, testDb } from '../helpers/real-clusters';
import {
  APP,
  SYNCER,
  buildOnce,
  closeClients,
  connect,
  copyDone,
  copyFiguresDone,
  outputOf,
  startCluster,
  startWorker,
  steps,
  tryWrite,
  waitUntil,
  waitForDocument,
  type Cluster,
  type StartedWorker,
} from './support/harness';

/**
 * Issue 4: the whole life of a reversible sync with authentication on, driven over HTTP while an
 * application (user `app`, readWriteAnyDatabase: it cannot bypass write blocking) keeps writing:
 * start → (destination refuses app writes) → copy → pause/resume → commit → compare → reverse →
 * commit → compare. The steps run in order and share one pair of clusters and one worker; a
 * failing step fails the ones after it.
 */

const SIZE = { customers: 2_000, orders: 8_000, products: 500 };

describeOn('replicaSets')('reversible sync lifecycle with write blocking (issue 4)', () => {
  let source: Cluster;
  let destination: Cluster;
  let worker: StartedWorker;
  /** Syncer clients, for verification (root: reads everything, bypasses write blocking). */
  let sourceAdmin: MongoClient;
  let destinationAdmin: MongoClient;
  /** Application clients (subject to write blocking). */
  let sourceApp: MongoClient;
  let destinationApp: MongoClient;
  let writer: BackgroundWriter | undefined;
  const api = () => worker.api;
  const step = steps(240_000);

  beforeAll(async () => {
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
    worker = await startWorker(source.uriFor(SYNCER), destination.uriFor(SYNCER));
    await api().waitFor('IDLE after boot', (p) => p.state === 'IDLE', 60_000);
  }, 300_000);

  afterAll(async () => {
    await writer?.stop().catch(() => undefined);
    if (worker) {
      expect(outputOf(worker)).not.toContain(SYNCER.password);
      expect(outputOf(worker)).not.toContain(source.uri);
    }
    await closeClients();
    await stopAllProcesses();
  }, 60_000);

  step('starts a reversible sync with write blocking while the application writes', async () => {
    writer = new BackgroundWriter(sourceApp, SIZE.customers);
    writer.start(10, 50);
    await api().expectSuccess('start', {
      source: 'cluster0',
      destination: 'cluster1',
      enableUserWriteBlocking: true,
      reversible: true,
    });
    const running = await api().progress();
    expect(running).toMatchObject({ state: 'RUNNING', canCommit: false, canWrite: false });
    expect(running.directionMapping).toEqual({
      Source: expect.stringMatching(/^cluster0: [\w.-]+:\d+$/),
      Destination: expect.stringMatching(/^cluster1: [\w.-]+:\d+$/),
    });
  });

  step(
    'refuses application writes on the destination during the sync (UserWritesBlocked)',
    async () => {
      // Once the copy has begun the destination is prepared, and so blocked.
      await api().waitFor(
        'the copy to begin',
        (p) => (p.collectionCopy?.estimatedCopiedBytes ?? 0) > 0,
        120_000,
      );
      const probe = { _id: new ObjectId(), probe: 'must be refused' };
      expect(
        await tryWrite(() => destinationApp.db('shop').collection('orders').insertOne(probe)),
      ).toBe('UserWritesBlocked');
      expect(
        await tryWrite(() =>
          destinationApp.db(testDb('newdb')).collection('c').insertOne({ _id: new ObjectId() }),
        ),
      ).toBe('UserWritesBlocked');
    },
  );

  step('finishes the copy and applies change events while the writer keeps going', async () => {
    await api().waitFor('the copy figures to reach 100%', copyFiguresDone, 180_000);
    const done = await api().waitFor(
      "info 'change event application' once the copy is done",
      copyDone,
      60_000,
    );
    expect(done).toMatchObject({ state: 'RUNNING', info: 'change event application' });
    const writesAtCopyEnd = totalWrites(writer!);
    await waitUntil(() => totalWrites(writer!) >= writesAtCopyEnd + 50, 'the writer to go on');
    const marker = { _id: new ObjectId(), marker: 'after copy' };
    await sourceApp.db('shop').collection('orders').insertOne(marker);
    await waitForDocument(destinationAdmin, 'shop.orders', marker._id);
    const applying = await api().progress();
    expect(applying.totalEventsApplied).toBeGreaterThan(0);
    expect(applying.lagTimeSeconds).not.toBeNull();
  });

  step('pauses (PAUSED, lag null) while writes continue, then resumes and catches up', async () => {
    await api().expectSuccess('pause');
    const paused = await api().progress();
    expect(paused).toMatchObject({ state: 'PAUSED', lagTimeSeconds: null, canCommit: false });
    expect(await api().post('commit')).toMatchObject({ status: 409 });

    const before = totalWrites(writer!);
    const marker = { _id: new ObjectId(), marker: 'written while paused' };
    await sourceApp.db('shop').collection('orders').insertOne(marker);
    await waitUntil(() => totalWrites(writer!) >= before + 30, 'writes during the pause');
    // Nothing is applied while paused.
    expect(
      await destinationAdmin.db('shop').collection('orders').findOne({ _id: marker._id }),
    ).toBeNull();

    await api().expectSuccess('resume');
    expect((await api().progress()).state).toBe('RUNNING');
    await waitForDocument(destinationAdmin, 'shop.orders', marker._id);
    const caughtUp = await api().waitFor('canCommit after resume', (p) => p.canCommit, 120_000);
    expect(caughtUp.state).toBe('RUNNING');
    expect(caughtUp.lagTimeSeconds).not.toBeNull();
  });

  step('commits: COMMITTED, canWrite, lag 0, destination equals source', async () => {
    await api().waitFor('canCommit', (p) => p.canCommit, 120_000);
    await writer!.stop();
    expect(writer!.stats.inserts + writer!.stats.updates).toBeGreaterThan(100);
    writer = undefined;

    await api().expectSuccess('commit');
    const committed = await api().waitFor('COMMITTED', (p) => p.state === 'COMMITTED', 120_000);
    expect(committed).toMatchObject({
      state: 'COMMITTED',
      canWrite: true,
      lagTimeSeconds: 0,
      info: 'commit completed',
    });
    await expectEqual(sourceAdmin, destinationAdmin);
  });

  let writtenAfterCommit: ObjectId;

  step(
    'after commit the source refuses application writes and the destination accepts them',
    async () => {
      expect(
        await tryWrite(() =>
          sourceApp.db('shop').collection('orders').insertOne({ _id: new ObjectId() }),
        ),
      ).toBe('UserWritesBlocked');
      writtenAfterCommit = new ObjectId();
      expect(
        await tryWrite(() =>
          destinationApp
            .db('shop')
            .collection('orders')
            .insertOne({ _id: writtenAfterCommit, note: 'written on the new primary cluster' }),
        ),
      ).toBe('ok');
    },
  );

  step(
    'reverses: RUNNING with the roles swapped, carrying writes back to the old source',
    async () => {
      await api().expectSuccess('reverse');
      const reversed = await api().waitFor('RUNNING after reverse', (p) => p.state === 'RUNNING');
      expect(reversed.directionMapping).toEqual({
        Source: expect.stringMatching(/^cluster1: /),
        Destination: expect.stringMatching(/^cluster0: /),
      });
      expect(reversed.canWrite).toBe(false);

      // The old source (now the destination) still refuses the application.
      expect(
        await tryWrite(() =>
          sourceApp.db('shop').collection('orders').insertOne({ _id: new ObjectId() }),
        ),
      ).toBe('UserWritesBlocked');

      writer = new BackgroundWriter(destinationApp, SIZE.customers);
      writer.start(10, 50);
      const marker = { _id: new Int32(9_999_999), marker: 'written on the new source' };
      await destinationApp
        .db('shop')
        .collection('customers')
        .insertOne(marker as never);
      await waitForDocument(sourceAdmin, 'shop.customers', marker._id);
      // The write made between the first commit and reverse comes back too (from the commit point).
      await waitForDocument(sourceAdmin, 'shop.orders', writtenAfterCommit);
    },
  );

  step('commits the reverse sync: both clusters equal, the old source writable again', async () => {
    await api().waitFor('canCommit (reverse)', (p) => p.canCommit, 120_000);
    await waitUntil(() => totalWrites(writer!) >= 50, 'writes on the new source');
    await api().expectSuccess('commit');
    const committed = await api().waitFor('COMMITTED', (p) => p.state === 'COMMITTED', 120_000);
    await writer!.stop(); // stops by itself once the new source blocks writes
    writer = undefined;
    expect(committed).toMatchObject({
      canWrite: true,
      lagTimeSeconds: 0,
      info: 'commit completed',
      directionMapping: { Source: expect.stringMatching(/^cluster1: /) },
    });
    await expectEqual(destinationAdmin, sourceAdmin);
    expect(
      await tryWrite(() =>
        sourceApp.db('shop').collection('orders').insertOne({ _id: new ObjectId() }),
      ),
    ).toBe('ok');
    expect(
      await tryWrite(() =>
        destinationApp.db('shop').collection('orders').insertOne({ _id: new ObjectId() }),
      ),
    ).toBe('UserWritesBlocked');
  });
});

function totalWrites(writer: BackgroundWriter): number {
  return writer.stats.inserts + writer.stats.updates + writer.stats.deletes;
}

async function expectEqual(from: MongoClient, to: MongoClient): Promise<void> {
  const report = await compareClusters(from, to, { compareUnique: true });
  expect(report.differences).toEqual([]);
  expect(report.documents).toBeGreaterThan(SIZE.customers);
}
