import { createHash, randomUUID } from 'node:crypto';
import { FakeCoordinationStore } from './in-memory-coordination';
import { BSON, Timestamp, type Document } from 'bson';
import { FakeWatermarkStore } from './in-memory-watermarks';
import type { ClusterDescription } from '../ports/cluster-description';
import type { ClusterDirectory } from '../ports/cluster-directory';
import type {
  DestinationCluster,
  IndexModification,
  InsertResult,
} from '../ports/destination-cluster';
import {
  partitionVisibility,
  type JobRecord,
  type JobStore,
  type PartitionRecord,
  type PersistedJob,
} from '../ports/job-store';
import { deepSnapshot } from '../job/job-session';
import type { ShardingSnapshot } from '../shards/ownership';
import {
  SourceNamespaceChangedError,
  type CollectionInfo,
  type DocumentBatch,
  type RangeDigest,
  type ReadOptions,
  type HistoryWindow,
  type SourceCluster,
} from '../ports/source-cluster';

/**
 * In-memory fakes of the ports for unit tests. `_id` order is simplified (numbers < strings <
 * others by serialized bytes), enough to test the engine's logic, not MongoDB's comparison.
 */
export interface FakeCollection {
  /** Collection UUID (hex); views have none. */
  uuid?: string;
  options: Document;
  type: CollectionInfo['type'];
  indexes: Document[];
  documents: Document[];
}

export function compareIds(a: unknown, b: unknown): number {
  const rank = (v: unknown): number => (typeof v === 'number' ? 0 : typeof v === 'string' ? 1 : 2);
  const va = unwrap(a);
  const vb = unwrap(b);
  if (rank(va) !== rank(vb)) return rank(va) - rank(vb);
  if (typeof va === 'number' && typeof vb === 'number') return va - vb;
  if (typeof va === 'string' && typeof vb === 'string') return va < vb ? -1 : va > vb ? 1 : 0;
  return Buffer.compare(
    Buffer.from(BSON.serialize({ v: va })),
    Buffer.from(BSON.serialize({ v: vb })),
  );
}

function unwrap(v: unknown): unknown {
  if (
    v &&
    typeof v === 'object' &&
    '_bsontype' in v &&
    ['Int32', 'Double'].includes(String((v as any)._bsontype))
  ) {
    return (v as { valueOf(): number }).valueOf();
  }
  return v;
}

function sizeOf(documents: Document[]): { bytes: number; count: number } {
  return {
    bytes: documents.reduce((s, d) => s + BSON.calculateObjectSize(d), 0),
    count: documents.length,
  };
}

export class FakeCluster implements SourceCluster, DestinationCluster {
  readonly databases = new Map<string, Map<string, FakeCollection>>();
  time = new Timestamp({ t: 100, i: 1 });
  writeBlocked = false;
  /** Hooks for failure injection. */
  failInsert: ((ns: string, docs: Document[]) => Error | null) | null = null;
  readDelayMs = 0;
  reads = 0;
  /** What `historyWindows` reports (null: a source whose history cannot be read; an array: shards). */
  history: HistoryWindow | HistoryWindow[] | null = null;
  readonly store: FakeJobStore;

  constructor(
    readonly name: string,
    readonly description: ClusterDescription,
  ) {
    this.store = new FakeJobStore();
  }

  collection(database: string, name: string, create = true): FakeCollection | undefined {
    let db = this.databases.get(database);
    if (!db) {
      if (!create) return undefined;
      db = new Map();
      this.databases.set(database, db);
    }
    let coll = db.get(name);
    if (!coll && create) {
      coll = {
        uuid: randomUUID().replace(/-/g, ''),
        options: {},
        type: 'collection',
        indexes: [{ v: 2, key: { _id: 1 }, name: '_id_' }],
        documents: [],
      };
      db.set(name, coll);
    }
    return coll;
  }

  seed(
    database: string,
    name: string,
    documents: Document[],
    options: Document = {},
  ): FakeCollection {
    const coll = this.collection(database, name)!;
    coll.options = options;
    coll.documents.push(...documents);
    return coll;
  }

  async describe(): Promise<ClusterDescription> {
    return this.description;
  }
  async clusterTime(): Promise<Timestamp> {
    return this.time;
  }
  async listDatabaseNames(): Promise<string[]> {
    return [...this.databases.keys()];
  }
  async listCollections(database: string): Promise<CollectionInfo[]> {
    return [...(this.databases.get(database)?.entries() ?? [])].map(([name, c]) => ({
      name,
      type: c.type,
      options: c.options,
      ...(c.type === 'collection' && c.uuid ? { uuid: c.uuid } : {}),
    }));
  }
  async listCollectionNames(database: string): Promise<string[]> {
    return [...(this.databases.get(database)?.keys() ?? [])];
  }
  /** `listIndexes` calls, and `listIndexesMany` reads (several collections each). */
  indexListings = 0;
  batchedIndexListings = 0;
  /** Off: the cluster cannot list several collections' indexes at once. */
  listsIndexesTogether = true;
  /** Runs once a batched listing has read its answer, before it is returned. */
  afterIndexListing: (() => void) | null = null;
  async listIndexes(database: string, collection: string): Promise<Document[]> {
    this.indexListings++;
    return [...(this.collection(database, collection, false)?.indexes ?? [])];
  }
  async listIndexesMany(
    database: string,
    collections: string[],
  ): Promise<Array<Document[] | null>> {
    if (!this.listsIndexesTogether) return collections.map(() => null);
    this.batchedIndexListings++;
    const answer = collections.map((collection) => {
      const indexes = this.collection(database, collection, false)?.indexes;
      return indexes && indexes.length > 0 ? [...indexes] : null;
    });
    this.afterIndexListing?.();
    return answer;
  }
  async collectionStats(
    database: string,
    collection: string,
  ): Promise<{ bytes: number; count: number }> {
    this.statsReads++;
    return sizeOf(this.collection(database, collection, false)?.documents ?? []);
  }
  /** `collectionStats` calls, and `collectionStatsMany` reads (several collections each). */
  statsReads = 0;
  batchedStatsReads = 0;
  async collectionStatsMany(
    database: string,
    collections: string[],
  ): Promise<Array<{ bytes: number; count: number } | null>> {
    if (!this.listsIndexesTogether) return collections.map(() => null);
    this.batchedStatsReads++;
    return collections.map((collection) => {
      const found = this.collection(database, collection, false);
      return found ? sizeOf(found.documents) : null;
    });
  }
  async databaseStats(database: string): Promise<{ bytes: number; count: number }> {
    return sizeOf([...(this.databases.get(database)?.values() ?? [])].flatMap((c) => c.documents));
  }
  async sampleSortedIds(database: string, collection: string, size: number): Promise<unknown[]> {
    const docs = this.collection(database, collection, false)?.documents ?? [];
    const step = Math.max(1, Math.floor(docs.length / size));
    return docs
      .filter((_, i) => i % step === 0)
      .slice(0, size)
      .map((d) => d._id)
      .sort(compareIds);
  }
  async *read(
    database: string,
    collection: string,
    options: ReadOptions,
  ): AsyncIterable<DocumentBatch> {
    const docs = this.rangeDocuments(database, collection, options);
    // A read in `_id` order is the verifier's (one per range compared); the copy's are counted.
    if (options.sortById) this.comparisons++;
    for (let i = 0; i < docs.length; i += options.batchSize) {
      if (options.signal?.aborted) return;
      if (!options.sortById) this.reads++;
      if (this.readDelayMs > 0) await new Promise((r) => setTimeout(r, this.readDelayMs));
      const documents = docs.slice(i, i + options.batchSize);
      const sizes = documents.map((d) => BSON.calculateObjectSize(d));
      yield { documents, sizes, bytes: sizes.reduce((s, n) => s + n, 0) };
    }
  }
  /** Documents returned by `readByIds` (what the verifier's document re-checks read). */
  documentsReadById = 0;
  async readByIds(
    database: string,
    collection: string,
    ids: unknown[],
    options: { uuid?: string; signal?: AbortSignal } = {},
  ): Promise<Uint8Array[]> {
    const docs = this.rangeDocuments(database, collection, { range: {}, ...options });
    const found = docs.filter((d) => ids.some((id) => compareIds(d._id, id) === 0));
    this.documentsReadById += found.length;
    return found.map((d) => BSON.serialize(d));
  }
  /**
   * Ranges read in `_id` order (the verifier's comparisons, one read per range and side),
   * counted apart from `reads` (which tests use to see what the copy read).
   */
  comparisons = 0;
  private rangeDocuments(
    database: string,
    collection: string,
    options: { range: ReadOptions['range']; uuid?: string },
  ): Document[] {
    const coll = this.collection(database, collection, false);
    if (options.uuid !== undefined && coll?.uuid !== options.uuid) {
      throw new SourceNamespaceChangedError(
        `${database}.${collection}`,
        `collection ${database}.${collection} does not have UUID ${options.uuid}`,
      );
    }
    if (!coll) return [];
    if (options.range === 'natural') return coll.documents;
    const { min, max } = options.range;
    const hasMin = 'min' in options.range;
    const hasMax = 'max' in options.range;
    return coll.documents
      .filter(
        (d) => (!hasMin || compareIds(d._id, min) >= 0) && (!hasMax || compareIds(d._id, max) < 0),
      )
      .sort((a, b) => compareIds(a._id, b._id));
  }
  /** Reads of several whole collections at once (`digestWhole`), counted apart from the rest. */
  batchedDigests = 0;
  /** Off: the cluster cannot digest collections together (a server without `$unionWith`). */
  digestsTogether = true;
  async digestWhole(database: string, collections: string[]): Promise<RangeDigest[]> {
    if (!this.digestsTogether) throw new Error('Unrecognized pipeline stage name: $unionWith');
    this.batchedDigests++;
    return collections.map((collection) => this.digestOf(database, collection));
  }
  private digestOf(database: string, collection: string): RangeDigest {
    const hash = createHash('sha256');
    let bytes = 0;
    const docs = this.rangeDocuments(database, collection, { range: {} });
    for (const doc of docs) {
      const raw = BSON.serialize(doc);
      hash.update(raw);
      bytes += raw.byteLength;
    }
    return { count: docs.length, bytes, hash: hash.digest('hex') };
  }
  async createCollection(database: string, collection: string, options: Document): Promise<void> {
    if (this.collection(database, collection, false)) return;
    this.collection(database, collection)!.options = options;
  }
  async createView(
    database: string,
    view: string,
    viewOn: string,
    pipeline: Document[],
    options: Document,
  ): Promise<void> {
    if (this.collection(database, view, false)) return;
    const coll = this.collection(database, view)!;
    coll.type = 'view';
    coll.indexes = [];
    coll.options = { viewOn, pipeline, ...options };
  }
  async createIndexes(database: string, collection: string, specs: Document[]): Promise<void> {
    const coll = this.collection(database, collection)!;
    for (const spec of specs)
      if (!coll.indexes.some((i) => i.name === spec.name)) coll.indexes.push(spec);
  }
  async modifyIndex(
    database: string,
    collection: string,
    change: IndexModification,
  ): Promise<void> {
    const index = this.collection(database, collection)!.indexes.find(
      (i) => i.name === change.name,
    )!;
    const { name: _name, ...rest } = change;
    Object.assign(index, rest);
    // As on mongod: the conversion to unique ends the prepareUnique stage.
    if (change.unique === true) delete index.prepareUnique;
  }
  async insertUnordered(
    database: string,
    collection: string,
    documents: Document[],
  ): Promise<InsertResult> {
    const error = this.failInsert?.(`${database}.${collection}`, documents);
    if (error) throw error;
    const coll = this.collection(database, collection)!;
    const ids = new Set(
      coll.documents.map((d) => Buffer.from(BSON.serialize({ v: d._id })).toString('hex')),
    );
    let inserted = 0;
    let duplicates = 0;
    for (const doc of documents) {
      const key = Buffer.from(BSON.serialize({ v: doc._id })).toString('hex');
      if (ids.has(key)) duplicates++;
      else {
        ids.add(key);
        coll.documents.push(doc);
        inserted++;
      }
    }
    return { inserted, duplicates };
  }
  async setUserWriteBlocking(enabled: boolean): Promise<void> {
    this.writeBlocked = enabled;
  }
  /** A replica set: no shards, no balancer. */
  async shardingSnapshot(): Promise<ShardingSnapshot> {
    return { shards: [], databases: [], collections: [], balancer: { mode: 'off' } };
  }
  async balancerMode(): Promise<'full' | 'off' | null> {
    return null;
  }
  async setBalancer(_enabled: boolean): Promise<void> {}
  async writeNoop(_message: string): Promise<Timestamp> {
    this.time = new Timestamp({ t: this.time.t, i: this.time.i + 1 });
    return this.time;
  }
  async historyWindows(): Promise<HistoryWindow[] | null> {
    return this.history && (Array.isArray(this.history) ? this.history : [this.history]);
  }
  async dropCollection(database: string, collection: string): Promise<void> {
    this.databases.get(database)?.delete(collection);
  }
  async renameCollection(
    from: { db: string; coll: string },
    to: { db: string; coll: string },
  ): Promise<boolean> {
    const coll = this.collection(from.db, from.coll, false);
    if (!coll) return false;
    this.databases.get(from.db)!.delete(from.coll);
    this.collection(to.db, to.coll);
    this.databases.get(to.db)!.set(to.coll, coll);
    return true;
  }
  async shardedCollections(): Promise<Map<string, { key: Document; unique: boolean }>> {
    return new Map(
      [...this.sharded].map(([ns, { key, unique }]) => [ns, { key, unique }] as const),
    );
  }
  /** `db.coll` → shard key, in the order collections were sharded. */
  readonly sharded = new Map<string, { key: Document; unique: boolean; documentsBefore: number }>();
  async shardIds(): Promise<string[]> {
    return [];
  }
  async chunkCount(database: string, collection: string): Promise<number> {
    return this.sharded.has(`${database}.${collection}`) ? 1 : 0;
  }
  async splitAt(): Promise<void> {}
  async moveRange(): Promise<void> {}
  async sampleKeys(database: string, collection: string, fields: string[], size: number) {
    const docs = this.collection(database, collection)?.documents ?? [];
    return docs
      .slice(0, size)
      .map((d) => Object.fromEntries(fields.filter((f) => f in d).map((f) => [f, d[f]])));
  }
  async shardCollection(
    database: string,
    collection: string,
    key: Document,
    unique: boolean,
  ): Promise<void> {
    const coll = this.collection(database, collection);
    this.sharded.set(`${database}.${collection}`, {
      key,
      unique,
      documentsBefore: coll!.documents.length,
    });
  }
  async collMod(database: string, collection: string, options: Document): Promise<void> {
    const coll = this.collection(database, collection, false);
    if (coll) coll.options = { ...coll.options, ...options };
  }
  async dropIndex(database: string, collection: string, name: string): Promise<void> {
    const coll = this.collection(database, collection, false);
    if (coll) coll.indexes = coll.indexes.filter((i) => i.name !== name);
  }
}

/** A JobStore in memory with the real store's visibility rule (partition sets). */
export class FakeJobStore implements JobStore {
  job: JobRecord | null = null;
  partitions = new Map<string, PartitionRecord>();
  /** Called before every write; throw from it to simulate a crash between two writes. */
  beforeWrite: ((what: string) => void) | null = null;
  writes = 0;
  async load(): Promise<PersistedJob | null> {
    if (!this.job) return null;
    const job = deepSnapshot(this.job);
    const visible: PartitionRecord[] = [];
    const isVisible = partitionVisibility(job);
    for (const [id, p] of this.partitions) {
      if (isVisible(p)) visible.push({ ...p });
      else this.partitions.delete(id);
    }
    visible.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.index - b.index));
    return { job, partitions: visible };
  }
  private write(what: string): void {
    this.beforeWrite?.(what);
    this.writes++;
  }
  async saveJob(job: JobRecord, partitions?: PartitionRecord[]): Promise<void> {
    const snapshot = deepSnapshot(job);
    if (partitions?.length) await this.addPartitions(partitions);
    this.write('saveJob');
    this.job = snapshot;
  }
  async addPartitions(partitions: PartitionRecord[]): Promise<void> {
    this.write('addPartitions');
    for (const p of partitions) this.partitions.set(p._id, { ...p });
  }
  async markPartitionDone(id: string, copiedBytes: number, copiedDocuments: number): Promise<void> {
    this.write('markPartitionDone');
    const p = this.partitions.get(id);
    if (p) this.partitions.set(id, { ...p, status: 'done', copiedBytes, copiedDocuments });
  }
  async deleteJob(): Promise<void> {
    this.write('deleteJob');
    this.job = null;
    this.partitions.clear();
  }
}

export function replicaSet(setName: string, host: string): ClusterDescription {
  return {
    kind: 'replicaSet',
    shardCount: 1,
    displayHost: host,
    fingerprint: { kind: 'replicaSet', setName, members: [host] },
  };
}

export class FakeDirectory implements ClusterDirectory {
  readonly clusters: Map<string, FakeCluster>;
  constructor(...clusters: FakeCluster[]) {
    this.clusters = new Map(clusters.map((c) => [c.name, c]));
  }
  names(): string[] {
    return [...this.clusters.keys()];
  }
  source(name: string): SourceCluster {
    return this.clusters.get(name)!;
  }
  destination(name: string): DestinationCluster {
    return this.clusters.get(name)!;
  }
  jobStore(name: string): JobStore {
    return this.clusters.get(name)!.store;
  }
  private readonly coordinations = new Map<string, FakeCoordinationStore>();
  coordination(name: string): FakeCoordinationStore {
    let store = this.coordinations.get(name);
    if (!store) this.coordinations.set(name, (store = new FakeCoordinationStore()));
    return store;
  }
  private readonly marks = new Map<string, FakeWatermarkStore>();
  watermarks(name: string): FakeWatermarkStore {
    let store = this.marks.get(name);
    if (!store) this.marks.set(name, (store = new FakeWatermarkStore()));
    return store;
  }
  /** A fake cluster has no shards of its own: a shard reads the whole fake (ownership filters). */
  async shardSource(name: string): Promise<SourceCluster> {
    return this.clusters.get(name)!;
  }
}
