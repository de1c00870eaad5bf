import { Int32, type Document } from 'bson';
import type { SyncJob } from '@sync/engine';
import { describeOn, emulatorOnly, testDb } from '../helpers/real-clusters';
import {
  commitAndWait,
  crashableEngine,
  engineFor,
  expectEqualClusters,
  request,
  startAuthClusters,
  waitFor,
  type AuthClusters,
} from './sync-helpers';

type AnyDoc = { _id: unknown } & Document;

async function seed(c: AuthClusters, count = 2000): Promise<void> {
  const items = c.appSrc.db(testDb('shop')).collection<AnyDoc>('items');
  await items.createIndex({ sku: 1 }, { unique: true, name: 'sku_1' });
  for (let i = 0; i < count; i += 500) {
    await items.insertMany(
      Array.from({ length: 500 }, (_, k) => ({
        _id: new Int32(i + k),
        sku: `sku-${i + k}`,
        v: new Int32(0),
        pad: 'p'.repeat(200),
      })),
    );
  }
}

async function churn(c: AuthClusters, round: number, count: number): Promise<void> {
  const items = c.appSrc.db(testDb('shop')).collection<AnyDoc>('items');
  for (let i = 0; i < count; i++) {
    const _id = new Int32((i * 7 + round * 13) % 2000);
    if (i % 10 === 9) await items.deleteOne({ _id });
    else await items.updateOne({ _id }, { $set: { v: new Int32(round), [`r${round}`]: i } });
  }
}

describeOn('replicaSets')('crash safety and loud failures (authentication on)', () => {
  let c: AuthClusters;
  const jobs: SyncJob[] = [];

  afterEach(async () => {
    for (const job of jobs.splice(0)) await job.close().catch(() => undefined);
    await c.close();
  });

  it('an engine abandoned mid-copy is finished by a new one, equal to the source', async () => {
    c = await startAuthClusters();
    await seed(c);
    const first = await crashableEngine(c);
    await first.job.start(request());
    const writer = churn(c, 1, 300);
    await waitFor(() => (first.job.progress().collectionCopy?.estimatedCopiedBytes ?? 0) > 0);
    await first.crash(); // connections cut: no graceful stop, no final checkpoint
    await writer;
    const second = await engineFor(c);
    jobs.push(second);
    expect(second.state).toBe('RUNNING');
    await churn(c, 2, 200);
    await commitAndWait(second);
    await expectEqualClusters(c);
  });

  it('an engine abandoned mid-commit is finished by a new one from the persisted step', async () => {
    c = await startAuthClusters();
    await seed(c, 1000);
    const first = await crashableEngine(c, {
      onCommitStep: async (step) => {
        // Nothing after this step runs: the engine dies right after persisting it.
        if (step === 'pointTaken') throw new Error('simulated crash after the commit point');
      },
    });
    await first.job.start(request({ enableUserWriteBlocking: true }));
    await churn(c, 1, 200);
    await waitFor(() => first.job.progress().canCommit === true, 30_000, 'canCommit');
    await first.job.commit();
    await first.job.idle().catch(() => undefined);
    expect(first.job.state).toBe('COMMITTING');
    await first.crash();
    const second = await engineFor(c);
    jobs.push(second);
    expect(second.state).toBe('COMMITTING');
    await waitFor(() => second.progress().state === 'COMMITTED', 30_000, 'COMMITTED');
    expect(second.progress()).toMatchObject({ canWrite: true, info: 'commit completed' });
    await expectEqualClusters(c);
    await c.src.db('admin').command({ setUserWriteBlockMode: 1, global: false });
  });

  emulatorOnly(
    "a change history of 100 entries (the emulator's historySize; mongod sizes its oplog in MB)",
  )(
    'history lost while paused fails the sync loudly (progress, onFatal) and never skips',
    async () => {
      c = await startAuthClusters(100);
      await seed(c, 500);
      const fatal: Error[] = [];
      const job = await engineFor(c, fatal);
      jobs.push(job);
      await job.start(request({ enableUserWriteBlocking: false }));
      await waitFor(() => job.progress().canCommit === true, 30_000, 'canCommit');
      await job.pause();
      await churn(c, 1, 400); // far more than the source keeps
      await job.resume();
      await waitFor(() => fatal.length > 0, 20_000, 'a fatal failure');
      expect(fatal[0]!.name).toBe('HistoryLostError');
      const progress = job.progress();
      expect(progress).toMatchObject({ error: 'HistoryLost', canCommit: false });
      expect(String(progress.failure)).toMatch(/history/i);
      await expect(job.commit()).rejects.toMatchObject({ error: 'CommitNotReady' });
      // persisted: a restarted worker shows the failure instead of resuming past lost events
      await job.close();
      jobs.pop();
      const again = await engineFor(c);
      jobs.push(again);
      expect(again.progress()).toMatchObject({ error: 'HistoryLost', canCommit: false });
    },
  );
});
