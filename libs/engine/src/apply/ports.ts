import type { Document, Timestamp } from 'bson';
import type { ChangeEvent, Namespace } from './change-event';
import type { RelaxedIndex } from '../ports/job-store';
import type { IndexOptionChange } from './ddl-event';

/** Opaque resume token (the `_id` of an event, or a postBatchResumeToken). */
export type ResumeToken = Document;

/** Where a feed starts: at a cluster time (T0, before the copy) or after a saved token. */
export type StartPoint = { startAtOperationTime: Timestamp } | { resumeAfter: ResumeToken };

/** Which collections the sync selects (the copy engine's include/exclude filter). */
export type NamespacePredicate = (db: string, coll: string) => boolean;

// ---------------------------------------------------------------------------------------------
// Source side
// ---------------------------------------------------------------------------------------------

/** One server batch of a cluster-wide change stream. */
export interface ChangeFeedBatch {
  /** Events in source order, decoded without promotion (see ChangeEvent). May be empty. */
  events: ChangeEvent[];
  /**
   * Position after the whole batch (the postBatchResumeToken when the server sent one, else
   * the last event's token). Resuming here skips nothing and repeats nothing; an idle stream
   * still advances it, which keeps the checkpoint — and the lag — moving. Undefined only
   * before the server has reported any position.
   */
  resumeToken?: ResumeToken;
  /** Cluster time the stream has covered up to (decoded from the PBRT) when known. */
  highWaterTime?: Timestamp;
}

/** An open cluster-scope change stream (`showExpandedEvents: true`). */
export interface ChangeFeedCursor {
  /**
   * The next batch; waits at most the feed's await time and then returns an empty batch.
   * Throws `HistoryLostError` when the start point is gone from the source's oplog.
   */
  next(): Promise<ChangeFeedBatch>;
  close(): Promise<void>;
}

export interface ChangeFeed {
  open(start: StartPoint): Promise<ChangeFeedCursor>;
}

/** Re-reads one document from the source: the fallback for updates that cannot be replayed. */
export interface DocumentLookup {
  /** The current source document with this key (unpromoted), or null when it is gone. */
  findByKey(ns: Namespace, documentKey: Document): Promise<Document | null>;
}

// ---------------------------------------------------------------------------------------------
// Destination side
// ---------------------------------------------------------------------------------------------

/** One idempotent document write; several are sent together as an unordered bulk. */
export type WriteOp =
  /** Replace-with-upsert: the document ends up equal to `replacement` whatever was there. */
  | { kind: 'replace'; filter: Document; replacement: Document }
  /** Update without upsert: a missing document stays missing (a later event recreates it). */
  | { kind: 'update'; filter: Document; update: Document }
  | { kind: 'delete'; filter: Document };

export interface WriteFailure {
  /** Index of the failing op in the array given to `bulkWrite`. */
  index: number;
  code?: number;
  message: string;
}

export interface ChangeWriter {
  /**
   * Unordered bulk write on one namespace; the ops touch distinct documents. Duplicate-key
   * races of replace-upserts (a concurrent copy insert) are retried by the adapter. Returns the
   * per-op failures left; throws when the whole call failed.
   */
  bulkWrite(ns: Namespace, ops: WriteOp[]): Promise<WriteFailure[]>;
  /** Creates a collection or view; an existing one is fine (idempotent replay). */
  createCollection(ns: Namespace, options: Document): Promise<void>;
  /** Drops a collection; a missing one is fine. */
  dropCollection(ns: Namespace): Promise<void>;
  /** Renames, dropping an existing target. Returns false when `from` does not exist. */
  renameCollection(from: Namespace, to: Namespace): Promise<boolean>;
  listCollections(db: string): Promise<string[]>;
  /** Builds indexes from full specs (`{key, name, ...}`); an identical existing one is fine. */
  createIndexes(ns: Namespace, specs: Document[]): Promise<void>;
  /** Drops an index by name; a missing index or collection is fine. */
  dropIndex(ns: Namespace, name: string): Promise<void>;
  /** `collMod` with the given options (validator, validationLevel, index: {...}, ...). */
  collMod(ns: Namespace, options: Document): Promise<void>;
}

/** The persisted resume point of change application. */
export interface Checkpoint {
  resumeToken: ResumeToken;
  /** Cluster time of the position (the event's, or the batch high-water mark). */
  clusterTime?: Timestamp;
  savedAt: Date;
}

export interface CheckpointStore {
  load(): Promise<Checkpoint | null>;
  save(checkpoint: Checkpoint): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Notifications to the rest of the engine
// ---------------------------------------------------------------------------------------------

/**
 * What the applier tells the state machine / copy engine after applying a DDL. Awaited inside
 * the DDL barrier, BEFORE the checkpoint may move past the event, so whatever the listener
 * persists (e.g. index restorations for commit) is never behind the resume point.
 */
export type DdlNotice =
  | { kind: 'created'; ns: Namespace }
  | { kind: 'dropped'; ns: Namespace }
  | { kind: 'renamed'; from: Namespace; to: Namespace }
  /** Renamed from outside the filter into it: the collection must be copied from the source. */
  | { kind: 'needsCopy'; ns: Namespace }
  /** Indexes built relaxed (as before the copy); add them to the restore-at-commit list. */
  | { kind: 'indexesRelaxed'; ns: Namespace; relaxed: RelaxedIndex[] }
  /** The source changed options of an index the destination keeps relaxed; update the record. */
  | { kind: 'indexChanged'; ns: Namespace; index: IndexOptionChange }
  | { kind: 'indexesDropped'; ns: Namespace; names: string[] };

/** Namespaces a DDL is about to change on the destination (`coll` absent: the whole database). */
export interface DdlScope {
  db: string;
  coll?: string;
}

export interface ApplyListener {
  /**
   * Called before a DDL that drops, renames or re-creates namespaces runs on the destination,
   * with every namespace it touches; `afterDdl` follows (also when the DDL failed). Lets the
   * copy engine stop writing into those namespaces first (an insert landing after a drop would
   * silently re-create the collection).
   */
  beforeDdl?(scopes: DdlScope[]): Promise<void>;
  afterDdl?(scopes: DdlScope[]): Promise<void>;
  onDdl?(notice: DdlNotice): Promise<void>;
  /** Called once per event the translator decided not to apply (filter, system...). */
  onIgnored?(event: ChangeEvent, reason: string): void;
}
