import { CONTROL_KEYS, type CommandJobData } from '@sync/contracts';
import type { Redis } from 'ioredis';
import { redisTimeMs } from './liveness';

/**
 * KEYS: applied. ARGV: worker id, sequence. Records the sequence as the worker's highest taken
 * unless a higher one is recorded; returns the highest (equal to ARGV[2] when admitted).
 */
const TAKE = `local current = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local sequence = tonumber(ARGV[2])
if sequence < current then return current end
redis.call('HSET', KEYS[1], ARGV[1], sequence)
return sequence`;

/**
 * Whether a worker may run a command: not past its expiry by Redis' clock, and not older than
 * a command it has already taken (the highest sequence, kept in Redis so a restarted worker
 * knows it too). A re-delivered job has the same sequence and is admitted (the engine applies a
 * command id once). Returns null when admitted, else why not. Jobs of older builds (no sequence
 * or expiry) are admitted.
 */
export async function admitCommand(
  redis: Redis,
  workerId: string,
  data: CommandJobData,
): Promise<string | null> {
  if (data.expiresAt !== undefined) {
    const now = await redisTimeMs(redis);
    if (now > data.expiresAt) {
      return `${data.operation} (${data.commandId}) expired ${Math.round((now - data.expiresAt) / 1000)} s ago by Redis' clock; the coordinator gave up on it, so it is not run late.`;
    }
  }
  if (data.sequence === undefined) return null;
  const highest = Number(
    await redis.eval(TAKE, 1, CONTROL_KEYS.applied, workerId, String(data.sequence)),
  );
  if (highest > data.sequence) {
    return `${data.operation} (${data.commandId}) is command #${data.sequence}, but this worker has already taken #${highest}; an older command is never run after a newer one.`;
  }
  return null;
}
