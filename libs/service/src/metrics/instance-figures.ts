import {
  ApiError,
  SYNC_STATES,
  UNSHARDED_WORKER_ID,
  type Progress,
  type SyncState,
  type WorkerRegistration,
  type WorkerReport,
} from '@sync/contracts';
import type { SyncEngine } from '@sync/engine';

/**
 * What /metrics shows of one sync instance (one worker). Built from the engine's raw progress
 * snapshot (`SyncEngine.snapshot()`), or from its rendered progress when it has none; on the
 * coordinator, from every worker's report in Redis. Only numbers, states and error *names*: a
 * connection string or a message never becomes a label.
 */
export interface InstanceFigures {
  /** The worker's id (`--id`, or `worker` without one): the `worker` label. */
  worker: string;
  /** null when unknown (no report yet). */
  state: SyncState | null;
  canCommit: boolean | null;
  copiedBytes: number | null;
  estimatedTotalBytes: number | null;
  /** Only when the engine's snapshot carries `copiedDocuments` (it does not yet). */
  copiedDocuments: number | null;
  eventsApplied: number | null;
  lagSeconds: number | null;
  namespaces: { total: number; copied: number } | null;
  /** Error names standing now (failure, commit failure, transient failure being retried). */
  failures: string[];
  /** Runs restarted from the persisted state after a transient failure (progress `retries`). */
  retries: number | null;
  /** Single operations retried in place after a transient failure (`retriedOperations`). */
  retriedOperations: number | null;
  /** The embedded verifier's section, when the snapshot has one. */
  verification: {
    phase: string;
    namespacesTotal: number;
    namespacesVerified: number;
    mismatches: number;
    /** Documents the live pass had rewritten from the source (see Verification). */
    documentsRepaired: number;
    /** The incremental verifier's backlog (absent from older builds' snapshots). */
    backlog: {
      dirtyDocuments: number;
      dirtyRanges: number;
      uncheckedRanges: number;
      oldestDirtySeconds: number;
    } | null;
    caughtUp: boolean | null;
  } | null;
  /** The last commit rolled back while the sync runs on: step and error name. */
  commitRollback: { step: string; error: string } | null;
  /** Coordinator only: the worker reported within the stale limit. */
  up?: boolean;
  /** Coordinator only: seconds since the worker's last report (null: never). */
  lastReportAgeSeconds?: number | null;
}

type Loose = Record<string, unknown>;

function blank(worker: string): InstanceFigures {
  return {
    worker,
    state: null,
    canCommit: null,
    copiedBytes: null,
    estimatedTotalBytes: null,
    copiedDocuments: null,
    eventsApplied: null,
    lagSeconds: null,
    namespaces: null,
    failures: [],
    retries: null,
    retriedOperations: null,
    verification: null,
    commitRollback: null,
  };
}

const isObject = (value: unknown): value is Loose =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const num = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? value : null;
const state = (value: unknown): SyncState | null =>
  (SYNC_STATES as readonly unknown[]).includes(value) ? (value as SyncState) : null;

/**
 * An error name fit for a label: the part before the first ':' of "Name: message", an
 * identifier of at most 64 characters, else `Other` (a message never leaks into a label).
 */
export function errorLabel(text: unknown): string | null {
  if (typeof text !== 'string' || text.length === 0) return null;
  const name = text.split(':')[0].trim();
  if (name === 'HistoryLostError') return 'HistoryLost';
  return /^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(name) ? name : 'Other';
}

/** A `worker` label value: ids are shard ids, but a report from Redis is checked anyway. */
export function workerLabel(id: unknown): string {
  return typeof id === 'string' && /^[\w.:-]{1,100}$/.test(id) ? id : 'invalid-id';
}

function verificationOf(value: unknown): InstanceFigures['verification'] {
  if (!isObject(value) || typeof value.phase !== 'string') return null;
  const backlog = isObject(value.backlog) ? value.backlog : null;
  return {
    phase: /^[a-z_]{1,32}$/.test(value.phase) ? value.phase : 'other',
    namespacesTotal: num(value.namespacesTotal) ?? 0,
    namespacesVerified: num(value.namespacesVerified) ?? 0,
    mismatches: num(value.mismatches) ?? 0,
    documentsRepaired: num(value.documentsRepaired) ?? 0,
    backlog: backlog
      ? {
          dirtyDocuments: num(backlog.dirtyDocuments) ?? 0,
          dirtyRanges: num(backlog.dirtyRanges) ?? 0,
          uncheckedRanges: num(backlog.uncheckedRanges) ?? 0,
          oldestDirtySeconds: num(backlog.oldestDirtySeconds) ?? 0,
        }
      : null,
    caughtUp: typeof value.caughtUp === 'boolean' ? value.caughtUp : null,
  };
}

/** A standing commit rollback: step and error as label-safe names. */
function rollbackOf(value: unknown): InstanceFigures['commitRollback'] {
  if (!isObject(value)) return null;
  const error = errorLabel(value.error);
  const step =
    typeof value.step === 'string' && /^[A-Za-z]{1,32}$/.test(value.step) ? value.step : 'other';
  return error ? { step, error } : null;
}

function unique(names: Array<string | null>): string[] {
  return [...new Set(names.filter((n): n is string => n !== null))];
}

/**
 * Figures from a raw ProgressSnapshot (read defensively: a report in Redis may come from a
 * worker of another build, and `verification` is new).
 */
export function figuresFromSnapshot(worker: string, snapshot: unknown): InstanceFigures {
  const figures = blank(worker);
  if (!isObject(snapshot)) return figures;
  const cea = isObject(snapshot.changeApplication) ? snapshot.changeApplication : null;
  const namespaces = isObject(snapshot.namespaces) ? snapshot.namespaces : null;
  const failureDetail = isObject(snapshot.failureDetail) ? snapshot.failureDetail : null;
  const commitFailure = isObject(snapshot.commitFailure) ? snapshot.commitFailure : null;
  const retrying = isObject(snapshot.retrying) ? snapshot.retrying : null;
  return {
    ...figures,
    state: state(snapshot.state),
    canCommit: typeof snapshot.canCommit === 'boolean' ? snapshot.canCommit : null,
    copiedBytes: num(snapshot.copiedBytes),
    estimatedTotalBytes: num(snapshot.estimatedTotalBytes),
    copiedDocuments: num(snapshot.copiedDocuments),
    eventsApplied: num(cea?.totalEventsApplied),
    lagSeconds: snapshot.state === 'PAUSED' ? null : num(cea?.lagTimeSeconds),
    namespaces:
      namespaces && num(namespaces.total) !== null
        ? { total: num(namespaces.total)!, copied: num(namespaces.copied) ?? 0 }
        : null,
    failures: unique([
      errorLabel(failureDetail?.error),
      errorLabel(commitFailure?.error),
      errorLabel(retrying?.error),
      rollbackOf(snapshot.commitRollback)?.error ?? null,
    ]),
    retries: num(snapshot.retries),
    retriedOperations: num(snapshot.retriedOperations),
    verification: verificationOf(snapshot.verification),
    commitRollback: rollbackOf(snapshot.commitRollback),
  };
}

/** Figures from rendered progress (an engine without `snapshot()`). */
export function figuresFromProgress(worker: string, progress: Progress): InstanceFigures {
  const copy = progress.collectionCopy;
  const namespaces = isObject(progress.namespaces) ? progress.namespaces : null;
  const commitFailure = isObject(progress.commitFailure) ? progress.commitFailure : null;
  const retrying = isObject(progress.retrying) ? progress.retrying : null;
  return {
    ...blank(worker),
    state: state(progress.state),
    canCommit: progress.canCommit,
    copiedBytes: copy?.estimatedCopiedBytes ?? null,
    estimatedTotalBytes: copy?.estimatedTotalBytes ?? null,
    eventsApplied: progress.totalEventsApplied,
    lagSeconds: progress.lagTimeSeconds,
    namespaces:
      namespaces && num(namespaces.total) !== null
        ? { total: num(namespaces.total)!, copied: num(namespaces.copied) ?? 0 }
        : null,
    failures: unique([
      errorLabel(progress.error),
      errorLabel(commitFailure?.error),
      errorLabel(retrying?.error),
    ]),
    retries: num(progress.retries),
    retriedOperations: num(progress.retriedOperations),
    verification: verificationOf(progress.verification),
  };
}

/**
 * A worker's own figures (one instance): its engine's snapshot, or its progress, or
 * INITIALIZING while the engine does not exist yet (a failed creation is a standing failure).
 */
export function figuresFromEngine(
  worker: string | undefined,
  engine: () => SyncEngine,
): InstanceFigures {
  const id = workerLabel(worker ?? UNSHARDED_WORKER_ID);
  let current: SyncEngine;
  try {
    current = engine();
  } catch (error) {
    const name = error instanceof ApiError ? error.error : 'InternalError';
    return {
      ...blank(id),
      state: 'INITIALIZING',
      failures: name === 'NotReady' ? [] : [name],
    };
  }
  try {
    if (current.snapshot) return figuresFromSnapshot(id, current.snapshot());
  } catch {
    // An engine that cannot give its snapshot yet still renders progress (or says NotReady).
  }
  try {
    return figuresFromProgress(id, current.progress());
  } catch {
    return { ...blank(id), state: 'INITIALIZING' };
  }
}

export interface RosterInputs {
  registrations: readonly WorkerRegistration[];
  reports: ReadonlyMap<string, WorkerReport>;
  now: number;
  staleMs: number;
}

/**
 * The coordinator's figures: one entry per registered worker, from the snapshot (or progress)
 * it last published to Redis, with `up` (reported within the stale limit) and the report's age.
 * A missing worker keeps its last figures, as in the coordinator's merged progress.
 */
export function figuresFromRoster(inputs: RosterInputs): InstanceFigures[] {
  return inputs.registrations.map((registration) => {
    const worker = workerLabel(registration.id);
    const report = inputs.reports.get(registration.id);
    const age = report ? Math.max(0, inputs.now - report.at) : null;
    const base = report?.snapshot
      ? figuresFromSnapshot(worker, report.snapshot)
      : report?.progress
        ? figuresFromProgress(worker, report.progress)
        : report?.error?.error === 'NotReady'
          ? { ...blank(worker), state: 'INITIALIZING' as const }
          : { ...blank(worker), failures: unique([errorLabel(report?.error?.error)]) };
    return {
      ...base,
      up: age !== null && age <= inputs.staleMs,
      lastReportAgeSeconds: age === null ? null : age / 1000,
    };
  });
}
