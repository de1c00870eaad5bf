import type { Document, Timestamp } from 'bson';

/** How $merge treats a target document that matches on the `on` fields. */
export type MergeWhenMatched = 'replace' | 'keepExisting' | 'merge' | 'fail' | Document[];
export type MergeWhenNotMatched = 'insert' | 'discard' | 'fail';

/**
 * Everything the aggregation engine needs from the server. The storage layer implements it
 * over the real catalog; tests use `InMemoryPipelineEnv` (aggregate/testing).
 */
export interface PipelineEnv {
  /** Database the aggregate runs in (default for $lookup/$out/$merge targets). */
  readonly db: string;
  /** Collection being aggregated; undefined for `{aggregate: 1}` (database-level) pipelines. */
  readonly coll?: string;
  /** Documents of a collection in natural order; empty for a missing collection. */
  readCollection(db: string, coll: string): Iterable<Document>;
  /**
   * A namespace as a stage that may read a view sees it ($unionWith): a collection's documents
   * and no stages, or a view's base collection's documents and the view's stages (views on
   * views resolved). Absent: only collections can be read (`readCollection`).
   */
  readNamespace?(db: string, coll: string): { documents: Iterable<Document>; stages: Document[] };
  /**
   * Storage statistics (count, size, avgObjSize, storageSize, nindexes, totalIndexSize,
   * indexSizes, ...) or undefined when the collection does not exist.
   */
  collStats(db: string, coll: string): Document | undefined;
  /** One document per index, shaped like $indexStats output. */
  indexStats?(db: string, coll: string): Document[];
  /** $out: atomically replace (creating if needed) the collection's contents. */
  replaceCollectionContents(db: string, coll: string, docs: Document[]): void;
  /**
   * $merge primitives. `findOne` looks a target document up by equality on the `on` fields
   * (values taken from the source document); insert/replace write one document and raise
   * the same errors a normal write would (e.g. DuplicateKey).
   */
  findOne(db: string, coll: string, equality: Document): Document | undefined;
  insertOne(db: string, coll: string, doc: Document): void;
  replaceOne(db: string, coll: string, existing: Document, replacement: Document): void;
  /** Value of $$NOW for this statement. */
  now(): Date;
  /** Value of $$CLUSTER_TIME for this statement. */
  clusterTime(): Timestamp;
  /** The aggregate command's `let` variables. */
  readonly variables?: Record<string, unknown>;
  /** Host name reported by $collStats / $indexStats. */
  readonly host?: string;
}
