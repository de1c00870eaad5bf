import { Binary, ObjectId, Timestamp, UUID, type Document } from 'bson';
import type { ClusterClock } from '../clock/cluster-clock';
import type { EmulatedReplicaSet } from '../index';
import type { NodeCommandExecutor } from '../server/dispatcher';

/** One shard: a replica set with its own listener, reachable directly and through mongos. */
export interface ShardHandle {
  readonly id: string;
  readonly rs: EmulatedReplicaSet;
  readonly executor: NodeCommandExecutor;
}

/** config.databases document (7.0 shape: `partitioned` is no longer written). */
export interface DatabaseEntry {
  _id: string;
  primary: string;
  version: { uuid: Binary; timestamp: Timestamp; lastMod: number };
}

/** config.collections document. */
export interface CollectionEntry {
  _id: string;
  lastmodEpoch: ObjectId;
  lastmod: Date;
  timestamp: Timestamp;
  uuid: Binary;
  key: Document;
  unique: boolean;
  noBalance: boolean;
  /** Written as `false` by setAllowMigrations; absent when migrations are allowed. */
  permitMigrations?: boolean;
}

/** config.chunks document (7.0: keyed by the collection's uuid, not its namespace). */
export interface ChunkEntry {
  _id: ObjectId;
  uuid: Binary;
  min: Document;
  max: Document;
  shard: string;
  lastmod: Timestamp;
  onCurrentShardSince: Timestamp;
  history: Document[];
}

/**
 * The config server's metadata, shared by every emulated mongos of one cluster: shards,
 * databases with their primary shard, sharded collections and their chunks.
 */
export class ShardingMetadata {
  readonly databases = new Map<string, DatabaseEntry>();
  readonly collections = new Map<string, CollectionEntry>();
  chunks: ChunkEntry[] = [];
  private nextPrimary = 0;
  /** balancerStart/balancerStop state ('full' or 'off'); nothing balances automatically. */
  balancerMode: 'full' | 'off' = 'full';
  readonly topologyTime: Timestamp;

  constructor(
    readonly shards: ShardHandle[],
    readonly clock: ClusterClock,
  ) {
    this.topologyTime = clock.tick();
  }

  shard(id: string): ShardHandle {
    const shard = this.shards.find((s) => s.id === id);
    if (!shard) throw new Error(`unknown shard ${id}`);
    return shard;
  }

  /** The database's entry, created with a round-robin primary shard when `create` is set. */
  database(name: string, create: boolean): DatabaseEntry | undefined {
    let entry = this.databases.get(name);
    if (!entry && create) {
      const primary = this.shards[this.nextPrimary % this.shards.length].id;
      this.nextPrimary += 1;
      entry = {
        _id: name,
        primary,
        version: { uuid: new UUID(), timestamp: this.clock.tick(), lastMod: 1 },
      };
      this.databases.set(name, entry);
    }
    return entry;
  }

  dropDatabase(name: string): void {
    this.databases.delete(name);
    for (const ns of [...this.collections.keys()]) {
      if (ns.startsWith(`${name}.`)) this.dropCollection(ns);
    }
  }

  dropCollection(ns: string): void {
    const entry = this.collections.get(ns);
    if (!entry) return;
    this.collections.delete(ns);
    this.chunks = this.chunks.filter((c) => !sameUuid(c.uuid, entry.uuid));
  }

  chunksOf(entry: CollectionEntry): ChunkEntry[] {
    return this.chunks.filter((c) => sameUuid(c.uuid, entry.uuid));
  }

  /** Registers a sharded collection and its initial chunks (version 1|i, in key order). */
  addCollection(
    ns: string,
    uuid: Binary,
    key: Document,
    unique: boolean,
    initial: Array<{ min: Document; max: Document; shard: string }>,
  ): CollectionEntry {
    const timestamp = this.clock.tick();
    const entry: CollectionEntry = {
      _id: ns,
      lastmodEpoch: new ObjectId(),
      lastmod: new Date(),
      timestamp,
      uuid,
      key,
      unique,
      noBalance: false,
    };
    this.collections.set(ns, entry);
    initial.forEach(({ min, max, shard }, i) => {
      this.chunks.push({
        _id: new ObjectId(),
        uuid,
        min,
        max,
        shard,
        lastmod: new Timestamp({ t: 1, i }),
        onCurrentShardSince: timestamp,
        history: [{ validAfter: timestamp, shard }],
      });
    });
    return entry;
  }

  /** The documents of config.<name> as mongos reads them from the config server. */
  /**
   * config.changelog (ShardingLogging::logChange): `{_id: "<host>-<time>-<oid>", server, shard,
   * clientAddr, time, what, ns, details}`, oldest first. Like the capped collection it is,
   * only the newest entries are kept.
   */
  readonly changelog: Document[] = [];

  logChange(
    what: string,
    ns: string,
    details: Document,
    shard: ShardHandle,
    clientAddr: string,
  ): void {
    const time = new Date();
    const server = shard.rs.node.host;
    this.changelog.push({
      _id: `${server}-${time.toISOString()}-${new ObjectId().toHexString()}`,
      server,
      shard: shard.id,
      clientAddr,
      time,
      what,
      ns,
      details,
    });
    if (this.changelog.length > 10_000) this.changelog.shift();
  }

  configDocuments(collection: string): Document[] | undefined {
    switch (collection) {
      case 'changelog':
        return this.changelog.map((e) => ({ ...e, details: { ...(e.details as Document) } }));
      case 'shards':
        return this.shards.map((s) => this.shardDocument(s));
      case 'databases':
        return [...this.databases.values()].map((d) => ({ ...d, version: { ...d.version } }));
      case 'collections':
        return [...this.collections.values()].map((c) => ({ ...c }));
      case 'chunks':
        return this.chunks.map((c) => ({ ...c, history: c.history.map((h) => ({ ...h })) }));
      default:
        return undefined;
    }
  }

  shardDocument(shard: ShardHandle): Document {
    return {
      _id: shard.id,
      host: `${shard.rs.name}/${shard.rs.node.host}`,
      state: 1,
      topologyTime: this.topologyTime,
    };
  }
}

export function sameUuid(a: Binary, b: Binary): boolean {
  return Buffer.from(a.buffer).equals(Buffer.from(b.buffer));
}

/** Highest chunk version of a collection as `Timestamp(major, minor)`. */
export function maxChunkVersion(chunks: ChunkEntry[]): Timestamp {
  let best = new Timestamp({ t: 0, i: 0 });
  for (const c of chunks) {
    if (c.lastmod.t > best.t || (c.lastmod.t === best.t && c.lastmod.i > best.i)) best = c.lastmod;
  }
  return best;
}
