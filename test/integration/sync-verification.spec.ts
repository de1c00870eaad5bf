import { Double, Int32, type Document } from 'bson';
import type { SyncJob } from '@sync/engine';
import { describeOn, testDb, testNs } from '../helpers/real-clusters';
import {
  commitAndWait,
  crashableEngine,
  expectEqualClusters,
  request,
  startAuthClusters,
  waitFor,
  type AuthClusters,
} from './sync-helpers';

type AnyDoc = { _id: unknown } & Document;

/** Live re-checks every 200 ms so a test sees the live pass finish. */
const VERIFY_TUNING = { verification: { recheckMs: 200 } };

async function seed(c: AuthClusters, names: string[]): Promise<void> {
  const shop = c.appSrc.db(testDb('shop'));
  for (const name of names) {
    await shop.collection<AnyDoc>(name).insertMany(
      Array.from({ length: 120 }, (_, i) => ({
        _id: new Int32(i),
        sku: `${name}-${i}`,
        n: new Int32(i),
        pad: 'x'.repeat(200),
      })),
    );
  }
  await shop.collection<AnyDoc>('indexed').createIndex({ sku: 1 }, { unique: true, name: 'sku_1' });
  await shop.collection<AnyDoc>('indexed').createIndex({ n: 1 }, { name: 'n_1' });
}

/** Waits for the rolled-back commit; returns the progress and the rollback's warning. */
async function commitFailure(
  job: SyncJob,
): Promise<{ progress: Record<string, unknown>; message: string }> {
  const warning = () =>
    ((job.progress().warnings as string[] | undefined) ?? []).find((w) =>
      w.startsWith('CommitRolledBack'),
    );
  await waitFor(
    () => warning() !== undefined,
    30_000,
    'the rolled-back commit',
    () => JSON.stringify(job.progress()),
  );
  return { progress: job.progress(), message: warning()! };
}

describeOn('replicaSets')('embedded verifier (authentication on)', () => {
  let c: AuthClusters;
  const jobs: SyncJob[] = [];

  afterEach(async () => {
    for (const job of jobs.splice(0)) await job.close().catch(() => undefined);
    await c.close();
  });

  it('mode full: catches altered, missing, extra, reordered and retyped documents and a missing index; the commit is rolled back', async () => {
    c = await startAuthClusters();
    const names = ['altered', 'missing', 'extra', 'reordered', 'retyped', 'indexed', 'intact'];
    await seed(c, names);
    const { job } = await crashableEngine(c, VERIFY_TUNING);
    jobs.push(job);
    // Documents altered behind the sync's back where change application never wrote: only a
    // full re-read finds them (the incremental final pass reads what was written since checked).
    await job.start(
      request({ enableUserWriteBlocking: true, verification: { enabled: true, mode: 'full' } }),
    );
    await waitFor(() => job.progress().canCommit === true, 30_000, 'canCommit');
    // The live pass verifies every namespace while change events are applied.
    await waitFor(
      () => {
        const v = job.progress().verification as { phase: string; namespacesVerified: number };
        return v.phase === 'live' && v.namespacesVerified === names.length;
      },
      30_000,
      'the live pass',
      () => JSON.stringify(job.progress().verification),
    );
    // Per-namespace progress shows each verified collection as such.
    const detail = job.progress({ detail: 'namespaces' }).namespaceDetail as Array<{
      namespace: string;
      state: string;
    }>;
    expect(
      detail.filter((n) => names.includes(n.namespace.split('.')[1]!)).map((n) => n.state),
    ).toEqual(names.map(() => 'verified'));

    // Behind the sync's back (root bypasses the destination's write blocking):
    const dst = c.dst.db(testDb('shop'));
    await dst
      .collection<AnyDoc>('altered')
      .updateOne({ _id: new Int32(7) }, { $set: { sku: 'x' } });
    await dst.collection<AnyDoc>('missing').deleteOne({ _id: new Int32(8) });
    await dst.collection<AnyDoc>('extra').insertOne({ _id: 'stray', sku: 'stray' });
    await dst.collection<AnyDoc>('reordered').replaceOne(
      { _id: new Int32(9) },
      { n: new Int32(9), sku: 'reordered-9', pad: 'x'.repeat(200) }, // same fields, other order
    );
    await dst.collection<AnyDoc>('retyped').updateOne(
      { _id: new Int32(10) },
      { $set: { n: new Double(10) } }, // Int32 → Double, the same number
    );
    await dst.collection<AnyDoc>('indexed').dropIndex('n_1');

    await job.commit();
    const { progress, message } = await commitFailure(job);
    // Rolled back: the source is writable again, the destination still closed.
    expect(progress).toMatchObject({ state: 'RUNNING', canWrite: false });
    expect(progress.sourceWriteBlocked).toBeUndefined();
    expect(message).toContain('at step verified (VerificationFailed');
    for (const [namespace, id] of [
      ['altered', '{"$numberInt":"7"}'],
      ['missing', '{"$numberInt":"8"}'],
      ['extra', '"stray"'],
      ['reordered', '{"$numberInt":"9"}'],
      ['retyped', '{"$numberInt":"10"}'],
    ]) {
      expect(message).toContain(`${testNs(`shop.${namespace}`)}: `);
      expect(message).toContain(`_id ${id}`);
    }
    expect(message).toContain(
      `${testNs('shop.missing')}: document count differs: source 120, destination 119`,
    );
    expect(message).toContain(
      `${testNs('shop.extra')}: document count differs: source 120, destination 121`,
    );
    expect(message).toContain(`${testNs('shop.indexed')}: index n_1 missing on destination`);
    expect(message).not.toContain(testNs('shop.intact'));
    // The destination stays closed: the commit is not COMMITTED; the source takes writes.
    await new Promise((r) => setTimeout(r, 300));
    expect(job.progress().state).toBe('RUNNING');
    await c.appSrc.db(testDb('shop')).collection<AnyDoc>('intact').insertOne({ _id: 'after' });
  });

  it('catches an index that is not unique on the destination, and commit again passes once fixed', async () => {
    c = await startAuthClusters();
    await seed(c, ['indexed']);
    let tamper = true;
    const { job } = await crashableEngine(c, {
      ...VERIFY_TUNING,
      // Right after the unique indexes were restored: someone makes sku_1 non-unique again.
      onCommitStep: async (step) => {
        if (step !== 'indexesRestored' || !tamper) return;
        tamper = false;
        const items = c.dst.db(testDb('shop')).collection('indexed');
        await items.dropIndex('sku_1');
        await items.createIndex({ sku: 1 }, { name: 'sku_1' });
      },
    });
    jobs.push(job);
    await job.start(request({ enableUserWriteBlocking: true }));
    await waitFor(() => job.progress().canCommit === true, 30_000, 'canCommit');
    await job.commit();
    const { progress, message } = await commitFailure(job);
    expect(progress).toMatchObject({ state: 'RUNNING', canWrite: false });
    expect(message).toContain('at step verified (VerificationFailed');
    expect(message).toContain(`${testNs('shop.indexed')}: index sku_1 differs`);
    // The sync runs on; the next commit restores the index (it was relaxed again by the
    // rollback, or left as the tampering made it) and verifies again: it passes.
    await waitFor(() => job.progress().canCommit === true, 30_000, 'canCommit again');
    await job.commit();
    await waitFor(
      () => job.progress().state === 'COMMITTED',
      30_000,
      'COMMITTED',
      () => JSON.stringify(job.progress()),
    );
    expect(job.progress()).toMatchObject({
      canWrite: true,
      verification: { phase: 'passed', namespacesVerified: 1, mismatches: 0 },
    });
    await expectEqualClusters(c);
    await c.src.db('admin').command({ setUserWriteBlockMode: 1, global: false });
  });

  it('verification: {enabled: false} commits without verifying', async () => {
    c = await startAuthClusters();
    await seed(c, ['altered', 'indexed']);
    const { job } = await crashableEngine(c, VERIFY_TUNING);
    jobs.push(job);
    await job.start(request({ enableUserWriteBlocking: true, verification: { enabled: false } }));
    await waitFor(() => job.progress().canCommit === true, 30_000, 'canCommit');
    expect(job.progress().verification).toMatchObject({ phase: 'disabled' });
    // Tampered before the commit: nothing checks it.
    await c.dst
      .db(testDb('shop'))
      .collection<AnyDoc>('altered')
      .updateOne({ _id: new Int32(7) }, { $set: { sku: 'x' } });
    await commitAndWait(job);
    expect(job.progress().verification).toMatchObject({ phase: 'disabled' });
    await c.src.db('admin').command({ setUserWriteBlockMode: 1, global: false });
  });
});
