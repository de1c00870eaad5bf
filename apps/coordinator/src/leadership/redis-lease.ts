import type { Redis } from 'ioredis';

/** Compare-then-act: only the holder of `value` may extend or delete the key. */
const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0`;

/**
 * An expiring lease in Redis: `SET key value NX PX ttl` to take it, renewal and
 * release by its owner only (a Lua script compares the value first, atomically). The value is
 * unique per acquisition (it holds a random token), so a replica that lost the lease and took
 * it again never renews its old term.
 */
export class RedisLease {
  constructor(
    private readonly redis: Redis,
    readonly key: string,
    readonly ttlMs: number,
  ) {}

  async acquire(value: string): Promise<boolean> {
    return (await this.redis.set(this.key, value, 'PX', this.ttlMs, 'NX')) === 'OK';
  }

  async renew(value: string): Promise<boolean> {
    return Number(await this.redis.eval(RENEW, 1, this.key, value, String(this.ttlMs))) === 1;
  }

  async release(value: string): Promise<boolean> {
    return Number(await this.redis.eval(RELEASE, 1, this.key, value)) === 1;
  }

  holder(): Promise<string | null> {
    return this.redis.get(this.key);
  }
}
