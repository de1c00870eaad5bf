import {
  applyProgressRules,
  IDLE_PROGRESS,
  type Progress,
  type WorkerRegistration,
  type WorkerReport,
} from '@sync/contracts';
import { mergeSnapshots, renderProgress, type ProgressSnapshot } from '@sync/engine';

export interface InstanceView {
  id: string;
  shardId: string | null;
  /** Seconds since its last report (null: it never reported). */
  lastSeenSecondsAgo: number | null;
  /** No report within the stale limit: down, cut off from Redis, or not started yet. */
  missing: boolean;
  /** Commands queued for it and not taken yet (null when unknown). */
  pendingCommands: number | null;
  /** Its own progress as it last reported it (a missing worker's last known one). */
  progress: Progress | null;
  error: { error: string; errorDescription: string } | null;
}

export interface MergeInputs {
  registrations: readonly WorkerRegistration[];
  reports: ReadonlyMap<string, WorkerReport>;
  pending?: ReadonlyMap<string, number>;
  now: number;
  staleMs: number;
  syncID: string;
  coordinatorID: string | null;
}

/**
 * The sync as a whole (SEED-API §2.5 through the engine's mergeSnapshots + renderProgress) plus
 * `instances`, one per registered worker. A worker that stopped reporting keeps its last
 * snapshot in the sums and is marked `missing`; while any worker is missing or has no
 * snapshot, canCommit is false (a commit could not reach it).
 */
export function mergeInstances(inputs: MergeInputs): Progress {
  const instances: InstanceView[] = inputs.registrations.map((registration) => {
    const report = inputs.reports.get(registration.id);
    const age = report ? Math.max(0, inputs.now - report.at) : null;
    return {
      id: registration.id,
      shardId: registration.shardId,
      lastSeenSecondsAgo: age === null ? null : Math.round(age / 100) / 10,
      missing: age === null || age > inputs.staleMs,
      pendingCommands: inputs.pending?.get(registration.id) ?? null,
      progress: report?.progress ? applyProgressRules(report.progress) : null,
      error: report?.error ?? null,
    };
  });
  const snapshots = inputs.registrations.flatMap((r) => {
    const snapshot = inputs.reports.get(r.id)?.snapshot as ProgressSnapshot | null | undefined;
    // A report from a worker of another build may lack newer optional parts: null, not absent.
    return snapshot ? [{ ...snapshot, verification: snapshot.verification ?? null }] : [];
  });
  const merged = mergeSnapshots(snapshots);
  const whole = merged ? applyProgressRules(renderProgress(merged)) : { ...IDLE_PROGRESS };
  const incomplete =
    instances.some((i) => i.missing) || snapshots.length < inputs.registrations.length;
  if (incomplete) whole.canCommit = false;
  if (whole.state !== 'IDLE') {
    whole.syncID = inputs.syncID;
    whole.coordinatorID = inputs.coordinatorID;
  }
  const missing = instances.filter((i) => i.missing).map((i) => i.id);
  return {
    ...whole,
    ...(missing.length > 0 ? { missingInstances: missing } : {}),
    instances,
  };
}
