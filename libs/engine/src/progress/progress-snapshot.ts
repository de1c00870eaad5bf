import type { Progress, SyncState } from '@sync/contracts';
import type { JobSession } from '../job/job-session';
import type { SyncRunner } from '../job/sync-runner';
import { commitStepIndex, destinationWritable } from '../operations/commit';
import { buildProgress, type ProgressInputs } from './progress-report';
import type { VerificationStatus } from '../verify/verification';
import type { CommitState } from '../ports/job-store';

/**
 * A raw, mergeable progress snapshot of one instance: numbers and states only, no rendering.
 * `renderProgress` turns it into the progress fields (plus extras); `mergeSnapshots` combines
 * several instances' snapshots into the global view a coordinator serves.
 */
export interface ProgressSnapshot extends ProgressInputs {
  /** The source is write-blocked by this sync's commit (and stays so after COMMITTED). */
  sourceWriteBlocked: boolean;
  commitStep: string | null;
  /**
   * The cutover: while COMMITTING, seconds since the source was write-blocked; once the
   * destination accepts writes, the measured downtime (source blocked → destination writable).
   */
  cutover?: { sourceBlockedSeconds?: number; cutoverSeconds?: number };
  commitFailure: { step: string; error: string; message: string } | null;
  /**
   * The last commit rolled back (its checks failed before the destination opened) while the
   * sync runs on: its step and error name (the message is in `warnings`). Absent: none.
   */
  commitRollback?: { step: string; error: string } | null;
  failureDetail: { error: string; namespace?: string; eventTime?: string } | null;
  /** A transient failure being retried (the sync goes on by itself). */
  retrying: { error: string; retries: number } | null;
  /** Namespaces in the catalog and how many are copied. */
  namespaces: { total: number; copied: number };
  /** What a per-shard sync waits for on other workers (barrier, commit), if anything. */
  waitingFor: string | null;
  /** The embedded verifier: phase, namespaces verified / total, mismatches. */
  verification: VerificationStatus | null;
  /**
   * Conditions that do not stop the sync yet but may (the source's oplog window is small for
   * the copy's expected remaining time or the lag): progress `warnings`, when any.
   */
  warnings?: string[];
  /** Transient failures retried since the process started: progress `retries`, when any. */
  retries?: number;
  /**
   * Single operations (a bulk of changes, a lookup, a checkpoint, a stream read, a copy batch)
   * that failed transiently and were retried in place: progress `retriedOperations`, when any.
   */
  retriedOperations?: number;
  /**
   * Seconds the oldest entry the sync still needs stays ahead of the oldest entry of the
   * source's history (tightest shard), as of the last look; null when not looked at (yet) or
   * unreadable: progress `estimatedOplogTimeRemaining`. Absent from older builds' snapshots.
   */
  oplogTimeRemainingSeconds?: number | null;
  /**
   * `oplogTimeRemainingSeconds` is a lower bound: the tightest history has not been seen losing
   * entries (an oplog that has not filled yet keeps everything, however short its span).
   */
  oplogTimeRemainingIsLowerBound?: boolean;
}

/**
 * MongoDB's tool words the oplog time left as "45 minutes", "12 hours", or these bounds. A lower
 * bound (an oplog not seen truncating yet: its span says only how old the history is, not how
 * long it will last) reads "at least 2 hours (the oplog has not filled yet)", and below 15
 * minutes — which says nothing — "not known yet (the oplog has not filled yet)".
 */
export function describeOplogTimeRemaining(
  seconds: number | null | undefined,
  lowerBound = false,
): string {
  if (seconds === null || seconds === undefined) return 'not checked yet';
  const minutes = Math.floor(seconds / 60);
  if (minutes > 72 * 60) return 'more than 72 hours';
  const duration = minutes < 120 ? `${minutes} minutes` : `${Math.floor(minutes / 60)} hours`;
  if (lowerBound) {
    return minutes < 15
      ? 'not known yet (the oplog has not filled yet)'
      : `at least ${duration} (the oplog has not filled yet)`;
  }
  return minutes < 15 ? 'less than 15 minutes' : duration;
}

export interface SnapshotSources {
  state: SyncState;
  session: JobSession | null;
  runner: SyncRunner | null;
  canCommit: boolean;
  hasChangeApplication: boolean;
  syncID: string;
  coordinatorID: string | null;
  waitingFor?: string | null;
  redact: (text: string) => string;
}

export function snapshotOf(src: SnapshotSources): ProgressSnapshot {
  const session = src.session;
  const job = session?.job;
  const runner = src.runner;
  const status = runner?.status() ?? { copying: false, changeApplication: null };
  const copyDone = job ? job.phase === 'copied' : false;
  // A set numbered means partitions were planned: no walk of every namespace per request.
  const partitioned = (job?.nextPartitionSet ?? 1) > 1;
  let cea = status.changeApplication;
  const step = job?.commit?.step ?? null;
  if (
    cea &&
    src.state === 'COMMITTING' &&
    commitStepIndex(step ?? undefined) >= commitStepIndex('drained')
  ) {
    cea = { ...cea, lagTimeSeconds: 0 };
  }
  if (!cea && job && copyDone && src.hasChangeApplication && src.state !== 'IDLE') {
    cea = { lagTimeSeconds: null, totalEventsApplied: 0, readyToCommit: false };
  }
  const persisted = job?.failure;
  const live = runner?.failure ?? null;
  const failureText = persisted
    ? namedText(persisted.error, persisted.message)
    : live && !runner?.retrying
      ? src.redact(`${live.name}: ${live.message}`)
      : null;
  const located = live as
    (Error & { namespace?: string; eventTime?: { toString(): string } }) | null;
  return {
    state: src.state,
    canCommit: src.canCommit,
    canWrite: src.state === 'COMMITTED' || destinationWritable(job?.commit),
    copyStarted: copyDone || partitioned,
    copyDone,
    estimatedTotalBytes: job?.estimatedTotalBytes ?? 0,
    copiedBytes: session?.tally.copiedBytes ?? 0,
    changeApplication: cea,
    sourceMapping: `${job?.source.name}: ${session?.hosts.source}`,
    destinationMapping: `${job?.destination.name}: ${session?.hosts.destination}`,
    syncID: src.syncID,
    coordinatorID: src.coordinatorID,
    failure: failureText,
    sourceWriteBlocked: job?.commit?.sourceBlocked === true,
    commitStep: step,
    ...cutoverOf(job?.commit, src.state),
    commitFailure: job?.commit?.failed ?? null,
    commitRollback:
      job?.commitRollback && src.state === 'RUNNING'
        ? { step: job.commitRollback.step, error: job.commitRollback.error }
        : null,
    failureDetail: persisted
      ? {
          error: persisted.error,
          ...(persisted.namespace ? { namespace: persisted.namespace } : {}),
          ...(persisted.eventTime ? { eventTime: persisted.eventTime.toString() } : {}),
        }
      : live && !runner?.retrying
        ? {
            error: live.name,
            ...(located?.namespace ? { namespace: located.namespace } : {}),
            ...(located?.eventTime ? { eventTime: located.eventTime.toString() } : {}),
          }
        : null,
    retrying:
      live && runner?.retrying
        ? { error: src.redact(`${live.name}: ${live.message}`), retries: runner.retries }
        : null,
    namespaces: {
      total: job?.namespaces.length ?? 0,
      copied: session?.copiedNamespaces() ?? 0,
    },
    waitingFor: src.waitingFor ?? null,
    warnings:
      runner && src.state !== 'COMMITTED'
        ? [
            ...runner.historyGuard.warnings,
            ...runner.balancers.warnings,
            ...(job?.commitRollback && src.state === 'RUNNING'
              ? [
                  src.redact(
                    `CommitRolledBack: the last commit was rolled back at step ${job.commitRollback.step} (${job.commitRollback.error}: ${job.commitRollback.message}); the source accepts writes again and the sync runs on — call commit again once the cause is gone.`,
                  ),
                ]
              : []),
          ]
        : [],
    retries: runner?.retries ?? 0,
    retriedOperations: runner?.retriedOperations.total ?? 0,
    oplogTimeRemainingSeconds: runner?.historyGuard.oplogTimeRemainingSeconds ?? null,
    ...(runner?.historyGuard.oplogTimeRemainingIsLowerBound
      ? { oplogTimeRemainingIsLowerBound: true }
      : {}),
    verification:
      runner?.verification.status(
        job,
        src.state === 'COMMITTED' ||
          commitStepIndex(step ?? undefined) >= commitStepIndex('verified'),
        session ?? undefined,
      ) ?? null,
  };
}

/** The progress fields, then extras that never replace one. */
export function renderProgress(snapshot: ProgressSnapshot): Progress {
  const progress = buildProgress(snapshot);
  if (snapshot.state === 'IDLE') return progress;
  if (snapshot.failureDetail) {
    progress.error =
      snapshot.failureDetail.error === 'HistoryLostError'
        ? 'HistoryLost'
        : snapshot.failureDetail.error;
    if (snapshot.failureDetail.namespace)
      progress.failureNamespace = snapshot.failureDetail.namespace;
    if (snapshot.failureDetail.eventTime)
      progress.failureEventTime = snapshot.failureDetail.eventTime;
  }
  if (snapshot.retrying) progress.retrying = snapshot.retrying;
  if (snapshot.sourceWriteBlocked) {
    progress.sourceWriteBlocked = true;
    progress.sourceWriteBlockedReason =
      snapshot.state === 'COMMITTED'
        ? 'the commit handed writes over to the destination'
        : 'the commit blocked writes on the source; it stays blocked until the commit completes';
  }
  if (snapshot.commitStep && (snapshot.state === 'COMMITTING' || snapshot.state === 'COMMITTED')) {
    progress.commit = { step: snapshot.commitStep, ...snapshot.cutover };
  }
  if (snapshot.commitFailure) {
    progress.commitFailure = {
      ...snapshot.commitFailure,
      retry: 'call commit again to retry this step',
    };
  }
  progress.namespaces = snapshot.namespaces;
  if (snapshot.waitingFor) progress.waitingFor = snapshot.waitingFor;
  if (snapshot.verification) progress.verification = snapshot.verification;
  if (snapshot.warnings?.length) progress.warnings = snapshot.warnings;
  if (snapshot.retries) progress.retries = snapshot.retries;
  if (snapshot.retriedOperations) progress.retriedOperations = snapshot.retriedOperations;
  // MongoDB's tool (1.21) splits the lag: CRUD and DDL events are applied here from one stream
  // in cluster-time order, so each kind is exactly as far behind as the whole.
  const lag = progress.lagTimeSeconds;
  progress.lag = { overallLagSeconds: lag, crudLagSeconds: lag, ddlLagSeconds: lag };
  // Reported, as by MongoDB's tool, only while RUNNING and before the destination is writable.
  if (snapshot.state === 'RUNNING' && !snapshot.canWrite) {
    progress.estimatedOplogTimeRemaining = describeOplogTimeRemaining(
      snapshot.oplogTimeRemainingSeconds,
      snapshot.oplogTimeRemainingIsLowerBound === true,
    );
  }
  return progress;
}

/**
 * The global view of several instances (one worker per source shard): total bytes are global (the
 * largest estimate any instance holds), copied bytes summed, lag the worst, events summed;
 * canCommit only when every instance can; the state is the common one, or the least advanced.
 */
export function mergeSnapshots(snapshots: ProgressSnapshot[]): ProgressSnapshot | null {
  if (snapshots.length === 0) return null;
  const order: SyncState[] = [
    'INITIALIZING',
    'IDLE',
    'PAUSED',
    'RUNNING',
    'REVERSING',
    'COMMITTING',
    'COMMITTED',
  ];
  const least = snapshots.reduce((a, b) =>
    order.indexOf(b.state) < order.indexOf(a.state) ? b : a,
  );
  const lags = snapshots.map((s) => s.changeApplication?.lagTimeSeconds ?? null);
  const events = snapshots.map((s) => s.changeApplication?.totalEventsApplied ?? null);
  return {
    ...least,
    canCommit: snapshots.every((s) => s.canCommit),
    canWrite: snapshots.every((s) => s.canWrite),
    copyStarted: snapshots.some((s) => s.copyStarted),
    copyDone: snapshots.every((s) => s.copyDone),
    estimatedTotalBytes: Math.max(...snapshots.map((s) => s.estimatedTotalBytes)),
    copiedBytes: snapshots.reduce((sum, s) => sum + s.copiedBytes, 0),
    changeApplication: snapshots.every((s) => s.changeApplication)
      ? {
          lagTimeSeconds: lags.some((l) => l === null) ? null : Math.max(...(lags as number[])),
          totalEventsApplied: events.reduce<number>((sum, e) => sum + (e ?? 0), 0),
          readyToCommit: snapshots.every((s) => s.changeApplication!.readyToCommit),
        }
      : null,
    failure: snapshots.find((s) => s.failure)?.failure ?? null,
    sourceWriteBlocked: snapshots.some((s) => s.sourceWriteBlocked),
    ...mergeCutover(snapshots),
    waitingFor: snapshots.find((s) => s.waitingFor)?.waitingFor ?? null,
    namespaces: {
      total: snapshots.reduce((sum, s) => sum + s.namespaces.total, 0),
      copied: snapshots.reduce((sum, s) => sum + s.namespaces.copied, 0),
    },
    verification: mergeVerification(snapshots.map((s) => s.verification)),
    warnings: [...new Set(snapshots.flatMap((s) => s.warnings ?? []))],
    retries: snapshots.reduce((sum, s) => sum + (s.retries ?? 0), 0),
    retriedOperations: snapshots.reduce((sum, s) => sum + (s.retriedOperations ?? 0), 0),
    ...tightestOplog(snapshots),
  };
}

/**
 * The smallest known oplog figure (the tightest oplog decides), null when none is known. A lower
 * bound that is the smallest stays one (every history keeps at least that long); an estimate
 * below every lower bound is the answer (the others keep longer than it).
 */
function tightestOplog(
  snapshots: ProgressSnapshot[],
): Pick<ProgressSnapshot, 'oplogTimeRemainingSeconds' | 'oplogTimeRemainingIsLowerBound'> {
  let best: { seconds: number; lowerBound: boolean } | null = null;
  for (const s of snapshots) {
    if (typeof s.oplogTimeRemainingSeconds !== 'number') continue;
    const lowerBound = s.oplogTimeRemainingIsLowerBound === true;
    const seconds = s.oplogTimeRemainingSeconds;
    if (!best || seconds < best.seconds || (seconds === best.seconds && !lowerBound))
      best = { seconds, lowerBound };
  }
  return {
    oplogTimeRemainingSeconds: best?.seconds ?? null,
    oplogTimeRemainingIsLowerBound: best?.lowerBound === true,
  };
}

/** Counts add up; the phase is the most telling one (failed, then the least advanced). */
function mergeVerification(all: Array<VerificationStatus | null>): VerificationStatus | null {
  const present = all.filter((v): v is VerificationStatus => v !== null);
  if (present.length === 0) return null;
  const order: VerificationStatus['phase'][] = [
    'failed',
    'disabled',
    'pending',
    'live',
    'final',
    'passed',
  ];
  const phase = present
    .map((v) => v.phase)
    .reduce((a, b) => (order.indexOf(b) < order.indexOf(a) ? b : a));
  const sum = (pick: (v: VerificationStatus) => number) =>
    present.reduce((total, v) => total + pick(v), 0);
  const backlogs = present.flatMap((v) => (v.backlog ? [v.backlog] : []));
  const finals = present.flatMap((v) => (v.finalPass ? [v.finalPass] : []));
  const lastRetry = present.find((v) => v.lastRetry)?.lastRetry;
  return {
    phase,
    namespacesTotal: sum((v) => v.namespacesTotal),
    namespacesVerified: sum((v) => v.namespacesVerified),
    mismatches: sum((v) => v.mismatches),
    pendingRecheck: sum((v) => v.pendingRecheck),
    samples: present.flatMap((v) => v.samples).slice(0, 10),
    ...(present[0]?.mode ? { mode: present[0].mode } : {}),
    ...(backlogs.length > 0
      ? {
          backlog: {
            dirtyDocuments: backlogs.reduce((t, b) => t + b.dirtyDocuments, 0),
            dirtyRanges: backlogs.reduce((t, b) => t + b.dirtyRanges, 0),
            uncheckedRanges: backlogs.reduce((t, b) => t + b.uncheckedRanges, 0),
            oldestDirtySeconds: Math.max(...backlogs.map((b) => b.oldestDirtySeconds)),
          },
        }
      : {}),
    ...(present.some((v) => v.caughtUp !== undefined)
      ? { caughtUp: present.every((v) => v.caughtUp !== false) }
      : {}),
    ...(present.some((v) => v.documentsRepaired !== undefined)
      ? { documentsRepaired: sum((v) => v.documentsRepaired ?? 0) }
      : {}),
    ...(present.some((v) => v.retriedReads !== undefined)
      ? { retriedReads: sum((v) => v.retriedReads ?? 0) }
      : {}),
    ...(lastRetry ? { lastRetry } : {}),
    ...(finals.length > 0
      ? {
          finalPass: {
            mode: finals[0]!.mode,
            namespaces: finals.reduce((t, f) => t + f.namespaces, 0),
            rangesRead: finals.reduce((t, f) => t + f.rangesRead, 0),
            documentsRead: finals.reduce((t, f) => t + f.documentsRead, 0),
            ms: Math.max(...finals.map((f) => f.ms)),
          },
        }
      : {}),
  };
}

/**
 * "<name>: <message>" once: persisted messages already begin with the error's class name
 * ("TransientFaultBudgetExhausted: …", "HistoryLostError: …" under the name HistoryLost).
 */
function namedText(name: string, message: string): string {
  return message.startsWith(name) ? message : `${name}: ${message}`;
}

function cutoverOf(
  commit: CommitState | undefined,
  state: SyncState,
): { cutover?: ProgressSnapshot['cutover'] } {
  if (!commit?.sourceBlockedAt) return {};
  if (commit.cutoverSeconds !== undefined)
    return { cutover: { cutoverSeconds: commit.cutoverSeconds } };
  if (state !== 'COMMITTING') return {};
  const seconds = (Date.now() - commit.sourceBlockedAt.getTime()) / 1000;
  return { cutover: { sourceBlockedSeconds: Math.max(0, Math.round(seconds * 10) / 10) } };
}

/** The longest source block and the longest measured downtime over the instances. */
function mergeCutover(snapshots: ProgressSnapshot[]): { cutover?: ProgressSnapshot['cutover'] } {
  const blocked = snapshots.flatMap((s) =>
    s.cutover?.sourceBlockedSeconds !== undefined ? [s.cutover.sourceBlockedSeconds] : [],
  );
  const downtime = snapshots.flatMap((s) =>
    s.cutover?.cutoverSeconds !== undefined ? [s.cutover.cutoverSeconds] : [],
  );
  if (blocked.length === 0 && downtime.length === 0) return {};
  return {
    cutover: {
      ...(blocked.length ? { sourceBlockedSeconds: Math.max(...blocked) } : {}),
      ...(downtime.length ? { cutoverSeconds: Math.max(...downtime) } : {}),
    },
  };
}
