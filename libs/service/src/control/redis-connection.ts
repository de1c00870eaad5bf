import { redactRedisUrl } from '@sync/contracts';
import { Redis, type RedisOptions } from 'ioredis';
import { LaunchConfigError } from '../config/launch-config.error';

/**
 * How this project talks to Redis (BullMQ's production guidance):
 * - `blocking`: BullMQ workers' connections; `maxRetriesPerRequest: null` so a blocking call
 *   survives a Redis restart instead of failing the worker.
 * - `command`: producers, the lease, the registry, progress reports; they fail fast while Redis
 *   is away (no offline queue), so an API call answers RedisUnavailable instead of hanging.
 * Both reconnect forever with a capped backoff. Redis itself must run with
 * `maxmemory-policy noeviction` (an evicted job or lease key is a lost command or a split brain).
 */
export type RedisRole = 'blocking' | 'command';

export function redisOptions(url: string, role: RedisRole): RedisOptions {
  const parsed = new URL(url);
  const db = parsed.pathname.replace(/^\//, '');
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port ? Number(parsed.port) : 6379,
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(db ? { db: Number(db) } : {}),
    ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
    connectTimeout: 5_000,
    retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 5), 2_000),
    ...(role === 'blocking'
      ? { maxRetriesPerRequest: null, enableOfflineQueue: true }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false }),
  };
}

/** A connection whose errors are reported once per outage, never as "Unhandled error event". */
export function createRedis(
  url: string,
  role: RedisRole,
  onOutage: (message: string) => void = () => undefined,
): Redis {
  const client = new Redis({ ...redisOptions(url, role), lazyConnect: false });
  watchOutages(client, url, onOutage);
  return client;
}

/** Works for ioredis clients and BullMQ queues, workers and flow producers alike. */
export function watchOutages(
  emitter: object,
  url: string,
  onOutage: (message: string) => void,
): void {
  const events = emitter as { on(event: string, listener: (...args: any[]) => void): unknown };
  let down = false;
  events.on('error', (error: Error) => {
    if (down) return;
    down = true;
    onOutage(`Redis at ${redactRedisUrl(url)} is unreachable: ${describeRedisError(error)}`);
  });
  events.on('ready', () => {
    down = false;
  });
}

/** "ECONNREFUSED", "WRONGPASS ..." — never the URL (it may carry the password). */
export function describeRedisError(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  const message = error instanceof Error ? error.message : String(error);
  return message
    .split('\n')[0]
    .replace(/rediss?:\/\/\S*/gi, '<redis url>')
    .slice(0, 200);
}

/**
 * Launch check: Redis answers PING within `timeoutMs`, or a LaunchConfigError with one line
 * (the coordinator exits 2). Also warns when the eviction policy could drop jobs or the lease.
 */
export async function probeRedis(
  url: string,
  timeoutMs = 5_000,
  warn: (message: string, fields: Record<string, unknown>) => void = () => undefined,
): Promise<void> {
  const client = new Redis({
    ...redisOptions(url, 'command'),
    lazyConnect: true,
    connectTimeout: timeoutMs,
    retryStrategy: () => null,
  });
  let lastError: unknown = null;
  client.on('error', (error) => (lastError = error));
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    client.disconnect();
    throw new LaunchConfigError(
      `cannot reach Redis at ${redactRedisUrl(url)} (${describeRedisError(lastError ?? error)}); start it or fix --redis`,
    );
  }
  try {
    const policy = (await client.call('CONFIG', 'GET', 'maxmemory-policy')) as string[];
    if (policy[1] && policy[1] !== 'noeviction') {
      warn('Redis evicts keys under memory pressure; set maxmemory-policy noeviction', {
        maxmemoryPolicy: policy[1],
      });
    }
  } catch {
    // CONFIG is often disabled on managed Redis: nothing to check then.
  } finally {
    client.disconnect();
  }
}
