import { Int32, type Document } from 'bson';
import { describeOn, testDb, testNs } from '../helpers/real-clusters';
import { waitFor } from './copy-helpers';
import { PER_SHARD_START, useShardedClusters } from './sync-helpers';

type AnyDoc = { _id: unknown } & Document;

const START = PER_SHARD_START;

/**
 * Fencing of a per-shard worker that lost its shard, end to end (createSyncEngine, the real
 * driver): the old holder believes its claim is good for minutes (its lease is long, its
 * renewals rare — as a drifting or paused host would), a second process with the same `--id`
 * takes the claim over once it is stale by the destination's clock, and from then on the old
 * holder's job and checkpoint writes are refused by the claim epoch: it stops with
 * ShardClaimLost while its successor carries the sync on.
 */
describeOn('shardedClusters')('per-shard claim fencing (takeover by a second instance)', () => {
  const fixture = useShardedClusters({
    source: 'fsrc',
    destination: 'fdst',
    sourceShards: 2,
    destinationShards: 3,
  });
  const worker = fixture.worker;

  it("refuses the old holder's job and checkpoint writes after the takeover; it stops with ShardClaimLost", async () => {
    const { source, src, dst } = fixture;
    const [shard0, shard1] = source.shards.map((s) => s._id).sort() as [string, string];
    const items = () => src.db(testDb('shop')).collection<AnyDoc>('items');
    await items().insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: new Int32(i), v: 0 })));
    await src.db('admin').command({ shardCollection: testNs('shop.items'), key: { _id: 1 } });

    const coordinator = await worker(shard0, { shardClaim: { staleMs: 2_000, renewMs: 300 } });
    const fatal: Error[] = [];
    // The old holder of shard1: its lease lasts 10 min and it renews every 5 min.
    const old = await worker(shard1, {
      shardClaim: { staleMs: 600_000, renewMs: 300_000 },
      onFatal: (e) => fatal.push(e),
    });
    await old.start(START);
    await coordinator.start(START);
    const both = () => [coordinator, old];
    await waitFor(
      () => both().every((w) => w.progress().canCommit === true),
      90_000,
      'canCommit on both',
      () => JSON.stringify(both().map((w) => w.progress())),
    );
    const internal = dst.db('sync_reserved_for_internal_use');
    expect(await internal.collection('workers').findOne({ _id: shard1 as never })).toMatchObject({
      epoch: 1,
    });

    // The destination now sees the old holder's claim as stale while the holder still believes
    // its 10-min lease runs (what a process frozen without its monotonic clock noticing, or a
    // claim document restored from an old backup, would look like): only the claim epoch on
    // the metadata writes can stop it. (Instances take a claim over only after the LONGER of
    // both stale limits, so a live holder with a longer lease is never taken over by itself.)
    await internal
      .collection('workers')
      .updateOne({ _id: shard1 as never }, { $set: { heartbeatAt: new Date(0), staleMs: 2_000 } });
    // A second process for shard1: it takes the claim over (epoch 2) and fences the old epoch
    // off at once.
    const successor = await worker(shard1, { shardClaim: { staleMs: 2_000, renewMs: 300 } });
    expect(await internal.collection('workers').findOne({ _id: shard1 as never })).toMatchObject({
      epoch: 2,
    });

    // Source writes: the old holder's next checkpoint save is refused; it stops.
    await items().updateMany({}, { $set: { v: 1 } });
    await waitFor(
      () => fatal.length > 0,
      30_000,
      'the old holder stops',
      () => JSON.stringify(old.progress()),
    );
    expect(fatal[0]).toMatchObject({ error: 'ShardClaimLost' });
    expect(() => old.progress()).toThrow(/no longer holds shard/);
    expect(() => old.snapshot()).toThrow(expect.objectContaining({ error: 'ShardClaimLost' }));

    // Every metadata document of shard1 carries the successor's epoch: the old one wrote none.
    expect(await internal.collection('jobs').findOne({ _id: shard1 as never })).toMatchObject({
      claimEpoch: 2,
    });
    const checkpoints = await internal
      .collection('resumeData')
      .find({ _id: { $regex: `^changeEvents:${shard1}\\|` } as never })
      .toArray();
    expect(checkpoints.length).toBeGreaterThan(0);
    for (const c of checkpoints) expect(c.claimEpoch).toBe(2);

    // The successor carries the sync on: every change reaches the destination.
    const dstItems = () => dst.db(testDb('shop')).collection<AnyDoc>('items');
    await waitFor(
      async () => (await dstItems().countDocuments({ v: 1 })) === 50,
      60_000,
      'the successor applies the changes',
      () => JSON.stringify(successor.progress()),
    );
    await waitFor(
      () => [coordinator, successor].every((w) => w.progress().canCommit === true),
      60_000,
      'canCommit with the successor',
      () => JSON.stringify([coordinator, successor].map((w) => w.progress())),
    );
  });
});
