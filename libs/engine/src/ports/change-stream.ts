import type { Document, Timestamp } from 'bson';
import type { ChangeEvent, Namespace } from '../apply/change-event';
import type { FullDocument } from '../apply/raw-document';
import type { FaultLabel } from '../faults/fault-labels';

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
  /**
   * The current source document with this key, or null when it is gone: raw (RawDocument, so
   * that it is written exactly as the source stores it) or decoded unpromoted.
   */
  findByKey(
    ns: Namespace,
    documentKey: Document,
    /** The collection's UUID (hex): the read follows it if the name now belongs elsewhere. */
    collectionUuid?: string,
  ): Promise<FullDocument | null>;
}

// ---------------------------------------------------------------------------------------------
// Destination side
// ---------------------------------------------------------------------------------------------

/** One idempotent document write; several are sent together as an unordered bulk. */
export type WriteOp =
  /**
   * Replace-with-upsert: the document ends up equal to `replacement` whatever was there.
   * `insert`: the document is new as far as the events tell (an insert event, with any updates
   * applied onto it in memory): the writer sends it as an insert, which costs a destination a
   * fraction of an upsert; one that is there already (the copy read it, or the event is applied
   * again after a restart) fails with a duplicate key, and the write lane then sends the
   * replace-upsert at once — the same outcome either way. `replacement` may be the source's
   * raw bytes (RawDocument): the writer then sends them as they are.
   */
  | { kind: 'replace'; filter: Document; replacement: FullDocument; insert?: boolean }
  /** Update without upsert: a missing document stays missing (a later event recreates it). */
  | { kind: 'update'; filter: Document; update: Document }
  | { kind: 'delete'; filter: Document };

export interface WriteFailure {
  /** Index of the failing op in the array given to `bulkWrite`. */
  index: number;
  code?: number;
  message: string;
  /** What the failure is (fault-labels.ts), set by the adapter; read from `code` when absent. */
  faultLabels?: ReadonlySet<FaultLabel>;
}

/**
 * Document writes of change application (DDL goes through DestinationCluster: one port per
 * kind of write, no overlap).
 */
export interface ChangeWriter {
  /**
   * Unordered bulk write on one namespace; the ops touch distinct documents. Sent once: the
   * write lane retries (write-lane.ts). Returns the per-op failures, labelled; throws (labelled)
   * when the whole call failed.
   */
  bulkWrite(ns: Namespace, ops: WriteOp[]): Promise<WriteFailure[]>;
  /**
   * Every destination document with this `_id` (several on a sharded destination, one per shard
   * key value), projected on `fields` and `_id`, decoded exactly. Needed by per-shard workers
   * (write-lane.ts), which settle the versions of a document moved between source shards.
   */
  versions?(ns: Namespace, id: unknown, fields: string[]): Promise<Document[]>;
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
// Routing and DDL (the job's namespace catalog)
// ---------------------------------------------------------------------------------------------

/** Where a document event is applied, or why it is not. */
export type EventRoute =
  | {
      ns: Namespace;
      key: string;
      /** Destination shard key fields when the collection is sharded there. */
      shardKeyFields?: string[];
    }
  | { ignore: string };

/**
 * The job's namespace catalog as change application sees it. Document events are routed by the
 * collection UUID they carry, not by their name, so events of an old collection never land in
 * a new one of the same name; DDL events are applied by the router, which records their
 * position in the same job write as their effect on the catalog (exactly once).
 */
export interface EventRouter {
  /** Throws a named error for an event of a selected namespace the catalog cannot place. */
  route(event: ChangeEvent): EventRoute;
  /** Called behind a barrier (every earlier document event is on the destination). */
  applyDdl(
    event: ChangeEvent,
    position: { token: ResumeToken; clusterTime?: Timestamp },
  ): Promise<void>;
}
