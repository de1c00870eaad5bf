import type { Document, Timestamp } from 'bson';

/**
 * How far one worker of a per-shard sync has read and applied its own shard's change stream.
 * Both times only grow (a restarted worker replays events it had applied; what it published
 * stays true).
 */
export interface WorkerWatermark {
  worker: string;
  /**
   * Every DDL event of this worker's shard stream at or before this cluster time has been
   * announced (`DdlAnnouncement`): another worker may apply its own events up to here.
   */
  readThrough: Timestamp;
  /** Every event of this worker's shard stream before this cluster time is applied. */
  appliedBefore: Timestamp;
  /**
   * While this worker waits for the others to read their shards through a cluster time: that
   * time (an idle shard's worker then moves its stream on with a no-op). Absent otherwise.
   */
  needs?: Timestamp;
}

/**
 * A DDL event met on one shard's stream. Its reader applies the destination effect once, when
 * every other worker has applied everything before it; the others record its effect on their
 * own catalog before they apply anything after it.
 */
export interface DdlAnnouncement {
  /** The event's resume token `_data` on the announcing worker's stream. */
  token: string;
  worker: string;
  clusterTime: Timestamp;
  /** The change event as read (exact BSON): what the others plan its catalog effect from. */
  event: Document;
  /** The announcing worker has applied the destination effect (and any copy-in). */
  applied: boolean;
}

/** A failure that stops every worker of the sync (e.g. a chunk migration during the sync). */
export interface SyncHalt {
  worker: string;
  name: string;
  message: string;
}

export interface WatermarkSnapshot {
  marks: WorkerWatermark[];
  /** Announcements at or after the requested time, in (clusterTime, token) order. */
  ddl: DdlAnnouncement[];
  halt?: SyncHalt;
}

/**
 * The per-shard sync's cluster-time watermarks and DDL announcements, kept on the destination
 * beside the shared coordination record. Every method is one atomic write or read.
 */
export interface WatermarkStore {
  /** Raises this worker's marks (never lowers them) and sets or clears what it needs. */
  publish(mark: WorkerWatermark): Promise<void>;
  /** Records a DDL (idempotent by token; a repeated announcement keeps `applied`). */
  announce(ddl: Omit<DdlAnnouncement, 'applied'>): Promise<void>;
  markApplied(token: string): Promise<void>;
  /**
   * Marks first, then the announcements at or after `since`: a mark read past T implies T's
   * announcement (written before the mark) is in the answer.
   */
  snapshot(since?: Timestamp): Promise<WatermarkSnapshot>;
  halt(halt: SyncHalt): Promise<void>;
  /** Forgets everything (a new sync). */
  clear(): Promise<void>;
}
