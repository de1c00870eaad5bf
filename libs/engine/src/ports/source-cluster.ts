import type { Document, Timestamp } from 'bson';
import type { ShardingSnapshot } from '../shards/ownership';
import type { ClusterDescription } from './cluster-description';

/** A collection or view as `listCollections` reports it (options kept verbatim). */
export interface CollectionInfo {
  name: string;
  type: 'collection' | 'view' | 'timeseries';
  /** `listCollections` options, decoded without promotion so validators/collations stay exact. */
  options: Document;
  /** `info.uuid` as 32 hex digits (collections only; absent for views). */
  uuid?: string;
}

/** Bounds of an `_id` range read. Absent `min`/`max` means unbounded on that side. */
export interface IdRange {
  /** Inclusive lower bound (an `_id` value, any BSON type). */
  min?: unknown;
  /** Exclusive upper bound. */
  max?: unknown;
}

/** One batch of a copy read: documents plus the exact number of BSON bytes they occupied. */
export interface DocumentBatch {
  documents: Document[];
  /** Exact BSON size of each document (parallel to `documents`). */
  sizes: number[];
  /** Sum of `sizes`. */
  bytes: number;
}

/**
 * One batch of a raw copy read: every document's exact BSON bytes as the server sent them
 * (nothing decoded, so nothing can change type on the way to the destination).
 */
export interface RawDocumentBatch {
  documents: Uint8Array[];
  /** Sum of the documents' byte lengths. */
  bytes: number;
}

/** A raw batch of `documents`, their byte lengths summed. */
export function rawDocumentBatch(documents: Uint8Array[]): RawDocumentBatch {
  let bytes = 0;
  for (const document of documents) bytes += document.byteLength;
  return { documents, bytes };
}

export interface ReadOptions {
  /** `_id` range (read with index bounds, which are not type-bracketed) or natural order. */
  range: IdRange | 'natural';
  /** Documents per server batch; the adapter may use it as a hint only. */
  batchSize: number;
  /**
   * Return documents in `_id` order across the whole read (mongos only merges shard results
   * in order when asked to sort). The copy does not need it; a comparison does.
   */
  sortById?: boolean;
  /** Upper bound of a yielded batch's bytes (a single larger document still comes alone). */
  maxBatchBytes?: number;
  signal?: AbortSignal;
  /**
   * The collection's UUID: the read fails with SourceNamespaceChangedError instead of reading
   * another collection when the name now belongs to a different one (renamed, dropped, swapped).
   */
  uuid?: string;
  /**
   * Read at majority no earlier than this source time (causal consistency): a write acknowledged
   * before T0 but not yet majority-committed is waited for, never missed.
   */
  afterClusterTime?: Timestamp;
}

/** `readWholeMany`'s answer: each collection's documents and its UUID after the read. */
export interface WholeCollections {
  documents: Uint8Array[][];
  uuids: Array<string | null>;
}

/** `digestWhole`'s reduction of one collection (see `digestDocuments`). */
export interface RangeDigest {
  count: number;
  /** Sum of the documents' BSON sizes. */
  bytes: number;
  /**
   * Hash (hex) of every document's exact BSON bytes in `_id` order: a changed value, field
   * order or numeric type (Int32 vs Double) changes it.
   */
  hash: string;
}

/**
 * The source's change history (a replica set's oplog): its oldest and newest entries' times
 * and wall-clock dates (ms since the epoch).
 */
export interface HistoryWindow {
  oldest: Timestamp;
  newest: Timestamp;
  oldestWallMs: number;
  newestWallMs: number;
  /** The shard whose oplog this is (a sharded source: one window per shard). */
  shard?: string;
}

/**
 * The collection a read was aimed at is no longer under that name (renamed, dropped, swapped
 * for another one) or its cursor was killed by such a DDL: the caller finds it again by UUID.
 */
export class SourceNamespaceChangedError extends Error {
  constructor(
    readonly namespace: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SourceNamespaceChangedError';
  }
}

/** One write a change stream showed (`writesAfter`). */
export interface SourceWrite {
  namespace: string;
  operation: string;
  /** The document's `_id` as canonical Extended JSON, for document events. */
  id?: string;
  clusterTime?: Timestamp;
}

/**
 * The source cluster as the copy phase sees it. Documents are `bson` Documents decoded with
 * promoteValues/promoteLongs/promoteBuffers false and bsonRegExp true, so that every BSON type
 * (Int32 vs Double vs Int64, -0.0, Binary subtypes, regex flags) survives the round trip.
 */
export interface SourceCluster {
  describe(): Promise<ClusterDescription>;
  /** The source's current cluster time (read before anything is listed or copied: T0). */
  clusterTime(): Promise<Timestamp>;
  listDatabaseNames(): Promise<string[]>;
  listCollections(database: string): Promise<CollectionInfo[]>;
  /** Index specs as `listIndexes` returns them (unpromoted). */
  listIndexes(database: string, collection: string): Promise<Document[]>;
  /** `collStats`-style figures: uncompressed data size in bytes and document count. */
  collectionStats(database: string, collection: string): Promise<{ bytes: number; count: number }>;
  /**
   * `dbStats`-style figures for a whole database (every shard's, through mongos): uncompressed
   * data size in bytes and document count. One round trip however many collections it holds.
   */
  databaseStats(database: string): Promise<{ bytes: number; count: number }>;
  /**
   * Up to `size` random `_id`s of the collection, sorted by the SERVER in `_id` index order
   * (MongoDB's cross-type comparison order, which the engine does not reimplement).
   */
  sampleSortedIds(database: string, collection: string, size: number): Promise<unknown[]>;
  /** Up to `size` random documents projected on `fields` (a shard key's fields). */
  sampleKeys(
    database: string,
    collection: string,
    fields: string[],
    size: number,
  ): Promise<Document[]>;
  /** Streams a range in batches; memory is bounded by one batch. */
  read(database: string, collection: string, options: ReadOptions): AsyncIterable<DocumentBatch>;
  /**
   * As `read`, documents left as BSON bytes: the copy's bytes-to-bytes path (with
   * `DestinationCluster.insertRawUnordered`), and the verifier's comparisons (both sides read
   * with `sortById`, compared byte for byte as the servers sent them). Optional: without it the
   * copy decodes, and the verifier encodes what it reads again.
   */
  readRaw?(
    database: string,
    collection: string,
    options: ReadOptions,
  ): AsyncIterable<RawDocumentBatch>;
  /**
   * Optional: the whole of several collections of one database in ONE read, each reduced alone
   * to its count and a hash of its documents' bytes in `_id` order under simple binary
   * comparison (`digestDocuments`), in the order given: the verifier's many-small-collections
   * case, where round trips, not bytes, are the cost. Collections with a default collation are not passed (their `_id`
   * order is the collation's). A batched read cannot name each collection's UUID: a collection
   * replaced meanwhile is caught by its DDL event, which starts its checks over.
   */
  digestWhole?(
    database: string,
    collections: string[],
    options?: { signal?: AbortSignal },
  ): Promise<RangeDigest[]>;
  /**
   * Optional: every document of several small collections of one database in ONE read (majority,
   * causally after `afterClusterTime`) as raw BSON, in the order given, with the UUID each name
   * has AFTER the read (null: no collection of that name then). The copy of many small
   * collections, where round trips, not bytes, are the cost. A name whose UUID is not the
   * expected one was replaced around the read: the caller discards its documents and reads it
   * alone, by UUID. Null when more than `maxBytes` arrived (the caller reads each alone).
   */
  readWholeMany?(
    database: string,
    collections: string[],
    options: { maxBytes: number; afterClusterTime?: Timestamp; signal?: AbortSignal },
  ): Promise<WholeCollections | null>;
  /**
   * Optional: `listIndexes` of several collections of one database in ONE read, in the order
   * given. An entry is null where the read could not stand in for `listIndexes` (the caller
   * asks `listIndexes` for that collection): the verifier's many-small-collections case.
   */
  listIndexesMany?(database: string, collections: string[]): Promise<Array<Document[] | null>>;
  /**
   * Optional: `collectionStats` of several collections of one database in ONE read, in the
   * order given. An entry is null where the read could not answer (the caller asks
   * `collectionStats` for that collection): planning a large database of many collections.
   */
  collectionStatsMany?(
    database: string,
    collections: string[],
  ): Promise<Array<{ bytes: number; count: number } | null>>;
  /**
   * The documents whose `_id` is one of `ids` (at most a few hundred), in any order, as raw
   * BSON — the exact bytes the server holds, compared byte for byte, never decoded: what the
   * verifier re-checks of a document change application wrote. Optional: without it the
   * verifier digests the document's whole range instead.
   */
  readByIds?(
    database: string,
    collection: string,
    ids: unknown[],
    options?: { uuid?: string; signal?: AbortSignal },
  ): Promise<Uint8Array[]>;
  /**
   * Sharded collections of a sharded source (`config.collections`), by `db.coll`: their shard
   * key and unique flag. Empty for a replica set.
   */
  shardedCollections(): Promise<Map<string, { key: Document; unique: boolean }>>;
  /**
   * The config server's routing metadata (shards, database primaries, sharded collections with
   * their chunks, balancer mode), chunk bounds decoded without promotion. Empty for a replica set.
   */
  shardingSnapshot(): Promise<ShardingSnapshot>;
  /** `balancerStatus.mode` ('full' or 'off'); null for a replica set. */
  balancerMode(): Promise<'full' | 'off' | null>;
  /** `balancerStart` / `balancerStop`; a no-op on a replica set. */
  setBalancer(enabled: boolean): Promise<void>;
  /** `setUserWriteBlockMode` on the source (commit with enableUserWriteBlocking). */
  setUserWriteBlocking(enabled: boolean): Promise<void>;
  /**
   * Writes a no-op oplog entry (`appendOplogNote`) and returns its time: a cluster time that a
   * change stream is guaranteed to reach (the commit point).
   */
  writeNoop(message: string): Promise<Timestamp>;
  /**
   * Writes the source's change stream shows after `point` up to now, in user namespaces (a
   * client that bypasses write blocking writes during a commit): at most `limit`, oldest first.
   * Optional: without it the commit cannot see such writes.
   */
  writesAfter?(point: Timestamp, limit: number): Promise<SourceWrite[]>;
  /**
   * The change history the source still holds (first and last entries of `local.oplog.rs` in
   * natural order, as `rs.printReplicationInfo()` reads them): one window for a replica set, one
   * per shard for a sharded cluster (read from each shard's primary). Null when it cannot be
   * read (no right to read `local`, a shard unreachable directly): the guard then stays silent.
   */
  historyWindows(): Promise<HistoryWindow[] | null>;
}
