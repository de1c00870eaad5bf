import type { Timestamp } from 'bson';
import type { ApplyListener, NamespacePredicate } from '../apply/ports';
import type { DestinationCluster } from '../ports/destination-cluster';
import type { EngineLogger } from '../ports/engine-logger';
import type { JobRecord, JobStore, NamespaceRecord } from '../ports/job-store';
import type { SourceCluster } from '../ports/source-cluster';

/** What change application gets from the running job (one context per applier run). */
export interface PhaseContext {
  job: Readonly<JobRecord>;
  /** The job's T0 (source cluster time read before anything was listed or copied). */
  t0: Timestamp;
  /**
   * Where to start when no resume point is persisted under `checkpointKey`: T0 at first, the
   * start of the last (re)copy for the drain pass that follows a copy, the destination's commit
   * time after a reverse.
   */
  startAt: Timestamp;
  /** Identifies the persisted resume point of this pass (a new pass has a new key). */
  checkpointKey: string;
  namespaces: readonly NamespaceRecord[];
  /** The job's include/exclude filter. */
  selected: NamespacePredicate;
  /** DDL notices for the copy engine (plan, partitions, relaxed indexes). */
  listener: ApplyListener;
  source: SourceCluster;
  destination: DestinationCluster;
  store: JobStore;
  logger: EngineLogger;
  /** Aborts on pause, shutdown, commit drain end and when a new pass replaces this one. */
  signal: AbortSignal;
  /** True once every partition is copied. */
  copyDone(): boolean;
}

export interface ChangeApplicationStatus {
  lagTimeSeconds: number | null;
  totalEventsApplied: number | null;
  /** Events are being applied with small enough lag that a commit can succeed. */
  readyToCommit: boolean;
}

/**
 * Change event application (SPEC §4.4). SyncJob starts it once the destination is prepared,
 * CONCURRENTLY with the copy, and aborts it through `signal` (pause, shutdown, new pass).
 */
export interface ChangeApplication {
  /** Runs from the persisted resume point (or `ctx.startAt`) until `ctx.signal` aborts; rejects if fatal. */
  run(ctx: PhaseContext): Promise<void>;
  status(): ChangeApplicationStatus;
  /**
   * Resolves once everything up to `point` (a source cluster time) is applied and the resume
   * point persisted; rejects if the run stops or fails first.
   */
  waitUntilApplied(point: Timestamp, signal?: AbortSignal): Promise<void>;
}

export interface SyncPhases {
  /** A fresh instance per run (pass). Without it the job only copies and cannot commit. */
  changeApplication?: () => ChangeApplication;
}
