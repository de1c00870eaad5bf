import {
  CONTROL_KEYS,
  type LastKnownProgress,
  type WorkerRegistration,
  type WorkerReport,
} from '@sync/contracts';
import type { Redis } from 'ioredis';

/**
 * Liveness by one clock: every heartbeat is stamped with Redis' own TIME inside a script, and
 * the coordinator judges ages against Redis' TIME too — two hosts' wall clocks are never
 * compared, so a skewed worker is neither shown missing nor kept alive by its clock.
 */

/** Milliseconds of Redis' TIME, inside a script. */
const NOW_MS = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * KEYS: workers, seen, report, lastProgress. ARGV: id, registration, report, report TTL ms,
 * last-known progress without its "at" (a JSON object; '' when the report has no progress): it is
 * stored with "at" = Redis' time. Returns Redis' time of the heartbeat.
 */
const HEARTBEAT = `${NOW_MS}
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], now)
redis.call('SET', KEYS[3], ARGV[3], 'PX', tonumber(ARGV[4]))
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[4], ARGV[1], '{"at":' .. now .. ',' .. string.sub(ARGV[5], 2))
end
return now`;

/**
 * KEYS: workers, seen. ARGV: expiry ms, report key prefix. Drops the registrations of workers
 * whose last heartbeat (Redis time) is older than the expiry, with their report; returns Redis'
 * time, the remaining registrations and their heartbeat times.
 */
const READ = `${NOW_MS}
local seen = redis.call('HGETALL', KEYS[2])
local expiry = tonumber(ARGV[1])
for i = 1, #seen, 2 do
  if now - tonumber(seen[i + 1]) > expiry then
    redis.call('HDEL', KEYS[1], seen[i])
    redis.call('HDEL', KEYS[2], seen[i])
    redis.call('DEL', ARGV[2] .. seen[i])
  end
end
return {now, redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2])}`;

/**
 * A standby worker registers beside its shard's active worker, never over it: the registry
 * key of a standby is its shard id plus its claim instance (the active worker's key is the shard
 * id alone, as ever, so the coordinator's command routing and liveness of the shard's worker
 * are unchanged). On taking the shard over it withdraws this key and registers under the id.
 */
export function standbyRegistryId(shardId: string, instance: string): string {
  return `${shardId}~standby~${instance}`;
}

/** What a registration says about its role (absent: an active worker of an older build). */
export interface RegistrationRole {
  /** `standby`: waits to take shard `shardId` over; takes no command. */
  role?: 'active' | 'standby';
  /** The worker's shard-claim instance (the claim's `instance` on the destination). */
  instance?: string;
}

export type RoleRegistration = WorkerRegistration & RegistrationRole;

/** True for a standby's registration (kept out of command routing and the merged figures). */
export function isStandbyRegistration(registration: WorkerRegistration): boolean {
  return (registration as RoleRegistration).role === 'standby';
}

/** Removes a registration at once (a standby that took over withdraws its standby key). */
export async function withdrawRegistration(redis: Redis, id: string): Promise<void> {
  await redis
    .multi()
    .hdel(CONTROL_KEYS.workers, id)
    .hdel(CONTROL_KEYS.seen, id)
    .hdel(CONTROL_KEYS.lastProgress, id)
    .del(CONTROL_KEYS.report(id))
    .exec();
}

/** Reports outlive a missed heartbeat or two but not a gone worker (the registry expiry decides). */
export const REPORT_TTL_MS = 24 * 3600 * 1000;

export async function publishHeartbeat(
  redis: Redis,
  registration: WorkerRegistration,
  report: WorkerReport,
): Promise<number> {
  const last: Omit<LastKnownProgress, 'at'> | null = report.progress
    ? { snapshot: report.snapshot, progress: report.progress }
    : null;
  const now = await redis.eval(
    HEARTBEAT,
    4,
    CONTROL_KEYS.workers,
    CONTROL_KEYS.seen,
    CONTROL_KEYS.report(registration.id),
    CONTROL_KEYS.lastProgress,
    registration.id,
    JSON.stringify(registration),
    JSON.stringify(report),
    String(REPORT_TTL_MS),
    last ? JSON.stringify(last) : '',
  );
  return Number(now);
}

export interface LivenessRead {
  /** Redis' TIME (ms) when read. */
  redisNow: number;
  registrations: WorkerRegistration[];
  /** Worker id → Redis' TIME (ms) of its last heartbeat. */
  seen: Map<string, number>;
}

/** The registry as of Redis' clock, with registrations older than `expireMs` removed. */
export async function readLiveness(redis: Redis, expireMs: number): Promise<LivenessRead> {
  const [now, workers, seen] = (await redis.eval(
    READ,
    2,
    CONTROL_KEYS.workers,
    CONTROL_KEYS.seen,
    String(expireMs),
    CONTROL_KEYS.report(''),
  )) as [number, string[], string[]];
  const registrations: WorkerRegistration[] = [];
  for (let i = 0; i + 1 < workers.length; i += 2) {
    const parsed = parseJson<WorkerRegistration>(workers[i + 1]);
    if (parsed && typeof parsed.id === 'string') registrations.push(parsed);
  }
  registrations.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const times = new Map<string, number>();
  for (let i = 0; i + 1 < seen.length; i += 2) times.set(seen[i], Number(seen[i + 1]));
  return { redisNow: Number(now), registrations, seen: times };
}

/** Redis' TIME in milliseconds (a worker checks a command's expiry against it). */
export async function redisTimeMs(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

export function parseJson<T>(value: string | null | undefined): T | null {
  if (!value) return null;
  try {
    return JSON.parse(value) as T;
  } catch {
    return null;
  }
}
