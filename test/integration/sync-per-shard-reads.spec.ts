import { Int32, type Document } from 'bson';
import { MongoClient } from 'mongodb';
import { describeOn, onRealClusters, testDb, testNs } from '../helpers/real-clusters';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { describeProgress, waitFor } from './copy-helpers';
import { PER_SHARD_START, useShardedClusters } from './sync-helpers';

type AnyDoc = { _id: unknown } & Document;

const START = PER_SHARD_START;

/** Documents returned by queries on one node (`serverStatus().metrics.document.returned`). */
async function returned(uri: string): Promise<number | null> {
  const client = await new MongoClient(uri).connect();
  try {
    const status = await client.db('admin').command({ serverStatus: 1 });
    const value = (status.metrics as { document?: { returned?: unknown } } | undefined)?.document
      ?.returned;
    return value === undefined ? null : Number(value);
  } finally {
    await client.close();
  }
}

/**
 * Per-shard workers read only their own shard (issue: the source read about once in total):
 * the copy reads each shard's own chunks, never another shard's documents, and leaves out an
 * orphan a shard holds outside its chunks; a chunk migrated by hand during the sync stops it
 * with ChunkMigrationDuringSync naming the collection and the shards.
 */
describeOn('shardedClusters')('per-shard reads (2 source shards)', () => {
  const fixture = useShardedClusters({
    source: 'src',
    destination: 'dst',
    sourceShards: 2,
    destinationShards: 2,
  });
  const worker = fixture.worker;

  it('copies each shard once, leaves orphans out, and stops on a chunk migration', async () => {
    const { source, src, dst } = fixture;
    const [shardA, shardB] = source.shards.map((s) => s._id).sort() as [string, string];
    const admin = src.db('admin');
    const ns = testNs('app.items');
    const app = src.db(testDb('app'));
    await admin
      .command({ enableSharding: testDb('app'), primaryShard: shardA })
      .catch(() => admin.command({ enableSharding: testDb('app') }));
    await admin.command({ shardCollection: ns, key: { k: 1 } });
    await admin.command({ split: ns, middle: { k: 1000 } });
    await admin.command({ split: ns, middle: { k: 1500 } });
    const primary = (await src
      .db('config')
      .collection('databases')
      .findOne({ _id: testDb('app') as never }))!.primary as string;
    const other = primary === shardA ? shardB : shardA;
    // [1000, 1500) and [1500, max) live on the other shard.
    await admin.command({ moveChunk: ns, find: { k: 1000 }, to: other });
    await admin.command({ moveChunk: ns, find: { k: 1500 }, to: other });
    await app
      .collection<AnyDoc>('items')
      .insertMany(
        Array.from({ length: 2000 }, (_, i) => ({ _id: new Int32(i), k: i, pad: 'x'.repeat(200) })),
      );
    await app
      .collection<AnyDoc>('flat')
      .insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: i })));

    // An orphan: a document inserted straight into the primary shard, in a range the other
    // shard owns. mongos never returns it; the sync must not copy it either.
    const primaryUri = source.shards.find((s) => s._id === primary)!.uri;
    const direct = await new MongoClient(primaryUri).connect();
    try {
      await direct
        .db(testDb('app'))
        .collection<AnyDoc>('items')
        .insertOne({ _id: 'orphan', k: 1700 });
    } finally {
      await direct.close();
    }
    // mongos filters orphans out of every read (shard filtering): the source never shows it.
    expect(await app.collection('items').countDocuments({ _id: 'orphan' } as Document)).toBe(0);

    const before = await Promise.all(source.shards.map((s) => returned(s.uri)));
    const w1 = await worker(shardB);
    await w1.start(START);
    const w0 = await worker(shardA);
    await w0.start(START);
    const both = [w0, w1];
    const show = () => describeProgress(both.map((w) => w.progress()));
    await waitFor(
      () => both.every((w) => w.progress().canCommit === true),
      90_000,
      'canCommit',
      show,
    );

    // Each shard returned its own documents twice at most: the copy reads each shard's
    // documents once in total (2,050, plus the orphan the copy skips), and so does each worker's
    // embedded verifier (its live pass checks its own share once), besides the samples that plan
    // the partitions and presplit the destination (each worker samples ≤ 128 _ids of its own
    // shard per collection; the lead samples the range key once) — nowhere near a read per
    // worker.
    const after = await Promise.all(source.shards.map((s) => returned(s.uri)));
    if (!onRealClusters()) {
      expect(before.every((b) => b !== null)).toBe(true);
      const total = after.reduce<number>((sum, a, i) => sum + (a! - before[i]!), 0);
      expect(total).toBeGreaterThanOrEqual(2050);
      expect(total).toBeLessThanOrEqual(2 * Math.ceil(2050 * 1.1) + 600);
    }

    // The orphan is nowhere on the destination.
    expect(await dst.db(testDb('app')).collection('items').countDocuments()).toBe(2000);
    expect(
      await dst
        .db(testDb('app'))
        .collection('items')
        .countDocuments({ _id: 'orphan' } as Document),
    ).toBe(0);
    // The destination equals the source through the routers, document by document.
    const report = await compareClusters(src, dst, { databases: [testDb('app')] });
    expect(report.differences).toEqual([]);

    // Someone moves a chunk by hand while the sync runs: every worker stops, named.
    await admin.command({ moveChunk: ns, find: { k: 0 }, to: other });
    await waitFor(
      () => both.every((w) => /ChunkMigrationDuringSync/.test(String(w.progress().failure ?? ''))),
      30_000,
      'ChunkMigrationDuringSync on both workers',
      show,
    );
    expect(String(w0.progress().failure)).toContain(ns);
    expect(String(w0.progress().failure)).toContain(`from shard ${primary} to ${other}`);
  }, 180_000);
});
