import { MaxKey, MinKey, type Document } from 'bson';
import type { DestinationCluster } from '../ports/destination-cluster';
import type { EngineLogger } from '../ports/engine-logger';
import type { SourceCluster } from '../ports/source-cluster';
import { compareKeyDocs } from '../shards/key-order';

/** Chunks per destination shard a presplit aims for (as MongoDB's own sync tool does). */
export const CHUNKS_PER_SHARD = 2;
/** Source documents sampled per wanted chunk to place the split points. */
const SAMPLES_PER_CHUNK = 25;

/**
 * Presplits a freshly sharded, empty destination collection with a RANGE key into about
 * CHUNKS_PER_SHARD chunks per destination shard, spread round-robin over all shards, so the
 * copy writes to every shard at once instead of filling the primary and waiting for a
 * balancer. Split points are quantiles of a random sample of the source's shard-key values.
 * Hashed keys need nothing here: shardCollection already pre-splits an empty collection.
 * Idempotent: a collection that already has more than one chunk is left as it is.
 */
export async function presplitRangeKey(
  source: SourceCluster,
  destination: DestinationCluster,
  ns: { database: string; collection: string },
  key: Document,
  logger: EngineLogger,
): Promise<void> {
  const fields = Object.keys(key);
  if (Object.values(key).some((v) => v === 'hashed')) return;
  const shards = await destination.shardIds();
  if (shards.length < 2) return;
  if ((await destination.chunkCount(ns.database, ns.collection)) > 1) return;
  const wanted = CHUNKS_PER_SHARD * shards.length;
  const sample = await source.sampleKeys(
    ns.database,
    ns.collection,
    fields,
    wanted * SAMPLES_PER_CHUNK,
  );
  const points = splitPoints(
    sample.map((doc) => Object.fromEntries(fields.map((f) => [f, valueAt(doc, f)]))),
    wanted,
  );
  if (points.length === 0) return;
  for (const point of points) await destination.splitAt(ns.database, ns.collection, point);
  const min = Object.fromEntries(fields.map((f) => [f, new MinKey()]));
  const max = Object.fromEntries(fields.map((f) => [f, new MaxKey()]));
  const bounds = [min, ...points, max];
  for (let i = 0; i + 1 < bounds.length; i++) {
    await destination.moveRange(
      ns.database,
      ns.collection,
      bounds[i]!,
      bounds[i + 1]!,
      shards[i % shards.length]!,
    );
  }
  logger.info('destination collection presplit', {
    namespace: `${ns.database}.${ns.collection}`,
    chunks: bounds.length - 1,
    shards: shards.length,
  });
}

/** Up to `chunks - 1` distinct quantiles of the sampled keys, in key order. */
export function splitPoints(sample: Document[], chunks: number): Document[] {
  const sorted = [...sample].sort(compareKeyDocs);
  const distinct = sorted.filter((k, i) => i === 0 || compareKeyDocs(sorted[i - 1]!, k) !== 0);
  if (distinct.length < 2) return [];
  const points: Document[] = [];
  for (let i = 1; i < chunks; i++) {
    const point = distinct[Math.floor((i * distinct.length) / chunks)];
    if (!point) continue;
    // The first distinct key would leave an empty first chunk; repeated quantiles collapse.
    if (compareKeyDocs(point, distinct[0]!) === 0) continue;
    if (points.length > 0 && compareKeyDocs(points[points.length - 1]!, point) === 0) continue;
    points.push(point);
  }
  return points;
}

/** A (dotted) field of a sampled document; missing counts as null, as the shard key does. */
function valueAt(doc: Document, path: string): unknown {
  if (path in doc) return doc[path] ?? null;
  let cur: unknown = doc;
  for (const part of path.split('.')) {
    if (!cur || typeof cur !== 'object' || Array.isArray(cur)) return null;
    cur = (cur as Document)[part];
  }
  return cur ?? null;
}
