import { Int32, type Document } from 'bson';
import type { SyncJob } from '@sync/engine';
import { describeOn, testDb, testNs } from '../helpers/real-clusters';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { describeProgress, waitFor } from './copy-helpers';
import { PER_SHARD_START, useShardedClusters } from './sync-helpers';

type AnyDoc = { _id: unknown } & Document;

const START = PER_SHARD_START;

/** Blocks this process's event loop, as a paused VM or a long GC pause would. */
function freeze(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy: no timer, renewal or reply is handled meanwhile
  }
}

/** A worker's progress, or its refusal (ShardClaimLost while it claims its shard again). */
function progressOrRefusal(worker: SyncJob): Record<string, unknown> {
  try {
    return worker.progress() as unknown as Record<string, unknown>;
  } catch (e) {
    return { state: String(e) };
  }
}

/**
 * A per-shard worker whose lease lapses with nobody else holding its shard (the process was
 * paused past its lease; no standby exists): it stops writing at once, then claims its shard
 * again — once the lapsed claim is stale by the destination's clock, under a new epoch — and
 * resumes from its checkpoint, instead of waiting forever for an operator to restart it.
 */
describeOn('shardedClusters')('per-shard claim: a lapsed lease is claimed again', () => {
  const fixture = useShardedClusters({
    source: 'lsrc',
    destination: 'ldst',
    sourceShards: 2,
    destinationShards: 2,
  });

  it('stops writing, claims the shard again under epoch 2 and carries the sync on', async () => {
    const { source, src, dst } = fixture;
    const [shard0, shard1] = source.shards.map((s) => s._id).sort() as [string, string];
    const items = () => src.db(testDb('shop')).collection<AnyDoc>('items');
    await items().insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: new Int32(i), v: 0 })));
    await src.db('admin').command({ shardCollection: testNs('shop.items'), key: { _id: 1 } });

    const fatal: Error[] = [];
    const logged: string[] = [];
    const logger = {
      debug: () => undefined,
      info: (m: string) => void logged.push(m),
      warn: (m: string) => void logged.push(m),
      error: (m: string) => void logged.push(m),
    };
    // Lease: 2 s stale − 0.4 s margin = 1.6 s after the last acknowledged renewal was sent.
    const claim = { staleMs: 2_000, renewMs: 300 };
    const w0 = await fixture.worker(shard0, { shardClaim: claim, onFatal: (e) => fatal.push(e) });
    const w1 = await fixture.worker(shard1, {
      shardClaim: claim,
      onFatal: (e) => fatal.push(e),
      logger,
    });
    await w1.start(START);
    await w0.start(START);
    const both = () => [w0, w1];
    const progressOf = () => describeProgress(both().map(progressOrRefusal));
    await waitFor(
      () => both().every((w) => w.progress().canCommit === true),
      90_000,
      'canCommit on both',
      progressOf,
    );
    const internal = dst.db('sync_reserved_for_internal_use');
    const before = await internal.collection('workers').findOne({ _id: shard1 as never });
    expect(before).toMatchObject({ epoch: 1 });

    // Past the lease and the stale limit: on waking, the lease is found run out at once.
    freeze(2_600);
    await waitFor(
      () => logged.includes('this worker lost its shard; it stops writing'),
      10_000,
      'the lapse is noticed',
      progressOf,
    );

    // It claims the shard again (a new instance of the claim, epoch 2) and resumes.
    await waitFor(
      async () =>
        ((await internal.collection('workers').findOne({ _id: shard1 as never }))?.epoch ?? 0) ===
        2,
      30_000,
      'the shard claimed again',
      progressOf,
    );
    const after = await internal.collection('workers').findOne({ _id: shard1 as never });
    expect(after!.instance).not.toBe(before!.instance);
    await waitFor(
      () => {
        try {
          return w1.progress().state === 'RUNNING';
        } catch {
          return false;
        }
      },
      30_000,
      'RUNNING again',
      progressOf,
    );
    expect(logged).toContain('the shard was claimed again; the sync resumes');
    // The metadata it writes from now on carries the new epoch.
    expect(await internal.collection('jobs').findOne({ _id: shard1 as never })).toMatchObject({
      claimEpoch: 2,
    });

    // The sync goes on: changes on every shard reach the destination, then canCommit again.
    await items().updateMany({}, { $set: { v: 1 } });
    const dstItems = () => dst.db(testDb('shop')).collection<AnyDoc>('items');
    await waitFor(
      async () => (await dstItems().countDocuments({ v: 1 })) === 50,
      60_000,
      'the changes applied after the re-claim',
      progressOf,
    );
    await waitFor(
      () => both().every((w) => w.progress().canCommit === true),
      60_000,
      'canCommit again',
      progressOf,
    );
    expect(fatal).toEqual([]);
  });
});

/**
 * The lease lapses in the middle of a commit (the process paused after a commit step): the
 * workers claim their shards again, restore the COMMITTING job and carry the commit on from
 * the step they had reached; the destination ends equal to the source and writable.
 */
describe.each(['drained', 'verified'])(
  'per-shard claim: a lease lapsed after commit step %s',
  (pauseAfter) => {
    describeOn('shardedClusters')('claimed again', () => {
      const fixture = useShardedClusters({
        source: `lc${pauseAfter.slice(0, 3)}src`,
        destination: `lc${pauseAfter.slice(0, 3)}dst`,
        sourceShards: 2,
        destinationShards: 2,
      });

      it('the commit completes, the destination equal and writable', async () => {
        const { source, src, dst } = fixture;
        const [shard0, shard1] = source.shards.map((s) => s._id).sort() as [string, string];
        const db = testDb('shop');
        const items = () => src.db(db).collection<AnyDoc>('items');
        await items().insertMany(
          Array.from({ length: 50 }, (_, i) => ({ _id: new Int32(i), v: 0 })),
        );
        await src.db('admin').command({ shardCollection: testNs('shop.items'), key: { _id: 1 } });

        const fatal: Error[] = [];
        let paused = false;
        const claim = { staleMs: 2_000, renewMs: 300 };
        const onCommitStep = async (step: string): Promise<void> => {
          if (step !== pauseAfter || paused) return;
          paused = true;
          freeze(2_600);
        };
        const w0 = await fixture.worker(shard0, {
          shardClaim: claim,
          onFatal: (e) => fatal.push(e),
          onCommitStep,
        });
        const w1 = await fixture.worker(shard1, {
          shardClaim: claim,
          onFatal: (e) => fatal.push(e),
        });
        const both = [w0, w1];
        const show = () => describeProgress(both.map(progressOrRefusal));
        const all = (ok: (p: { state: string; canCommit: boolean }) => boolean) => () =>
          both.every((w) => {
            try {
              return ok(w.progress());
            } catch {
              return false;
            }
          });
        await w1.start(START);
        await w0.start(START);
        await waitFor(
          all((p) => p.canCommit),
          90_000,
          'canCommit',
          show,
        );
        await items().updateMany({}, { $set: { v: 1 } });
        await waitFor(
          all((p) => p.canCommit),
          60_000,
          'canCommit again',
          show,
        );

        await w0.commit();
        await w1.commit();
        await waitFor(
          all((p) => p.state === 'COMMITTED'),
          90_000,
          'COMMITTED after the lapse',
          show,
        );
        expect(paused).toBe(true);
        const report = await compareClusters(src, dst, { databases: [db] });
        expect(report.differences).toEqual([]);
        expect(await dst.db(db).collection('items').countDocuments({ v: 1 })).toBe(50);
        // The destination took the application over: it accepts writes.
        await dst
          .db(db)
          .collection<AnyDoc>('items')
          .insertOne({ _id: new Int32(1000) });
        expect(fatal).toEqual([]);
      });
    });
  },
);
