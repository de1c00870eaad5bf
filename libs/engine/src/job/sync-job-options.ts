import type { HistoryGuardOptions } from './history-guard';
import type { CopierOptions } from '../copy/copier';
import type { PartitioningOptions } from '../copy/partition-planner';
import type { TopologyCheck } from '../operations/start';
import type { Clock } from '../ports/clock';
import type { ClusterDirectory } from '../ports/cluster-directory';
import type { EngineLogger } from '../ports/engine-logger';
import type { SyncPhases } from './phases';
import type { VerificationOptions } from '../verify/verification';
import type { ShardClaimOptions } from '../shards/shard-claim';

export interface SyncJobOptions {
  clusters: ClusterDirectory;
  logger: EngineLogger;
  /** This instance's id (`--id`); a lone instance defaults to "worker". */
  syncID?: string;
  /**
   * `--id`: this worker syncs one shard of a sharded source, as one of one worker per shard
   * (syncID is then the shard id). Absent: one worker syncs the whole source.
   */
  shardId?: string;
  /** Heartbeat tuning of the per-shard claim (tests shorten it). */
  shardClaim?: ShardClaimOptions;
  /** Set when another instance coordinates this one; defaults to syncID (alone or coordinator). */
  coordinatorID?: string;
  clock?: Clock;
  copier?: Partial<CopierOptions>;
  partitioning?: Partial<PartitioningOptions>;
  /** Topology rules of the start request (throws ApiError); defaults to @sync/contracts' rules. */
  checkTopology?: TopologyCheck;
  phases?: SyncPhases;
  /** Embedded verifier tuning (ranges digested at once, live re-check pause). */
  verification?: Pick<
    VerificationOptions,
    'concurrency' | 'recheckMs' | 'caughtUpMs' | 'settleMs' | 'limits' | 'retry'
  >;
  /** Called when the sync fails for good (the process stays up; progress shows the failure). */
  onFatal?: (error: Error) => void;
  /** Scrubs secrets from failure texts shown in progress (the adapters know the URIs). */
  redact?: (text: string) => string;
  /** Releases adapter resources (client connections) on close. */
  onClose?: () => Promise<void>;
  /** Pause between retries of the boot-time restore while a cluster is unreachable. */
  restoreRetryMs?: number;
  /** Transient failures retried in a row before the sync stops (see SyncRunner). */
  maxTransientRetries?: number;
  retryBaseMs?: number;
  /** Retries in place of one failed operation before the run restarts (see SyncRunner). */
  inPlaceRetries?: number;
  inPlaceRetryBaseMs?: number;
  /** Oplog window guard tuning (see HistoryGuard). */
  historyGuard?: HistoryGuardOptions;
  /** How often a per-shard coordinator checks that the balancers stay off (default 10 s). */
  balancerWatchMs?: number;
  /**
   * The most namespaces this worker's memory holds (the composition root derives it from the
   * heap limit): a start selecting more is refused with CatalogTooLarge. Absent: no limit.
   */
  maxNamespaces?: { limit: number; why: string };
  /** Test hook: awaited after each persisted commit step (lets tests "crash" mid-commit). */
  onCommitStep?: (step: string) => Promise<void>;
}
