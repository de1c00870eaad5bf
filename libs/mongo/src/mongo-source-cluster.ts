import type { ShardConnections } from './shard-connections';
import {
  SourceNamespaceChangedError,
  digestDocuments,
  rawDocumentBatch,
  uuidHex,
  type ClusterDescription,
  type CollectionInfo,
  type DocumentBatch,
  type HistoryWindow,
  type RangeDigest,
  type WholeCollections,
  type RawDocumentBatch,
  type ReadOptions,
  type ShardingSnapshot,
  type SourceCluster,
  type SourceWrite,
} from '@sync/engine';
import { resumeTokenTime } from '@sync/engine/apply';
import { Binary, BSON, Int32, Timestamp, type Document } from 'bson';
import { MongoServerError, ReadConcern, type MongoClient } from 'mongodb';

/** CollectionUUIDMismatch, NamespaceNotFound, QueryPlanKilled (drop/rename killed the cursor). */
const NAMESPACE_CHANGED_CODES = new Set([361, 26, 175]);
import { inspectCluster } from './cluster-inspector';
import { supportsCollectionUUID } from './server-features';
import { rawDocumentCursor, readRawBuffered } from './raw-cursor';
import { EXACT_BSON, toNumber } from './exact-bson';
import { balancerMode, readShardingSnapshot, setBalancer } from './sharding-metadata';

/** What the driver reads a BSON int32 with (as `raw-cursor` does). */
const { getInt32LE } = BSON.onDemand.NumberUtils;

/** Databases whose writes are not the application's (the sync's own metadata included). */
const INTERNAL_DBS = new Set(['admin', 'config', 'local', 'sync_reserved_for_internal_use']);

/**
 * Errors by which a server refuses `$indexStats` in a `$unionWith` for good: Unauthorized,
 * InvalidNamespace, and "unrecognized pipeline stage" / "stage not allowed here".
 */
const REFUSALS = new Set([13, 73, 40324, 31441]);

/** SourceCluster over the official driver; every read decodes with EXACT_BSON. */
export class MongoSourceCluster implements SourceCluster {
  /** The client talks to a mongos (no oplog of its own); learnt on first use (`isRouter`). */
  private router: boolean | undefined;
  /** The server refused `listIndexesMany`'s read for good: never asked again. */
  private indexStatsRefused = false;
  constructor(
    private readonly client: MongoClient,
    private readonly host: string,
    /** Direct clients of a sharded source's shards (oplog windows); absent: not looked at. */
    private readonly shards?: ShardConnections,
  ) {}

  describe(): Promise<ClusterDescription> {
    return inspectCluster(this.client, this.host);
  }

  /**
   * The cluster time every reply gossips (`$clusterTime`), falling back to `operationTime`: it is
   * at or after every write the cluster has acknowledged, which is what T0 must be.
   */
  async clusterTime(): Promise<Timestamp> {
    const reply = await this.client.db('admin').command({ ping: 1 });
    const time =
      (reply.$clusterTime as { clusterTime?: unknown } | undefined)?.clusterTime ??
      reply.operationTime;
    if (
      time instanceof Timestamp ||
      (time && (time as { _bsontype?: string })._bsontype === 'Timestamp')
    ) {
      return time as Timestamp;
    }
    const note = await this.client
      .db('admin')
      .command({ appendOplogNote: 1, data: { msg: 'cluster-sync T0' } });
    if (note.operationTime) return note.operationTime as Timestamp;
    throw new Error(
      'the source did not report a cluster time (is it a replica set or sharded cluster?)',
    );
  }

  async listDatabaseNames(): Promise<string[]> {
    const reply = await this.client.db('admin').command({ listDatabases: 1, nameOnly: true });
    return ((reply.databases as Array<{ name: string }>) ?? []).map((d) => d.name);
  }

  async listCollections(database: string): Promise<CollectionInfo[]> {
    return this.collectionInfos(database, {});
  }

  /** `listCollections` of the collections `filter` names, as the port describes them. */
  private async collectionInfos(database: string, filter: Document): Promise<CollectionInfo[]> {
    const infos = await this.client
      .db(database)
      .listCollections(filter, { ...EXACT_BSON, nameOnly: false })
      .toArray();
    return infos.map((info) => {
      const uuid = uuidHex((info as { info?: { uuid?: unknown } }).info?.uuid);
      return {
        name: info.name,
        type:
          info.type === 'view' ? 'view' : info.type === 'timeseries' ? 'timeseries' : 'collection',
        options: (info as { options?: Document }).options ?? {},
        ...(uuid !== undefined && info.type !== 'view' ? { uuid } : {}),
      };
    });
  }

  async listIndexes(database: string, collection: string): Promise<Document[]> {
    return this.client.db(database).collection(collection).listIndexes(EXACT_BSON).toArray();
  }

  /**
   * The indexes of several collections of one database in ONE read: `$indexStats` of each,
   * chained with `$unionWith`, each entry tagged with its collection's position. `spec` is the
   * index's description as `listIndexes` gives it. A collection's entry is null where this read
   * cannot stand in for `listIndexes`, and the caller asks `listIndexes`:
   * - no entry at all (a clustered collection has no `_id` index; a dropped one has none);
   * - an index still being built (`building: true`).
   * Null for all of them through a mongos (`$indexStats` answers per shard there, `listIndexes`
   * from one shard), and from then on for a server that refused the read (`$indexStats` needs
   * the `indexStats` privilege): the answer is the same either way, only the round trips differ.
   */
  async listIndexesMany(
    database: string,
    collections: string[],
  ): Promise<Array<Document[] | null>> {
    const none = collections.map(() => null);
    if (collections.length === 0 || this.indexStatsRefused) return none;
    // A `hello` that failed is asked again next time; this batch goes to `listIndexes`.
    if (await this.isRouter().catch(() => true)) return none;
    const found: Array<Document[] | null> = collections.map(() => []);
    const cursor = this.eachOf<{ n: Int32; spec: Document; building?: boolean }>(
      database,
      collections,
      { $indexStats: {} },
      { spec: '$spec', building: '$building' },
    );
    try {
      for await (const entry of cursor) {
        const n = toNumber(entry.n);
        const list = found[n];
        if (list === undefined) throw new Error(`listIndexesMany: an entry tagged ${n}`);
        if (list === null) continue;
        if (entry.building === true) found[n] = null;
        else list.push(entry.spec);
      }
    } catch (error) {
      // Refused for good (no privilege, a server without the stage): never asked again. Any
      // other failure leaves this batch to `listIndexes`, which reports it if it persists.
      if (error instanceof MongoServerError && REFUSALS.has(Number(error.code)))
        this.indexStatsRefused = true;
      return none;
    } finally {
      await cursor.close().catch(() => undefined);
    }
    return found.map((list) => (list === null || list.length === 0 ? null : list));
  }

  /**
   * The sizes of several collections of one database in ONE read: `$collStats` (storage
   * statistics: `size` and `count`, the figures `collStats` gives) of each, chained with
   * `$unionWith`. Null for a collection the read did not answer, and for all of them through a
   * mongos (one answer per shard there) or when the read failed (a collection dropped
   * meanwhile fails the whole read): the caller asks `collectionStats` for those.
   */
  async collectionStatsMany(
    database: string,
    collections: string[],
  ): Promise<Array<{ bytes: number; count: number } | null>> {
    const found: Array<{ bytes: number; count: number } | null> = collections.map(() => null);
    if (collections.length === 0) return found;
    if (await this.isRouter().catch(() => true)) return found;
    const cursor = this.eachOf<{ n: Int32; size?: unknown; count?: unknown }>(
      database,
      collections,
      { $collStats: { storageStats: {} } },
      { size: '$storageStats.size', count: '$storageStats.count' },
    );
    try {
      for await (const entry of cursor) {
        const n = toNumber(entry.n);
        if (!(n >= 0 && n < found.length)) throw new Error(`collectionStatsMany: entry ${n}`);
        const bytes = entry.size === undefined ? NaN : toNumber(entry.size);
        const count = entry.count === undefined ? NaN : toNumber(entry.count);
        found[n] = Number.isFinite(bytes) && Number.isFinite(count) ? { bytes, count } : null;
      }
    } catch {
      return collections.map(() => null);
    } finally {
      await cursor.close().catch(() => undefined);
    }
    return found;
  }

  /**
   * One aggregate over several collections of a database: `stage` (a source stage: it must come
   * first) on the first collection and on each other (`$unionWith`), every output reduced to
   * `fields` and tagged `n` with its collection's position.
   */
  private eachOf<T extends Document>(
    database: string,
    collections: string[],
    stage: Document,
    fields: Document,
  ) {
    const pipeline = unionOfEach(collections, (n) => [
      stage,
      { $replaceWith: { n: new Int32(n), ...fields } },
    ]);
    return this.client.db(database).collection(collections[0]!).aggregate<T>(pipeline, EXACT_BSON);
  }

  /** Whether the client talks to a mongos (`hello`, asked until one answers). */
  private async isRouter(): Promise<boolean> {
    if (this.router === undefined) {
      const hello = await this.client.db('admin').command({ hello: 1 });
      this.router = hello.msg === 'isdbgrid';
    }
    return this.router;
  }

  async collectionStats(
    database: string,
    collection: string,
  ): Promise<{ bytes: number; count: number }> {
    const reply = await this.client.db(database).command({ collStats: collection });
    return { bytes: toNumber(reply.size), count: toNumber(reply.count) };
  }

  async databaseStats(database: string): Promise<{ bytes: number; count: number }> {
    const reply = await this.client.db(database).command({ dbStats: 1, scale: 1 });
    return { bytes: toNumber(reply.dataSize), count: toNumber(reply.objects) };
  }

  /** `$sample` then a server-side `$sort` on `_id`: MongoDB orders mixed-type ids for us. */
  async sampleKeys(
    database: string,
    collection: string,
    fields: string[],
    size: number,
  ): Promise<Document[]> {
    const projection: Document = Object.fromEntries(fields.map((f) => [f, 1]));
    if (!fields.includes('_id')) projection._id = 0;
    return this.client
      .db(database)
      .collection(collection)
      .aggregate([{ $sample: { size } }, { $project: projection }], {
        ...EXACT_BSON,
        allowDiskUse: true,
      })
      .toArray();
  }

  async sampleSortedIds(database: string, collection: string, size: number): Promise<unknown[]> {
    const docs = await this.client
      .db(database)
      .collection(collection)
      .aggregate([{ $sample: { size } }, { $project: { _id: 1 } }, { $sort: { _id: 1 } }], {
        ...EXACT_BSON,
        allowDiskUse: true,
      })
      .toArray();
    return docs.map((d) => d._id);
  }

  async shardedCollections(): Promise<Map<string, { key: Document; unique: boolean }>> {
    const out = new Map<string, { key: Document; unique: boolean }>();
    const hello = await this.client.db('admin').command({ hello: 1 });
    if (hello.msg !== 'isdbgrid') return out;
    const docs = await this.client
      .db('config')
      .collection('collections')
      .find({ dropped: { $ne: true } }, { promoteValues: true })
      .toArray();
    for (const doc of docs) {
      out.set(String(doc._id), { key: doc.key as Document, unique: doc.unique === true });
    }
    return out;
  }

  shardingSnapshot(): Promise<ShardingSnapshot> {
    return readShardingSnapshot(this.client);
  }

  balancerMode(): Promise<'full' | 'off' | null> {
    return balancerMode(this.client);
  }

  setBalancer(enabled: boolean): Promise<void> {
    return setBalancer(this.client, enabled);
  }

  async setUserWriteBlocking(enabled: boolean): Promise<void> {
    await this.client.db('admin').command({ setUserWriteBlockMode: 1, global: enabled });
  }

  /**
   * Reads the change stream from just after `point` up to a no-op written now (so the read has
   * an end even on a write-blocked, idle source) and returns the writes in user namespaces.
   * The end is reached by event time as well as by the stream's resume token: a source that
   * keeps writing its own metadata (the shard claims live there after a per-shard reverse)
   * never leaves the stream idle, and its events past the no-op end the read as surely.
   */
  async writesAfter(point: Timestamp, limit: number): Promise<SourceWrite[]> {
    const until = await this.writeNoop('cluster-sync: commit check for writes after the point');
    const stream = this.client.watch<Document, Document>([], {
      ...EXACT_BSON,
      showExpandedEvents: true,
      startAtOperationTime: new Timestamp({ t: point.t, i: point.i + 1 }),
      maxAwaitTimeMS: 200,
    });
    const found: SourceWrite[] = [];
    const deadline = Date.now() + 30_000;
    const pastEnd = (time: Timestamp | undefined): boolean =>
      !!time && (time.t > until.t || (time.t === until.t && time.i >= until.i));
    try {
      while (found.length < limit) {
        const event = await stream.tryNext();
        const time = event
          ? (event.clusterTime as Timestamp | undefined)
          : resumeTokenTime(stream.resumeToken as Document | undefined);
        // A write at the no-op's own time cannot be (the no-op holds it): events strictly
        // after it end the read, and so does a token that reached it.
        if (event ? time && time.compare(until) > 0 : pastEnd(time)) break;
        if (event) {
          const ns = event.ns as { db?: string; coll?: string } | undefined;
          if (ns?.db && !INTERNAL_DBS.has(ns.db)) {
            const key = event.documentKey as Document | undefined;
            found.push({
              namespace: ns.coll ? `${ns.db}.${ns.coll}` : ns.db,
              operation: String(event.operationType),
              ...(key && '_id' in key
                ? { id: BSON.EJSON.stringify({ v: key._id }, { relaxed: false }).slice(5, -1) }
                : {}),
              ...(time ? { clusterTime: time } : {}),
            });
          }
        }
        if (Date.now() > deadline)
          throw new Error('the source change stream did not reach the commit check in 30 s');
      }
    } finally {
      await stream.close().catch(() => undefined);
    }
    return found;
  }

  /** `appendOplogNote`: its operationTime is the note's own oplog time. */
  async writeNoop(message: string): Promise<Timestamp> {
    const reply = await this.client
      .db('admin')
      .command({ appendOplogNote: 1, data: { msg: message } });
    const time =
      reply.operationTime ??
      (reply.$clusterTime as { clusterTime?: unknown } | undefined)?.clusterTime;
    if (!time) throw new Error('appendOplogNote did not report an operation time');
    return time as Timestamp;
  }

  /**
   * First and last entries of `local.oplog.rs` in natural order (what `rs.printReplicationInfo()`
   * reads): of the replica set, or — through a mongos, where `local` is each shard's own — of
   * every shard, read from its primary with the router's credentials. Null where an oplog cannot
   * be read (no right to read `local`, a shard not reachable directly).
   */
  async historyWindows(): Promise<HistoryWindow[] | null> {
    if (!(await this.isRouter())) {
      const window = await oplogWindow(this.client);
      return window && [window];
    }
    if (!this.shards) return null;
    const listed = await this.client.db('admin').command({ listShards: 1 });
    const shards = (listed.shards as Array<{ _id: unknown; host: unknown }> | undefined) ?? [];
    const windows: HistoryWindow[] = [];
    for (const shard of shards) {
      const window = await oplogWindow(this.shards.client(String(shard.host))).catch(
        () => null, // unreachable from here: the guard cannot vouch for this source
      );
      if (!window) return null;
      windows.push({ ...window, shard: String(shard._id) });
    }
    return windows.length > 0 ? windows : null;
  }

  /**
   * Streams a partition. `_id` ranges use hint + min/max index bounds (not `$gte/$lt`, which are
   * type-bracketed); documents arrive RAW so each one's exact byte size is known, then decode.
   */
  async *read(
    database: string,
    collection: string,
    options: ReadOptions,
  ): AsyncIterable<DocumentBatch> {
    for await (const batch of this.readRaw(database, collection, options)) {
      yield {
        documents: batch.documents.map((raw) => BSON.deserialize(raw, EXACT_BSON)),
        sizes: batch.documents.map((raw) => raw.byteLength),
        bytes: batch.bytes,
      };
    }
  }

  /**
   * Streams a partition as the server sent it: each document's BSON bytes, never decoded, in
   * batches bounded by `batchSize` and `maxBatchBytes` (the copy's bytes-to-bytes path).
   */
  async *readRaw(
    database: string,
    collection: string,
    options: ReadOptions,
  ): AsyncIterable<RawDocumentBatch> {
    const maxBytes = options.maxBatchBytes ?? Infinity;
    let documents: Uint8Array[] = [];
    let bytes = 0;
    for await (const served of this.rawBatches(database, collection, options)) {
      // A served batch within both bounds, with nothing held back, goes on as it is: no array
      // rebuilt a document at a time (the server's batch is asked at `batchSize` already).
      if (documents.length === 0 && served.length <= options.batchSize) {
        const whole = rawDocumentBatch(served);
        if (whole.bytes < maxBytes || served.length === 1) {
          if (served.length > 0) yield whole;
          if (options.signal?.aborted) return;
          continue;
        }
      }
      for (const buffer of served) {
        documents.push(buffer);
        bytes += buffer.byteLength;
        if (documents.length >= options.batchSize || bytes >= maxBytes) {
          yield { documents, bytes };
          if (options.signal?.aborted) return;
          documents = [];
          bytes = 0;
        }
      }
    }
    if (documents.length > 0) yield { documents, bytes };
  }

  /**
   * One aggregate for several small collections: the first collection's documents and each
   * other's (`$unionWith`, MongoDB 4.4+), every document wrapped as `{n, d: $$ROOT}` and sorted
   * by collection then `_id` under simple comparison (MongoDB leaves a union's order open),
   * read raw: `d` is each document's exact bytes, hashed per collection (`digestDocuments`).
   */
  async digestWhole(
    database: string,
    collections: string[],
    options: { signal?: AbortSignal } = {},
  ): Promise<RangeDigest[]> {
    if (collections.length === 0) return [];
    const documents = await this.readTogether(database, collections, {
      sortById: true,
      readConcern: { level: 'majority' },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return Promise.all(documents!.map((list) => digestDocuments([list])));
  }

  /**
   * The copy's read of many small collections: all of them in one aggregate (as `digestWhole`,
   * unsorted: the copy's inserts are unordered), majority, causally after `afterClusterTime`;
   * then ONE `listCollections` of their names gives the UUID each name has now, after the read.
   * A name whose UUID is not the catalog's was replaced (renamed, dropped, swapped) around the
   * read: the caller discards what was read under it and reads that collection alone, by UUID.
   */
  async readWholeMany(
    database: string,
    collections: string[],
    options: { maxBytes: number; afterClusterTime?: Timestamp; signal?: AbortSignal },
  ): Promise<WholeCollections | null> {
    if (collections.length === 0) return { documents: [], uuids: [] };
    const documents = await this.readTogether(database, collections, {
      sortById: false,
      readConcern: options.afterClusterTime
        ? { level: 'majority', afterClusterTime: options.afterClusterTime }
        : { level: 'majority' },
      maxBytes: options.maxBytes,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (!documents) return null;
    const uuids = new Map<string, string>();
    for (const info of await this.collectionInfos(database, { name: { $in: collections } }))
      if (info.type === 'collection' && info.uuid !== undefined) uuids.set(info.name, info.uuid);
    return { documents, uuids: collections.map((c) => uuids.get(c) ?? null) };
  }

  /**
   * Every document of `collections` (one database) in one aggregate, each wrapped as
   * `{n, d: $$ROOT}` (`n` its collection's position) and read raw: `d` comes back as the
   * document's own bytes. Null once more than `maxBytes` arrived (the read is closed).
   */
  private async readTogether(
    database: string,
    collections: string[],
    options: { sortById: boolean; readConcern: Document; maxBytes?: number; signal?: AbortSignal },
  ): Promise<Uint8Array[][] | null> {
    const pipeline = unionOfEach(collections, (n) => [
      { $replaceWith: { n: new Int32(n), d: '$$ROOT' } },
    ]);
    if (options.sortById) pipeline.push({ $sort: { n: 1, 'd._id': 1 } });
    const documents: Uint8Array[][] = collections.map(() => []);
    const cursor = rawDocumentCursor(this.client.db(database), {
      aggregate: collections[0],
      pipeline,
      cursor: {},
      collation: { locale: 'simple' },
      readConcern: options.readConcern,
    });
    let bytes = 0;
    try {
      while (await cursor.hasNext()) {
        for (const raw of readRawBuffered(cursor)) {
          const { n, d } = untag(raw);
          const list = documents[n];
          if (!list) throw new Error(`a document tagged ${n} of ${collections.length} collections`);
          list.push(d);
          bytes += d.byteLength;
        }
        if (options.maxBytes !== undefined && bytes > options.maxBytes) return null;
        if (options.signal?.aborted) throw options.signal.reason ?? new Error('aborted');
      }
    } finally {
      await cursor.close().catch(() => undefined);
    }
    return documents;
  }

  /**
   * The documents with these `_id`s (`$in` on the `_id` index, majority reads, by UUID where the
   * server allows): the verifier's re-check of the documents change application wrote.
   */
  async readByIds(
    database: string,
    collection: string,
    ids: unknown[],
    options: { uuid?: string; signal?: AbortSignal } = {},
  ): Promise<Uint8Array[]> {
    if (ids.length === 0) return [];
    const documents: Uint8Array[] = [];
    for await (const served of this.rawBatches(database, collection, {
      range: {},
      batchSize: Math.max(1, ids.length),
      filter: { _id: { $in: ids } },
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.uuid !== undefined ? { uuid: options.uuid } : {}),
    })) {
      documents.push(...served);
    }
    return documents;
  }

  /**
   * The documents of a range as raw BSON, a server batch at a time (memory: one server batch).
   * Whole batches, not a document per step: an async step per document cost a promise and an
   * iterator result each, on the copy's hottest path.
   */
  private async *rawBatches(
    database: string,
    collection: string,
    options: ReadOptions & { filter?: Document },
  ): AsyncIterable<Uint8Array[]> {
    // A raw find command: the driver's find() drops options it does not know (collectionUUID),
    // and the read concern is stated here so afterClusterTime cannot be lost on the way.
    const command: Document = {
      find: collection,
      filter: options.filter ?? {},
      batchSize: options.batchSize,
    };
    if (options.range === 'natural') {
      command.hint = { $natural: 1 };
    } else {
      command.hint = { _id: 1 };
      if ('min' in options.range) command.min = { _id: options.range.min };
      if ('max' in options.range) command.max = { _id: options.range.max };
      if (options.sortById) command.sort = { _id: 1 };
    }
    if (options.uuid !== undefined && (await supportsCollectionUUID(this.client))) {
      command.collectionUUID = new Binary(Buffer.from(options.uuid, 'hex'), Binary.SUBTYPE_UUID);
    }
    // Majority reads causally after T0: a write acknowledged before T0 is waited for even if it
    // was not majority-committed yet.
    command.readConcern = options.afterClusterTime
      ? { level: 'majority', afterClusterTime: options.afterClusterTime }
      : { level: 'majority' };
    const cursor = rawDocumentCursor(this.client.db(database), command).setBatchSize(
      options.batchSize,
    );
    try {
      while (await cursor.hasNext()) {
        yield readRawBuffered(cursor);
        if (options.signal?.aborted) return;
      }
    } catch (error) {
      if (error instanceof MongoServerError && NAMESPACE_CHANGED_CODES.has(Number(error.code))) {
        throw new SourceNamespaceChangedError(
          `${database}.${collection}`,
          `the source collection ${database}.${collection} changed while it was read: ${error.message}`,
          { cause: error },
        );
      }
      throw error;
    } finally {
      await cursor.close().catch(() => undefined);
    }
  }
}

/** One replica set's oplog window (first and last entries in natural order). */
async function oplogWindow(client: MongoClient): Promise<HistoryWindow | null> {
  // `local` only takes readConcern "local".
  const oplog = client
    .db('local', { readConcern: new ReadConcern('local') })
    .collection('oplog.rs');
  const edge = async (direction: 1 | -1) => {
    const [entry] = await oplog
      .find({}, { sort: { $natural: direction }, limit: 1, projection: { ts: 1, wall: 1 } })
      .toArray();
    return entry as { ts?: unknown; wall?: unknown } | undefined;
  };
  try {
    const [first, last] = await Promise.all([edge(1), edge(-1)]);
    if (!(first?.ts instanceof Timestamp) || !(last?.ts instanceof Timestamp)) return null;
    const wallMs = (e: { ts?: unknown; wall?: unknown }) =>
      e.wall instanceof Date ? e.wall.getTime() : (e.ts as Timestamp).getHighBits() * 1000;
    return {
      oldest: first.ts,
      newest: last.ts,
      oldestWallMs: wallMs(first),
      newestWallMs: wallMs(last),
    };
  } catch (error) {
    if (error instanceof MongoServerError) return null; // unauthorized, …
    throw error;
  }
}

/**
 * The pipeline of one aggregate over several collections of a database, run on the first:
 * `of(0)`, then each other collection's `of(n)` through `$unionWith`, `n` its position.
 */
function unionOfEach(collections: string[], of: (n: number) => Document[]): Document[] {
  const pipeline = of(0);
  collections.slice(1).forEach((coll, i) => {
    pipeline.push({ $unionWith: { coll, pipeline: of(i + 1) } });
  });
  return pipeline;
}

/**
 * `{n: <int32>, d: <document>}` as `readTogether`'s pipeline writes it: `d`'s bytes, a view of
 * `raw`. Read in place when the fields come as written (the server keeps a `$replaceWith`'s
 * field order); anything else is decoded.
 */
function untag(raw: Uint8Array): { n: number; d: Uint8Array } {
  // int32 size | 0x10 'n' 0x00 int32 | 0x03 'd' 0x00 <document> | 0x00
  if (
    raw.byteLength >= 19 &&
    raw[4] === 0x10 &&
    raw[5] === 0x6e &&
    raw[6] === 0x00 &&
    raw[11] === 0x03 &&
    raw[12] === 0x64 &&
    raw[13] === 0x00
  ) {
    const n = getInt32LE(raw, 7);
    const size = getInt32LE(raw, 14);
    if (size >= 5 && 14 + size === raw.byteLength - 1) return { n, d: raw.subarray(14, 14 + size) };
  }
  // `raw`: an embedded document comes back as its own bytes, undecoded.
  return BSON.deserialize(raw, { raw: true }) as { n: number; d: Uint8Array };
}
