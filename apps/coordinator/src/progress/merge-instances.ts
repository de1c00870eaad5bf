import {
  applyProgressRules,
  IDLE_PROGRESS,
  type LastKnownProgress,
  type Progress,
  type WorkerRegistration,
  type WorkerReport,
} from '@sync/contracts';
import { mergeSnapshots, renderProgress, type ProgressSnapshot } from '@sync/engine';
import type { RoleRegistration } from '@sync/service';

/**
 * Why an instance shows what it shows:
 * - `active`: it beat within the stale limit (Redis' clock) and reported its progress;
 * - `starting`: it beats but has no progress yet (its engine is initializing, e.g. right after a
 *   restart) — its last known progress is shown, with `progressSecondsAgo`;
 * - `missing`: no heartbeat within the stale limit, never one, or (a per-shard sync) no worker
 *   registered for a source shard — its last known progress is shown when there is one.
 */
export type InstanceStatus = 'active' | 'starting' | 'missing';

/** A command in a worker's queue: its attempts so far of a bounded number (retries visible). */
export interface QueuedCommand {
  operation: string;
  commandId: string;
  state: string;
  attemptsMade: number;
  attempts: number;
  lastError?: string;
}

/** A standby worker of a shard (--standby): it takes the shard over when the active one dies. */
export interface StandbyView {
  /** Its registry key (shard id + claim instance). */
  id: string;
  /** Its shard-claim instance. */
  instance: string | null;
  /** Its own API (progress answers `role: "standby"`). */
  url: string | null;
  lastSeenSecondsAgo: number | null;
  /** No heartbeat within the stale limit: it cannot take the shard over. */
  missing: boolean;
}

export interface InstanceView {
  id: string;
  shardId: string | null;
  status: InstanceStatus;
  /** `active`: the worker that holds (or is taking) the shard; its standbys are listed apart. */
  role: 'active';
  /** The active worker's shard-claim instance (null: none registered, or an older build). */
  instance: string | null;
  /** The shard's standby workers (empty: none; a dead active worker is then not replaced). */
  standbys: StandbyView[];
  /** Seconds since its last heartbeat, by Redis' clock (null: none known). */
  lastSeenSecondsAgo: number | null;
  /** No heartbeat within the stale limit: down, cut off from Redis, or not started yet. */
  missing: boolean;
  /** Commands queued for it and not taken yet (null when unknown). */
  pendingCommands: number | null;
  /** Those commands: state (waiting, active, retrying), attempts made of the bound, last error. */
  commands?: readonly QueuedCommand[];
  /** Its progress: current when active, else the last known one (null when it never had one). */
  progress: Progress | null;
  /** Seconds since `progress` was reported, when it is a last known one (status not active). */
  progressSecondsAgo?: number;
  /** Why the instance is not active (or why it has no progress). */
  reason?: string;
  error: { error: string; errorDescription: string } | null;
}

export interface MergeInputs {
  registrations: readonly WorkerRegistration[];
  /** Standby workers with Redis' TIME of their last heartbeat (null: never seen). */
  standbys?: ReadonlyArray<{ registration: RoleRegistration; seenAt: number | null }>;
  /** Reports with `at` = Redis' time of their heartbeat. */
  reports: ReadonlyMap<string, WorkerReport>;
  lastKnown?: ReadonlyMap<string, LastKnownProgress>;
  pending?: ReadonlyMap<string, readonly QueuedCommand[]>;
  /** Redis' time now (ms): the one clock ages are judged by. */
  now: number;
  staleMs: number;
  syncID: string;
  coordinatorID: string | null;
  /** A per-shard sync's source shards (a shard nobody registered for is a missing instance). */
  expectedShards?: readonly string[] | null;
  /** estimatedSecondsToCEACatchup per instance id, and under '' for the whole sync. */
  catchup?: ReadonlyMap<string, number>;
  /** The coordinator's last pings of the clusters by name (ms; -1 = the last ping failed). */
  pings?: ReadonlyMap<string, number>;
}

const seconds = (ms: number) => Math.round(ms / 100) / 10;

/**
 * The sync as a whole (the progress fields, through the engine's mergeSnapshots + renderProgress)
 * plus `instances`, one per registered worker (and one per source shard no worker serves). A worker
 * that is not active keeps its last known snapshot in the sums; while any instance is not active,
 * canCommit is false (a commit could not reach it). `collectionCopy.estimatedTotalBytes` is the
 * whole sync's total on every instance, `estimatedCopiedBytes` the instance's own share (as
 * MongoDB's tool reports them: their sum is never above the total).
 */
export function mergeInstances(inputs: MergeInputs): Progress {
  const snapshots = new Map<string, ProgressSnapshot>();
  const standbysOf = (shardId: string | null): StandbyView[] =>
    (inputs.standbys ?? [])
      .filter((s) => shardId !== null && s.registration.shardId === shardId)
      .map(({ registration, seenAt }) => {
        const age = seenAt === null ? null : Math.max(0, inputs.now - seenAt);
        return {
          id: registration.id,
          instance: registration.instance ?? null,
          url: registration.url,
          lastSeenSecondsAgo: age === null ? null : seconds(age),
          missing: age === null || age > inputs.staleMs,
        };
      });
  const views: InstanceView[] = inputs.registrations.map((registration) => {
    const id = registration.id;
    const report = inputs.reports.get(id);
    const last = inputs.lastKnown?.get(id);
    const age = report && Number.isFinite(report.at) ? Math.max(0, inputs.now - report.at) : null;
    const fresh = age !== null && age <= inputs.staleMs;
    const view: InstanceView = {
      id,
      shardId: registration.shardId,
      status: 'active',
      role: 'active',
      instance: (registration as RoleRegistration).instance ?? null,
      standbys: standbysOf(registration.shardId),
      lastSeenSecondsAgo: age === null ? null : seconds(age),
      missing: !fresh,
      pendingCommands: inputs.pending?.get(id)?.length ?? null,
      ...(inputs.pending?.get(id)?.length ? { commands: inputs.pending.get(id) } : {}),
      progress: null,
      error: report?.error ?? null,
    };
    const current = report?.progress ? report : null;
    if (current) {
      view.progress = applyProgressRules(current.progress!);
      const snapshot = current.snapshot as ProgressSnapshot | null;
      if (snapshot) snapshots.set(id, snapshot);
    } else if (last) {
      view.progress = applyProgressRules(last.progress);
      view.progressSecondsAgo = seconds(Math.max(0, inputs.now - last.at));
      const snapshot = last.snapshot as ProgressSnapshot | null;
      if (snapshot) snapshots.set(id, snapshot);
    }
    if (!fresh) {
      view.status = 'missing';
      view.reason =
        age === null
          ? 'no heartbeat from this worker is known to Redis'
          : `no heartbeat for ${seconds(age)} s (stale after ${seconds(inputs.staleMs)} s, by Redis' clock)`;
      if (current && current.progress) view.progressSecondsAgo = view.lastSeenSecondsAgo!;
    } else if (!current) {
      view.status = 'starting';
      view.reason = `the worker beats but has no progress yet${report?.error ? ` (${report.error.error}: ${report.error.errorDescription})` : ''}${last ? '; its last known progress is shown' : ''}`;
    }
    return view;
  });
  for (const shard of inputs.expectedShards ?? []) {
    if (views.some((v) => v.id === shard)) continue;
    const last = inputs.lastKnown?.get(shard);
    if (last?.snapshot) snapshots.set(shard, last.snapshot as ProgressSnapshot);
    views.push({
      id: shard,
      shardId: shard,
      status: 'missing',
      role: 'active',
      instance: null,
      standbys: standbysOf(shard),
      lastSeenSecondsAgo: null,
      missing: true,
      pendingCommands: null,
      progress: last ? applyProgressRules(last.progress) : null,
      ...(last ? { progressSecondsAgo: seconds(Math.max(0, inputs.now - last.at)) } : {}),
      reason:
        'no worker is registered for this source shard (never joined, or its registration expired)',
      error: null,
    });
  }
  for (const view of views) {
    const ready = view.standbys.filter((s) => !s.missing);
    if (view.status === 'missing' && ready.length > 0) {
      view.reason = `${view.reason ?? 'missing'}; its standby ${ready.map((s) => s.instance ?? s.id).join(', ')} takes the shard over once the claim is stale`;
    }
  }
  const all = [...snapshots.values()].map((s) => ({
    ...s,
    // A report from a worker of another build may lack newer optional parts: null, not absent.
    verification: s.verification ?? null,
  }));
  const merged = mergeSnapshots(all);
  const whole = merged ? applyProgressRules(renderProgress(merged)) : { ...IDLE_PROGRESS };
  const incomplete = views.some((v) => v.status !== 'active') || snapshots.size < views.length;
  if (incomplete) whole.canCommit = false;
  if (whole.state !== 'IDLE') {
    whole.syncID = inputs.syncID;
    whole.coordinatorID = inputs.coordinatorID;
    addCatchup(whole, inputs.catchup?.get(''));
    addPings(whole, inputs.pings);
  }
  const total = whole.collectionCopy?.estimatedTotalBytes ?? null;
  for (const view of views) {
    if (!view.progress) continue;
    view.progress = { ...view.progress };
    if (view.status === 'active') addCatchup(view.progress, inputs.catchup?.get(view.id));
    const own = view.progress.collectionCopy;
    if (total === null || !own) continue;
    const copied = snapshots.get(view.id)?.copiedBytes ?? own.estimatedCopiedBytes;
    view.progress.collectionCopy = {
      estimatedTotalBytes: total,
      estimatedCopiedBytes: Math.max(0, Math.min(copied, total)),
    };
  }
  const missing = views.filter((v) => v.missing).map((v) => v.id);
  return {
    ...whole,
    ...(missing.length > 0 ? { missingInstances: missing } : {}),
    instances: views,
  };
}

/** MongoDB's tool reports the estimate only during change event application, when known. */
function addCatchup(progress: Progress, estimate: number | undefined): void {
  if (estimate === undefined || progress.state !== 'RUNNING') return;
  if (progress.info !== 'change event application') return;
  progress.estimatedSecondsToCEACatchup = estimate;
}

/** `source.pingLatencyMs` / `destination.pingLatencyMs`: absent when unknown or below 1 ms. */
function addPings(progress: Progress, pings: ReadonlyMap<string, number> | undefined): void {
  if (!pings || !progress.directionMapping) return;
  const cluster = (mapping: string) => mapping.split(':')[0];
  for (const [field, mapping] of [
    ['source', progress.directionMapping.Source],
    ['destination', progress.directionMapping.Destination],
  ] as const) {
    const ms = pings.get(cluster(mapping));
    if (ms === undefined || (ms >= 0 && ms < 1)) continue;
    progress[field] = { pingLatencyMs: ms < 0 ? -1 : Math.round(ms) };
  }
}
