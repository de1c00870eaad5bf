import {
  CONTROL_KEYS,
  type LastKnownProgress,
  type WorkerRegistration,
  type WorkerReport,
} from '@sync/contracts';
import {
  isStandbyRegistration,
  parseJson,
  readLiveness,
  type RoleRegistration,
} from '@sync/service';
import type { Redis } from 'ioredis';

export interface Roster {
  /** The active workers (one per shard id; standbys are apart, below). */
  registrations: WorkerRegistration[];
  /**
   * Standby workers (--standby), each under its own key beside its shard's active worker, with
   * Redis' TIME of its last heartbeat. Never sent commands, never merged into the figures.
   */
  standbys?: Array<{ registration: RoleRegistration; seenAt: number | null }>;
  /**
   * Latest reports; each one's `at` is Redis' TIME of its heartbeat (not the worker's clock),
   * so its age against `redisNow` is judged by one clock.
   */
  reports: Map<string, WorkerReport>;
  /** Each worker's last report that carried progress (a starting or missing worker's figures). */
  lastKnown: Map<string, LastKnownProgress>;
  /** Redis' TIME (ms) at this read. */
  redisNow: number;
  /** performance.now() at this read: `redisNow` advanced by local monotonic time, never wall. */
  readAt: number;
}

/**
 * The registered workers and their latest reports, by Redis' clock. Registrations whose worker
 * has not beaten for `expireMs` are removed on the way (the worker re-registers when it beats).
 */
export async function readRoster(
  redis: Redis,
  expireMs: number,
  /** Ids whose last known progress is wanted even when not registered (expected shards). */
  alsoKnown: readonly string[] = [],
): Promise<Roster> {
  const liveness = await readLiveness(redis, expireMs);
  const readAt = performance.now();
  const registrations = liveness.registrations.filter((r) => !isStandbyRegistration(r));
  const standbys = liveness.registrations
    .filter((r) => isStandbyRegistration(r))
    .map((registration) => ({
      registration: registration as RoleRegistration,
      seenAt: liveness.seen.get(registration.id) ?? null,
    }));
  const reports = new Map<string, WorkerReport>();
  const lastKnown = new Map<string, LastKnownProgress>();
  const ids = registrations.map((r) => r.id);
  const known = [...new Set([...ids, ...alsoKnown])];
  if (known.length > 0) {
    const [values, last] = await Promise.all([
      ids.length > 0 ? redis.mget(...ids.map((id) => CONTROL_KEYS.report(id))) : [],
      redis.hmget(CONTROL_KEYS.lastProgress, ...known),
    ]);
    values.forEach((value, i) => {
      const report = parseJson<WorkerReport>(value);
      const seen = liveness.seen.get(ids[i]);
      // No heartbeat time in Redis (a worker of an older build): never seen by Redis' clock.
      if (report) reports.set(ids[i], { ...report, at: seen ?? Number.NEGATIVE_INFINITY });
    });
    last.forEach((value, i) => {
      const parsed = parseJson<LastKnownProgress>(value);
      if (parsed?.progress) lastKnown.set(known[i], parsed);
    });
  }
  return { registrations, standbys, reports, lastKnown, redisNow: liveness.redisNow, readAt };
}

/** Redis' time now, as estimated from a read (its TIME plus local monotonic time since). */
export function redisNowOf(roster: Pick<Roster, 'redisNow' | 'readAt'>): number {
  return roster.redisNow + Math.max(0, performance.now() - roster.readAt);
}
