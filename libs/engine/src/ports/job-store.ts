import type { Document, Timestamp } from 'bson';
import type { StartRequest, SyncState } from '@sync/contracts';
import type { ClusterFingerprint } from './cluster-description';
import type { ShardingSnapshot } from '../shards/ownership';

/**
 * Persisted schema (destination database `sync_reserved_for_internal_use`):
 *  - `jobs`        one JobRecord per instance, `_id` = syncID. It holds EVERYTHING whose parts
 *                  must change together — state, phase, the namespace catalog, the position of
 *                  the last applied DDL, commit steps — so that one document write switches the
 *                  job from one consistent state to the next (crash-atomic without transactions).
 *  - `partitions`  one PartitionRecord per `_id` range, `_id` = `<syncID>|<key>|<set>|<index>`.
 *                  A partition is VISIBLE only while its namespace record in the job document
 *                  names its `set`: new partition sets are written first and switched on by the
 *                  job write; sets no record names are garbage, deleted on load.
 *  - `checkpoints` the change stream resume point (one document, see CheckpointStore).
 * Nothing here ever holds a connection string or credential.
 */
export const INTERNAL_DATABASE = 'sync_reserved_for_internal_use';

/**
 * How far the copy side of a job got; each step is persisted before the next begins.
 * planned → prepared (destination layout built) → copied (initial copy done; change events are
 * applied from T0 from then on).
 */
export type CopyPhase = 'joining' | 'planned' | 'prepared' | 'copied';

/**
 * This instance's place in a per-shard sync (one worker per source shard, `--id`). Absent for
 * a lone instance. A worker that is not the coordinator starts in phase `joining` and adopts
 * the coordinator's shared plan (T0, listing, chunk map) once the destination is prepared.
 */
export interface ShardAssignment {
  /** This worker's source shard id (= syncID). */
  id: string;
  coordinatorID: string;
  /** Every source shard id (one worker each). */
  members: string[];
  /** The chunk map at start (balancers stopped): which shard owns which document. */
  sharding?: ShardingSnapshot;
  /**
   * Worker id → the source shard it reads, where they differ: after a reverse, the old
   * destination's shards are paired with the workers (launched with the old source's shard ids).
   * Absent: every worker reads the shard named by its id.
   */
  sources?: Record<string, string>;
  /**
   * The cluster whose `workers` collection holds the shard claims, when not the destination:
   * after a reverse the claims stay where they were (their epochs only grow there, and every
   * document the worker writes carries its claim's epoch).
   */
  claimsOn?: string;
}

export interface ClusterRef {
  /** Launch name (`cluster0`). */
  name: string;
  fingerprint: ClusterFingerprint;
}

/** An index relaxed on the destination during the sync, to restore at commit. */
export interface RelaxedIndex {
  name: string;
  /** The source spec, exactly as listed there. */
  original: Document;
  relaxedUnique: boolean;
  relaxedHidden: boolean;
  relaxedExpireAfterSeconds: boolean;
}

/**
 * Copy status of one namespace (`copyOf` reads it as of the job's phase):
 * - `initial`: planned with the sync, copied by the initial copy: pending until the job reaches
 *   phase `copied` — that one job write records all of them copied, whatever their number (no
 *   record is rewritten);
 * - `pending`: entered the sync later (or written by an older version): pending until its own
 *   record says `done`;
 * - `none`: views and collections created by change events (nothing to copy).
 */
export type NamespaceCopy = 'initial' | 'pending' | 'done' | 'none';

/**
 * One synced namespace, identified by the source collection's UUID (views, which have none, by
 * name). `database`/`collection` is its CURRENT name as far as applied DDL goes — the same on
 * the source and the destination, since the destination mirrors the source's names.
 */
export interface NamespaceRecord {
  /** Source collection UUID as 32 hex digits, or `view:<db>.<name>`. */
  key: string;
  database: string;
  collection: string;
  type: 'collection' | 'view';
  /** listCollections options (views: viewOn/pipeline/collation). */
  options: Document;
  /** Source index specs when listed. */
  indexes: Document[];
  /** Indexes the destination keeps relaxed until commit. */
  relaxedIndexes: RelaxedIndex[];
  estimatedBytes: number;
  estimatedCount: number;
  capped: boolean;
  /**
   * Source cluster time read BEFORE its options and indexes were listed: an index or collMod
   * event older than this is already reflected in `indexes`/`options` and is not applied again.
   */
  listedAt: Timestamp;
  copy: NamespaceCopy;
  /** Shard key the destination collection is sharded with (replica set → sharded cluster). */
  shardKey?: { key: Document; unique: boolean; supportingIndex?: string };
  /** The partition set in effect (absent: not partitioned yet). */
  partitionSet?: number;
}

export interface CommitState {
  step: string;
  /** Source time (an oplog note written after the source was blocked) to apply up to. */
  commitPoint?: Timestamp;
  /** Destination time before it accepted user writes: a reverse sync reads from here. */
  destinationTime?: Timestamp;
  /**
   * A reversible per-shard sync: the destination's chunk map at `destinationTime` (its balancer
   * still stopped). A reverse reads the destination shard by shard from there, so it needs the
   * map unchanged since.
   */
  destinationSharding?: ShardingSnapshot;
  /** Set while the source is write-blocked by this sync (shown in progress). */
  sourceBlocked?: boolean;
  /** When this worker blocked the source (the application's downtime starts). */
  sourceBlockedAt?: Date;
  /** Seconds from the source blocked to the destination writable: the measured downtime. */
  cutoverSeconds?: number;
  /** The step that failed last and why (commit may be called again to retry it). */
  failed?: { step: string; error: string; message: string };
}

/** A failure the sync cannot continue past: shown in progress, never skipped. */
export interface FailureRecord {
  error: string;
  message: string;
  /** Where it happened, when known: the namespace and the event's cluster time. */
  namespace?: string;
  eventTime?: Timestamp;
  at: Date;
}

export interface JobRecord {
  _id: string;
  request: StartRequest;
  /** Last state the job was in; a restarted instance resumes in it. */
  state: SyncState;
  phase: CopyPhase;
  /** Source time change events are applied from (T0; after a reverse, the commit's time). */
  t0: Timestamp;
  /** Source cluster time after every namespace was listed (see NamespaceRouter). */
  listedUntil: Timestamp;
  /** Estimate of all selected bytes (collStats sizes) taken while planning. */
  estimatedTotalBytes: number;
  source: ClusterRef;
  destination: ClusterRef;
  /** The namespace catalog (by source UUID). */
  namespaces: NamespaceRecord[];
  /** Next partition set number (monotonic). */
  nextPartitionSet: number;
  /**
   * Position of the last DDL event applied (`clusterTime` and resume token `_data`): written in
   * the same job write as the DDL's effect on the catalog, so a DDL is applied exactly once.
   */
  ddlApplied?: { clusterTime: Timestamp; token: string };
  /** Completed reverses (part of the checkpoint key, so each direction starts fresh). */
  reversals: number;
  /** Set for a worker of a per-shard sync. */
  shard?: ShardAssignment;
  /**
   * A lone worker's balancer modes found at start (a sharded destination's balancer is stopped
   * for the sync), restored after commit. A per-shard sync keeps them in the shared record.
   */
  balancers?: { source: string | null; destination: string | null };
  commit?: CommitState;
  /** The last commit that was rolled back (its checks failed before the destination opened). */
  commitRollback?: { step: string; error: string; message: string; at: Date };
  failure?: FailureRecord;
  /** The last state-changing commands applied, by command id (re-delivered ones apply once). */
  commands?: CommandRecord[];
  createdAt: Date;
  updatedAt: Date;
}

export interface CommandRecord {
  id: string;
  operation: string;
  at: Date;
}

export type PartitionStatus = 'pending' | 'done';

export interface PartitionRecord {
  _id: string;
  syncID: string;
  /** NamespaceRecord.key of the collection. */
  key: string;
  /** Partition set (NamespaceRecord.partitionSet) this range belongs to. */
  set: number;
  index: number;
  /** Inclusive lower `_id` bound; absent on the first partition. */
  min?: unknown;
  /** Exclusive upper `_id` bound; absent on the last partition. */
  max?: unknown;
  /** Read in natural order (capped collections) instead of an `_id` range. */
  natural: boolean;
  status: PartitionStatus;
  copiedBytes: number;
  copiedDocuments: number;
}

export interface PersistedJob {
  job: JobRecord;
  /** The visible partitions (those of the sets the job's namespace records name). */
  partitions: PartitionRecord[];
}

/**
 * Job metadata store on one cluster (the job's destination), scoped to one syncID. Every method
 * is ONE write (or, for `addPartitions`, writes nobody sees until a `saveJob` names their set),
 * so a crash between any two calls leaves a consistent job.
 */
export interface JobStore {
  /** The job and its visible partitions; deletes invisible (garbage) partition sets. */
  load(): Promise<PersistedJob | null>;
  /**
   * Writes the job and its catalog. `job.namespaces` holds the caller's live records: what is
   * written of them is taken (copied or encoded) before the first await, so a mutation made
   * after the call returns is never part of this write.
   *
   * `partitions`: partitions of new sets this write names, as `addPartitions` writes them, but
   * beside the catalog's records (both are invisible until the job document switches them on),
   * not in a step of their own before it.
   */
  saveJob(job: JobRecord, partitions?: PartitionRecord[]): Promise<void>;
  /**
   * Optional: writes the job document alone, its catalog (the namespace records) unchanged since
   * the last save or load — the cost of a commit step's save then does not grow with the
   * namespace count. False when the store cannot (it must first write or read the catalog): the
   * caller saves the whole job instead.
   */
  saveJobState?(job: Omit<JobRecord, 'namespaces'>): Promise<boolean>;
  /** Writes partitions of a new set (idempotent upserts); invisible until the job names the set. */
  addPartitions(partitions: PartitionRecord[]): Promise<void>;
  markPartitionDone(id: string, copiedBytes: number, copiedDocuments: number): Promise<void>;
  /** Several partitions marked done in one write (optional: else one markPartitionDone each). */
  markPartitionsDone?(done: Array<{ id: string; bytes: number; documents: number }>): Promise<void>;
  /** Deletes the job and everything it owns (used when a reverse moves the job). */
  deleteJob(): Promise<void>;
}

/**
 * Whether a partition belongs to the set its namespace record names: the catalog's sets are
 * gathered once, then each partition is one lookup. (A scan of the catalog per partition made a
 * restart quadratic: 1.4 s of a 20,000-namespace job's restore, ~35 s at 100,000.)
 */
export function partitionVisibility(job: JobRecord): (partition: PartitionRecord) => boolean {
  const sets = new Map<string, Set<number>>();
  for (const ns of job.namespaces) {
    if (ns.partitionSet === undefined) continue;
    let named = sets.get(ns.key);
    if (!named) sets.set(ns.key, (named = new Set()));
    named.add(ns.partitionSet);
  }
  return (partition) => sets.get(partition.key)?.has(partition.set) ?? false;
}
