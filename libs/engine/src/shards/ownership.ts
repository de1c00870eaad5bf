import type { Document } from 'bson';
import { compareKeyDocs, compareKeyValues } from './key-order';
import { hashShardKeyValue } from './shard-hash';

/** One sharded collection of a source at snapshot time, with its chunks. */
export interface ShardedCollectionSnapshot {
  /** `db.coll`. */
  ns: string;
  /** Collection UUID: 32 lowercase hex digits. */
  uuid: string;
  /** Shard key pattern, in order (`1`, `-1` or `'hashed'` per field). */
  key: Document;
  unique: boolean;
  /** Chunk ranges `[min, max)` over shard-key values (bounds decoded without promotion). */
  chunks: { min: Document; max: Document; shard: string }[];
}

/** The config server's routing metadata of a sharded source, read at one moment. */
export interface ShardingSnapshot {
  /** Shard ids, sorted. */
  shards: string[];
  /** config.databases: each database's primary shard. */
  databases: { name: string; primary: string }[];
  /** config.collections (not dropped) with their config.chunks (matched by uuid). */
  collections: ShardedCollectionSnapshot[];
  /** balancerStatus.mode at snapshot time. */
  balancer: { mode: string };
}

interface KeyField {
  /** The pattern's field name (dotted paths included, as in a documentKey). */
  name: string;
  parts: string[];
  hashed: boolean;
}

/** A collection's chunks sorted by min, bounds as positional value arrays for the search. */
interface ChunkIndex {
  fields: KeyField[];
  mins: unknown[][];
  maxes: unknown[][];
  shards: string[];
}

/**
 * Which shard owns a document, decided as mongos routes it: for a sharded collection, the chunk
 * whose `[min, max)` range holds the document's shard-key value (MongoDB's BSON order, hashed
 * fields as their hash64); for an unsharded one, the database's primary shard.
 */
export class ShardOwnership {
  private readonly byUuid = new Map<string, ShardedCollectionSnapshot>();
  private readonly indexes = new Map<string, ChunkIndex>();
  private readonly primaries: Map<string, string>;

  constructor(
    readonly snapshot: ShardingSnapshot,
    private readonly fallbackShard: string,
  ) {
    this.primaries = new Map(snapshot.databases.map((d) => [d.name, d.primary]));
    for (const coll of snapshot.collections) {
      const uuid = normalizeUuid(coll.uuid);
      this.byUuid.set(uuid, coll);
      this.indexes.set(uuid, indexChunks(coll));
    }
  }

  /** The sharded collection with this UUID (hex), if sharded in the snapshot. */
  sharded(uuid: string | undefined): ShardedCollectionSnapshot | undefined {
    return uuid === undefined ? undefined : this.byUuid.get(normalizeUuid(uuid));
  }

  /**
   * Owner of a document, or of a change event's documentKey (shard-key fields, then `_id`), of
   * the collection `uuid` in database `db`: sharded, the chunk holding its shard-key value;
   * unsharded, the database's primary shard (or the fallback when the database is newer than
   * the snapshot).
   */
  ownerOf(db: string, uuid: string | undefined, doc: Document): string {
    const index = uuid === undefined ? undefined : this.indexes.get(normalizeUuid(uuid));
    if (!index) return this.primaryOf(db);
    const key = index.fields.map((f) => keyValue(doc, f));
    // The last chunk whose min <= key (chunks are contiguous and sorted by min).
    let lo = 0;
    let hi = index.mins.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (compareKeys(index.mins[mid]!, key) <= 0) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (found < 0 || compareKeys(key, index.maxes[found]!) >= 0) {
      throw new Error(
        `no chunk of ${this.sharded(uuid)!.ns} holds the shard key value: its chunk metadata has a gap`,
      );
    }
    return index.shards[found]!;
  }

  /** Owner of every document of an unsharded collection (its database primary or the fallback). */
  primaryOf(db: string): string {
    return this.primaries.get(db) ?? this.fallbackShard;
  }

  /**
   * Which worker of a per-shard sync copies a document and applies its change events. Sharded
   * collections: by a hash of `_id` over the workers (`members`, sorted), NOT by chunk — an
   * update that changes a document's shard key moves it between shards (a delete on one, an
   * insert on the other), and two workers applying those halves at their own speeds could
   * reorder them; by `_id`, every event of a document is applied by one worker, in stream
   * order. Unsharded collections: the worker of their database's primary shard (a collection
   * of a database created later: the fallback, i.e. the coordinator).
   */
  assignee(db: string, uuid: string | undefined, doc: Document, members: string[]): string {
    if (!this.sharded(uuid) || members.length === 0) return this.primaryOf(db);
    const hash = hashShardKeyValue(doc._id);
    const slot = Number(BigInt.asUintN(64, hash.toBigInt()) % BigInt(members.length));
    return members[slot]!;
  }
}

function normalizeUuid(uuid: string): string {
  return uuid.replace(/-/g, '').toLowerCase();
}

function indexChunks(coll: ShardedCollectionSnapshot): ChunkIndex {
  const fields = Object.entries(coll.key).map(([name, kind]) => ({
    name,
    parts: name.split('.'),
    hashed: kind === 'hashed',
  }));
  const bounds = (doc: Document) => fields.map((f) => doc[f.name]);
  const chunks = coll.chunks
    .map((c) => ({ min: bounds(c.min), max: bounds(c.max), shard: c.shard }))
    .sort((a, b) => compareKeys(a.min, b.min));
  return {
    fields,
    mins: chunks.map((c) => c.min),
    maxes: chunks.map((c) => c.max),
    shards: chunks.map((c) => c.shard),
  };
}

function compareKeys(a: unknown[], b: unknown[]): number {
  for (let i = 0; i < a.length; i++) {
    const c = compareKeyValues(a[i], b[i]);
    if (c !== 0) return c;
  }
  return 0;
}

/**
 * The shard-key value of one field (ShardKeyPattern::extractShardKeyFromDoc): a documentKey
 * names a dotted field literally (`{"a.b": v, _id}`), a document nests it; missing is null.
 */
function keyValue(doc: Document, field: KeyField): unknown {
  let value: unknown;
  if (Object.prototype.hasOwnProperty.call(doc, field.name)) value = doc[field.name];
  else {
    value = doc;
    for (const part of field.parts) value = isPlainDocument(value) ? value[part] : undefined;
  }
  if (value === undefined) value = null;
  return field.hashed ? hashShardKeyValue(value) : value;
}

function isPlainDocument(v: unknown): v is Document {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    !(v instanceof Date) &&
    !(v instanceof Uint8Array) &&
    (v as { _bsontype?: unknown })._bsontype === undefined
  );
}

/**
 * Same routing in two snapshots: the same sharded collections with the same chunks on the
 * same shards, and the same database primaries. A difference taken around the planning means
 * a chunk migration (or movePrimary, or a new sharding) ran meanwhile.
 */
export function sameChunkMap(a: ShardingSnapshot, b: ShardingSnapshot): boolean {
  const primaries = (s: ShardingSnapshot) =>
    s.databases
      .map((d) => `${d.name}=${d.primary}`)
      .sort()
      .join(',');
  if (primaries(a) !== primaries(b) || a.collections.length !== b.collections.length) return false;
  const other = new Map(b.collections.map((c) => [c.uuid, c]));
  return a.collections.every((c) => {
    const d = other.get(c.uuid);
    if (!d || d.chunks.length !== c.chunks.length) return false;
    const order = (x: { min: Document }, y: { min: Document }) => compareKeyDocs(x.min, y.min);
    const left = [...c.chunks].sort(order);
    const right = [...d.chunks].sort(order);
    return left.every(
      (chunk, i) =>
        chunk.shard === right[i]!.shard &&
        compareKeyDocs(chunk.min, right[i]!.min) === 0 &&
        compareKeyDocs(chunk.max, right[i]!.max) === 0,
    );
  });
}

/** Where a chunk map taken during the sync disagrees with the one taken at T0. */
export interface ChunkMove {
  ns: string;
  /** The moved range (a chunk of the later map), or null for a database's primary shard. */
  range: { min: Document; max: Document } | null;
  from: string;
  to: string;
}

/**
 * The first range of a T0 collection (or database primary) that another shard owns now: a chunk
 * migration (moveChunk/moveRange, the balancer) or movePrimary since T0. Splits and merges that
 * keep every range on its shard are not moves; collections sharded after T0 are not compared.
 */
export function firstChunkMove(t0: ShardingSnapshot, now: ShardingSnapshot): ChunkMove | null {
  const primaries = new Map(now.databases.map((d) => [d.name, d.primary]));
  for (const db of t0.databases) {
    const current = primaries.get(db.name);
    if (current !== undefined && current !== db.primary) {
      return { ns: db.name, range: null, from: db.primary, to: current };
    }
  }
  const later = new Map(now.collections.map((c) => [normalizeUuid(c.uuid), c]));
  for (const coll of t0.collections) {
    const current = later.get(normalizeUuid(coll.uuid));
    if (!current) continue; // dropped or unsharded since: DDL events say so
    for (const chunk of current.chunks) {
      for (const old of coll.chunks) {
        const overlaps =
          compareKeyDocs(old.min, chunk.max) < 0 && compareKeyDocs(chunk.min, old.max) < 0;
        if (overlaps && old.shard !== chunk.shard) {
          return {
            ns: coll.ns,
            range: { min: chunk.min, max: chunk.max },
            from: old.shard,
            to: chunk.shard,
          };
        }
      }
    }
  }
  return null;
}
