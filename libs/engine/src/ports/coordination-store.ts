import type { Timestamp } from 'bson';
import type { StartRequest } from '@sync/contracts';
import type { NamespaceRecord } from './job-store';
import type { ShardingSnapshot } from '../shards/ownership';

/**
 * What the instances of a per-shard sync share (one worker per source shard, each with its own
 * job document). It lives in the destination's `sync_reserved_for_internal_use.coordination`
 * (`_id: "sync"`), next to the job documents, so a restarted worker finds it with its job.
 *
 * Written by the coordinator: the plan every worker adopts (one T0, one namespace listing, one
 * chunk map), `ready` once the destination is prepared, and the commit steps it alone performs.
 * Written by every worker: the commit steps it has done. Every write is one atomic update of
 * this document ($set / $addToSet), so a crash leaves each fact either recorded or not.
 */
export interface CoordinationRecord {
  _id: 'sync';
  coordinatorID: string;
  /** Source shard ids: one worker each. */
  members: string[];
  request: StartRequest;
  plan: SharedPlan;
  /** The destination is prepared (collections, indexes, sharding): workers may copy. */
  ready: boolean;
  /** Balancer modes found at start, restored after commit. */
  balancers: { source: string | null; destination: string | null };
  /** Commit step name → the workers that have done it (`requested`: received `commit`). */
  commitSteps: Record<string, string[]>;
  /** The last commit's rollback (its checks failed): every worker rolls back too. */
  commitRolledBack?: { step: string; error: string; message: string } | null;
  /**
   * The job's reverses when this record was written (absent: 0). After a reverse the lead worker
   * writes a new record on the new destination; the other workers wait for this number.
   */
  reversals?: number;
  /** The commit point and destination time the coordinator took (followers adopt them). */
  commitPoint?: Timestamp;
  destinationTime?: Timestamp;
  createdAt: Date;
}

export interface SharedPlan {
  t0: Timestamp;
  listedUntil: Timestamp;
  estimatedTotalBytes: number;
  namespaces: NamespaceRecord[];
  sharding: ShardingSnapshot;
  /** Worker id → source shard it reads, where they differ (after a reverse). */
  sources?: Record<string, string>;
}

/**
 * A DDL barrier: every worker reaches the same DDL event at the same place of the source's
 * merged change stream; the coordinator applies its destination effect once all have arrived
 * (so no earlier write of any worker can land after it), then releases the others.
 */
export interface BarrierRecord {
  /** The DDL event's resume token `_data`. */
  _id: string;
  arrived: string[];
  released: boolean;
}

/**
 * Which process currently runs a shard's worker (`workers` collection, `_id` = shard id). Every
 * time is the DESTINATION's clock (`$$NOW` of the write): no two hosts' wall clocks are ever
 * compared.
 */
export interface WorkerClaim {
  _id: string;
  /** Random id of the claiming process. */
  instance: string;
  /** The destination's time of the holder's last claim or renewal. */
  heartbeatAt: Date;
  /**
   * Incremented by every takeover by another instance (1 for the first claim); the holder
   * carries it in the filters of its metadata writes (`claimEpoch`), so that a write by the
   * holder of an older epoch matches nothing.
   */
  epoch: number;
}

export interface CoordinationStore {
  /**
   * Claims shard `worker` for process `instance` in one atomic write judged by the
   * destination's clock: succeeds when nobody holds it, `instance` already does (a renewal:
   * same epoch), or the holder's heartbeat is more than `staleMs` older than the destination's
   * `$$NOW` (a takeover: epoch + 1). Returns the claim in force afterwards (another process's
   * when refused).
   */
  claim(worker: string, instance: string, staleMs: number): Promise<WorkerClaim>;
  /**
   * A standby's attempt: the same atomic write as `claim`, but only over an existing claim that
   * `instance` holds or that is stale by the destination's clock (never creates one: a shard
   * nobody claimed has no active worker to stand by). Returns the claim in force afterwards,
   * null when there is none. While the holder is fresh it matches nothing and writes nothing.
   */
  takeOver(worker: string, instance: string, staleMs: number): Promise<WorkerClaim | null>;
  /** The claim of shard `worker` as stored (null: none), without writing. */
  readClaim(worker: string): Promise<WorkerClaim | null>;
  load(): Promise<CoordinationRecord | null>;
  /** Writes the record (replacing a stale one from an abandoned start). */
  create(record: CoordinationRecord): Promise<void>;
  /** One atomic update: `$set` the given fields. */
  set(fields: Partial<Omit<CoordinationRecord, '_id'>>): Promise<void>;
  /** One atomic update: records that `worker` has done commit step `step`. */
  markStep(step: string, worker: string): Promise<void>;
  /** One atomic update: `worker` no longer counts as having done any of `steps`. */
  forgetSteps(steps: readonly string[], worker: string): Promise<void>;
  /** Records `worker`'s arrival at a barrier (creating it) and returns the barrier. */
  arrive(barrier: string, worker: string): Promise<BarrierRecord>;
  barrier(barrier: string): Promise<BarrierRecord | null>;
  release(barrier: string): Promise<void>;
  /**
   * Fencing, right after a takeover: stamps `epoch` as shard `worker`'s claim epoch on every
   * metadata document the worker writes (its job, partitions and checkpoints, the shared record,
   * the barriers), so that from now on a write of an older epoch's holder matches nothing and
   * is reported as ShardClaimLost. Never lowers a stamp.
   */
  fence(worker: string, epoch: number): Promise<void>;
}
