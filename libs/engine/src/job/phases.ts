import type { Timestamp } from 'bson';
import type { EventRouter } from '../apply/ports';
import type { AppliedWrites, ApplyGate } from '../apply/change-applier';
import type { DestinationCluster } from '../ports/destination-cluster';
import type { EngineLogger } from '../ports/engine-logger';
import type { JobRecord } from '../ports/job-store';
import type { SourceCluster } from '../ports/source-cluster';
import type { InPlaceRetryOptions } from '../faults/retry-in-place';

/** What change application gets from the running job (one context per applier run). */
export interface PhaseContext {
  job: Readonly<JobRecord>;
  /** Where to start when no resume point is persisted under `checkpointKey` (T0). */
  startAt: Timestamp;
  /** Identifies the persisted resume point (one per direction of the sync). */
  checkpointKey: string;
  /** The job's catalog as router (routes document events, applies DDL once). */
  router: EventRouter;
  source: SourceCluster;
  destination: DestinationCluster;
  logger: EngineLogger;
  /** Aborts on pause, shutdown and the end of a commit drain. */
  signal: AbortSignal;
  /** How single operations are retried in place (and counted) before a failure ends the run. */
  retry?: InPlaceRetryOptions;
  /** Per-shard sync: the cluster-time order across the workers (each reads its own shard). */
  gate?: ApplyGate;
  /** Told of every document written and DDL applied (the embedded verifier's dirty set). */
  appliedWrites?: AppliedWrites;
}

export interface ChangeApplicationStatus {
  lagTimeSeconds: number | null;
  totalEventsApplied: number | null;
  /** Events are being applied with small enough lag that a commit can succeed. */
  readyToCommit: boolean;
}

/**
 * Change event application. The job starts it once the initial copy is done, from
 * T0 (or its persisted resume point), and aborts it through `signal` (pause, shutdown, commit).
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
  /** A fresh instance per run. Without it the job only copies and cannot commit. */
  changeApplication?: () => ChangeApplication;
}
