import type { MongoClient } from 'mongodb';
import { stopAllProcesses } from '../helpers/processes';
import { describeEmulatorOnly } from '../helpers/real-clusters';
import {
  APP,
  SYNCER,
  buildOnce,
  closeClients,
  connect,
  outputOf,
  startCluster,
  startWorker,
  type Cluster,
  type StartedWorker,
} from './support/harness';

/**
 * A sync that cannot go on (here: the source's change history no longer holds its resume point)
 * must not take the process down: the worker keeps serving, progress names the error, and a
 * relaunched worker shows the same persisted failure at once instead of failing again.
 */
describeEmulatorOnly(
  "a change history of 200 entries (the emulator's --history; mongod sizes its oplog in MB)",
)('a failed sync keeps the worker up and says why', () => {
  let source: Cluster;
  let destination: Cluster;
  let app: MongoClient;
  const workers: StartedWorker[] = [];

  beforeAll(async () => {
    buildOnce();
    [source, destination] = await Promise.all([
      startCluster('source', true, 200),
      startCluster('destination', true),
    ]);
    app = await connect(source.uriFor(APP));
    await app
      .db('shop')
      .collection('items')
      .insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: i, v: 0 }) as never));
  }, 120_000);

  afterAll(async () => {
    await closeClients();
    await stopAllProcesses();
  });

  it('history lost: the process stays up, progress shows the named error, a restart shows it again', async () => {
    const first = await startWorker(source.uriFor(SYNCER), destination.uriFor(SYNCER));
    workers.push(first);
    await first.api.waitFor('IDLE', (p) => p.state === 'IDLE', 60_000);
    await first.api.expectSuccess('start', { source: 'cluster0', destination: 'cluster1' });
    await first.api.waitFor('canCommit', (p) => p.canCommit === true, 60_000);
    await first.api.expectSuccess('pause');
    const items = app.db('shop').collection('items');
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 100; i++)
        await items.updateOne({ _id: i as never }, { $set: { v: round } });
    }
    await first.api.expectSuccess('resume');
    const deadline = Date.now() + 60_000;
    let body = await first.api.progressResult();
    while (
      (body.body.progress as { error?: string } | undefined)?.error !== 'HistoryLost' &&
      Date.now() < deadline
    ) {
      await new Promise((r) => setTimeout(r, 200));
      body = await first.api.progressResult();
    }
    expect(body.status).toBe(200);
    expect(body.body.progress).toMatchObject({
      state: 'RUNNING',
      error: 'HistoryLost',
      canCommit: false,
    });
    expect(String(body.body.progress!.failure)).toMatch(/history/i);
    // Still serving, still alive.
    await new Promise((r) => setTimeout(r, 500));
    expect(first.process.child.exitCode).toBeNull();
    const commit = await first.api.post('commit');
    expect(commit.body.error).toBe('CommitNotReady');
    await first.process.stop();
    expect(outputOf(first)).not.toContain(SYNCER.password);

    const second = await startWorker(source.uriFor(SYNCER), destination.uriFor(SYNCER));
    workers.push(second);
    const restored = await second.api
      .waitFor('restored', (p) => p.state !== 'INITIALIZING', 60_000)
      .catch(async () => (await second.api.progressResult()).body.progress!);
    expect(restored).toMatchObject({ state: 'RUNNING', error: 'HistoryLost' });
    expect(second.process.child.exitCode).toBeNull();
  }, 180_000);
});
