import { Long, MaxKey, MinKey, Timestamp, type Document } from 'bson';
import { compareValues } from '../bson/compare';
import { getPath, isDocument } from '../bson/paths';
import { CommandError } from '../errors';
import { hashShardKeyValue } from './hashing';
import type { ChunkEntry, CollectionEntry } from './metadata';

/** The hashed field of a shard key pattern, if any. */
export function hashedField(key: Document): string | undefined {
  return Object.entries(key).find(([, v]) => v === 'hashed')?.[0];
}

/**
 * The shard key of a document (ShardKeyPattern::extractShardKeyFromDoc): missing fields count as
 * null, the hashed field holds its hash; an array on the path cannot be a shard key.
 */
export function shardKeyOf(doc: Document, key: Document): Document {
  const out: Document = {};
  for (const [field, kind] of Object.entries(key)) {
    const parts = field.split('.');
    let cur: unknown = doc;
    for (const p of parts) {
      if (Array.isArray(cur)) break;
      cur = isDocument(cur) ? cur[p] : undefined;
    }
    if (Array.isArray(cur)) {
      throw new CommandError(
        61 as number,
        `Shard key cannot contain array values or array descendants.`,
      );
    }
    const value = cur === undefined ? null : cur;
    out[field] = kind === 'hashed' ? hashShardKeyValue(value) : value;
  }
  return out;
}

export function compareKeys(a: Document, b: Document): number {
  const ka = Object.keys(a);
  for (const k of ka) {
    const c = compareValues(a[k], b[k]);
    if (c !== 0) return c;
  }
  return 0;
}

export function chunkContains(chunk: ChunkEntry, key: Document): boolean {
  return compareKeys(chunk.min, key) <= 0 && compareKeys(key, chunk.max) < 0;
}

export function chunkFor(chunks: ChunkEntry[], key: Document): ChunkEntry {
  const chunk = chunks.find((c) => chunkContains(c, key));
  if (!chunk) throw new Error(`no chunk for ${JSON.stringify(key)}`);
  return chunk;
}

/** Equality value of a top-level path in a query filter (`{f: v}`, `{f: {$eq: v}}`, in `$and`). */
function equalityFor(filter: Document, path: string): { value: unknown } | undefined {
  if (Object.prototype.hasOwnProperty.call(filter, path)) {
    const v = filter[path];
    if (isDocument(v)) {
      const keys = Object.keys(v);
      if (keys.length && keys.every((k) => k.startsWith('$'))) {
        if (keys.length === 1 && keys[0] === '$eq' && !isDocument(v.$eq) && !Array.isArray(v.$eq))
          return { value: v.$eq };
        return undefined;
      }
    }
    if (Array.isArray(v) || v instanceof RegExp) return undefined;
    if (isDocument(v) && (v as { _bsontype?: string })._bsontype === 'BSONRegExp') return undefined;
    return { value: v };
  }
  if (Array.isArray(filter.$and)) {
    for (const sub of filter.$and) {
      if (isDocument(sub)) {
        const found = equalityFor(sub, path);
        if (found) return found;
      }
    }
  }
  return undefined;
}

/** The full shard key a filter pins with equalities, or undefined (the query is broadcast). */
export function shardKeyFromFilter(filter: Document, key: Document): Document | undefined {
  const out: Document = {};
  for (const [field, kind] of Object.entries(key)) {
    const eq = equalityFor(filter, field);
    if (!eq) return undefined;
    out[field] = kind === 'hashed' ? hashShardKeyValue(eq.value) : eq.value;
  }
  return out;
}

/** Shards owning at least one chunk of the collection, in chunk order. */
export function owningShards(chunks: ChunkEntry[]): string[] {
  const out: string[] = [];
  for (const c of chunks) if (!out.includes(c.shard)) out.push(c.shard);
  return out;
}

/**
 * Split points of a hashed shard key's initial chunks (InitialSplitPolicy::
 * calculateHashedSplitPoints): evenly spaced over the int64 range, symmetric around 0.
 */
export function hashedSplitPoints(numInitialChunks: number): Long[] {
  const points: bigint[] = [];
  const max = (1n << 63n) - 1n;
  const interval = (max / BigInt(numInitialChunks)) * 2n;
  let current = 0n;
  if (numInitialChunks % 2 === 0) {
    points.push(0n);
    current += interval;
  } else {
    current += interval / 2n;
  }
  for (let i = 0; i < Math.floor((numInitialChunks - 1) / 2); i++) {
    points.push(current, -current);
    current += interval;
  }
  points.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return points.map((p) => Long.fromBigInt(p));
}

export function minKeyDoc(key: Document): Document {
  return Object.fromEntries(Object.keys(key).map((k) => [k, new MinKey()]));
}

export function maxKeyDoc(key: Document): Document {
  return Object.fromEntries(Object.keys(key).map((k) => [k, new MaxKey()]));
}

/** Completes a split point with MinKey for the fields after the given prefix. */
export function completeKey(partial: Document, key: Document): Document {
  return Object.fromEntries(
    Object.keys(key).map((k) => [k, k in partial ? partial[k] : new MinKey()]),
  );
}

export function versionOf(major: number, minor: number): Timestamp {
  return new Timestamp({ t: major, i: minor });
}

export function isShardKeyPattern(entry: CollectionEntry | undefined): entry is CollectionEntry {
  return entry !== undefined;
}

export { getPath };
