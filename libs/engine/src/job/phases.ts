import type { Timestamp } from 'bson';
import type { DestinationCluster } from '../ports/destination-cluster';
import type { EngineLogger } from '../ports/engine-logger';
import type { JobRecord, JobStore, NamespaceRecord } from '../ports/job-store';
import type { SourceCluster } from '../ports/source-cluster';

/** What a later phase (change application, commit, reverse) gets from the running job. */
export interface PhaseContext {
  job: Readonly<JobRecord>;
  t0: Timestamp;
  namespaces: readonly NamespaceRecord[];
  source: SourceCluster;
  destination: DestinationCluster;
  store: JobStore;
  logger: EngineLogger;
  /** Aborts on pause and shutdown. */
  signal: AbortSignal;
  /** True once every partition is copied. */
  copyDone(): boolean;
  /** Persists `job.extensions[key]` (resume points and the like) with the job. */
  saveExtension(key: string, value: unknown): Promise<void>;
}

export interface ChangeApplicationStatus {
  lagTimeSeconds: number | null;
  totalEventsApplied: number | null;
  /** Events are being applied with small enough lag that a commit can succeed. */
  readyToCommit: boolean;
}

/**
 * Change event application (SPEC §4.4), plugged in by its owner. SyncJob starts it once the
 * destination is prepared, CONCURRENTLY with the copy, and aborts it through `signal` on pause.
 */
export interface ChangeApplication {
  /** Runs from T0 (or its persisted resume point) until `ctx.signal` aborts; rejects if fatal. */
  run(ctx: PhaseContext): Promise<void>;
  status(): ChangeApplicationStatus;
}

/** Commit (SPEC §4.5) and reverse (§4.6), plugged in by the change-application owner. */
export interface CommitPhase {
  /** Brings the destination to the commit point; `markWritable` flips canWrite. */
  commit(ctx: PhaseContext, markWritable: () => void): Promise<void>;
  reverse?(ctx: PhaseContext): Promise<void>;
}

export interface SyncPhases {
  changeApplication?: () => ChangeApplication;
  commit?: CommitPhase;
}
