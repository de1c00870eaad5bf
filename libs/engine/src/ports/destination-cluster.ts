import type { Document, Timestamp } from 'bson';
import type { ClusterDescription } from './cluster-description';

/** Result of one unordered bulk insert. */
export interface InsertResult {
  inserted: number;
  /** Documents rejected with duplicate key (11000): already copied by an earlier attempt. */
  duplicates: number;
}

/** Index modification applied with `collMod` (restoring relaxed indexes at commit). */
export interface IndexModification {
  name: string;
  unique?: boolean;
  prepareUnique?: boolean;
  hidden?: boolean;
  expireAfterSeconds?: number;
}

/**
 * The destination cluster. Writes use majority write concern; inserts bypass document
 * validation (the source may legitimately hold documents its current validator rejects).
 */
export interface DestinationCluster {
  describe(): Promise<ClusterDescription>;
  /** The destination's current cluster time (where a reverse sync starts reading). */
  clusterTime(): Promise<Timestamp>;
  /** Drops a collection; a missing one is fine. */
  dropCollection(database: string, collection: string): Promise<void>;
  listDatabaseNames(): Promise<string[]>;
  /** Collection/view names of a database. */
  listCollectionNames(database: string): Promise<string[]>;
  listIndexes(database: string, collection: string): Promise<Document[]>;
  /** Creates a collection (options as listCollections reported them). Exists already: no-op. */
  createCollection(database: string, collection: string, options: Document): Promise<void>;
  /** Creates a view. Exists already: no-op. */
  createView(
    database: string,
    view: string,
    viewOn: string,
    pipeline: Document[],
    options: Document,
  ): Promise<void>;
  /**
   * Creates indexes; an identical existing index is not an error. A missing collection is
   * created with the default options first, as the server's `createIndexes` does.
   */
  createIndexes(database: string, collection: string, specs: Document[]): Promise<void>;
  modifyIndex(database: string, collection: string, change: IndexModification): Promise<void>;
  /** Drops an index by name; a missing index or collection is fine. */
  dropIndex(database: string, collection: string, name: string): Promise<void>;
  /**
   * Renames a collection, replacing an existing target. Returns false when `from` does not
   * exist (a rename applied before a crash, replayed).
   */
  renameCollection(
    from: { db: string; coll: string },
    to: { db: string; coll: string },
  ): Promise<boolean>;
  /**
   * Shards a collection on a sharded destination (`shardCollection`) with the key given in
   * order; sharding it again with the same key is fine.
   */
  shardCollection(
    database: string,
    collection: string,
    key: Document,
    unique: boolean,
  ): Promise<void>;
  /** Shard ids of a sharded destination, sorted (empty for a replica set). */
  shardIds(): Promise<string[]>;
  /** Chunks of a sharded collection (`config.chunks` by its uuid); 0 when not sharded. */
  chunkCount(database: string, collection: string): Promise<number>;
  /** `split` at `middle` (a full shard-key value). */
  splitAt(database: string, collection: string, middle: Document): Promise<void>;
  /** Moves the chunk `[min, max)` to `toShard` (nothing when it is there already). */
  moveRange(
    database: string,
    collection: string,
    min: Document,
    max: Document,
    toShard: string,
  ): Promise<void>;
  /** `collMod` with the given options (validator, validationLevel, view pipeline...). */
  collMod(database: string, collection: string, options: Document): Promise<void>;
  /**
   * UNORDERED insert. Duplicate-key errors are counted, any other write error throws
   * (with a message that names the namespace and the error, never a connection string). A
   * missing collection is created with the default options, as the server's `insert` does (the
   * copy relies on it: see createdByCopy).
   */
  insertUnordered(
    database: string,
    collection: string,
    documents: Document[],
  ): Promise<InsertResult>;
  /**
   * As `insertUnordered`, documents given as their exact BSON bytes and sent as they are (no
   * decode, no re-encode). Optional: the copy's bytes-to-bytes path uses it when present.
   */
  insertRawUnordered?(
    database: string,
    collection: string,
    documents: Uint8Array[],
  ): Promise<InsertResult>;
  /** `balancerStatus.mode` ('full' or 'off'); null for a replica set. */
  balancerMode(): Promise<'full' | 'off' | null>;
  /** `balancerStart` / `balancerStop`; a no-op on a replica set. */
  setBalancer(enabled: boolean): Promise<void>;
  /** `setUserWriteBlockMode` on the destination. */
  setUserWriteBlocking(enabled: boolean): Promise<void>;
}
