import type { EpochStore } from './epoch-store';
import { Leadership } from './leadership';
import type { RedisLease } from './redis-lease';

/** A lease in memory with the same contract as RedisLease (set-if-absent, owner-only renew). */
class FakeLease {
  value: string | null = null;
  expiresAt = 0;
  down = false;
  constructor(
    readonly ttlMs: number,
    private readonly clock: { t: number },
  ) {}
  private live(): string | null {
    if (this.value !== null && this.clock.t >= this.expiresAt) this.value = null;
    return this.value;
  }
  private check(): void {
    if (this.down) throw new Error('ECONNREFUSED');
  }
  async acquire(value: string): Promise<boolean> {
    this.check();
    if (this.live() !== null) return false;
    this.value = value;
    this.expiresAt = this.clock.t + this.ttlMs;
    return true;
  }
  async renew(value: string): Promise<boolean> {
    this.check();
    if (this.live() !== value) return false;
    this.expiresAt = this.clock.t + this.ttlMs;
    return true;
  }
  async release(value: string): Promise<boolean> {
    this.check();
    if (this.live() !== value) return false;
    this.value = null;
    return true;
  }
  async holder(): Promise<string | null> {
    this.check();
    return this.live();
  }
}

class CountingEpochs implements EpochStore {
  epoch = 0;
  failNext = false;
  async next(): Promise<number> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('destination unreachable');
    }
    return ++this.epoch;
  }
}

function setup() {
  const clock = { t: 0 };
  const lease = new FakeLease(3_000, clock);
  const epochs = new CountingEpochs();
  const replica = (id: string) =>
    new Leadership({
      lease: lease as unknown as RedisLease,
      epochs,
      id,
      url: () => `http://${id}:1/api/v1`,
      now: () => clock.t,
    });
  return { clock, lease, epochs, a: replica('a'), b: replica('b') };
}

describe('Leadership (lease + fencing epoch)', () => {
  it('one replica leads with epoch 1; the other knows who leads', async () => {
    const { a, b } = setup();
    await a.tick();
    await b.tick();
    expect(a.epoch()).toBe(1);
    expect(b.epoch()).toBeNull();
    expect(b.leader()).toMatchObject({ id: 'a', url: 'http://a:1/api/v1' });
  });

  it('renewal keeps the lease; a dead leader is replaced after the TTL with a higher epoch', async () => {
    const { clock, a, b } = setup();
    await a.tick();
    for (let i = 0; i < 5; i++) {
      clock.t += 1_000;
      await a.tick();
      await b.tick();
    }
    expect(a.epoch()).toBe(1);
    expect(b.isLeader()).toBe(false);
    clock.t += 3_000; // a stops ticking (SIGKILL): its lease expires
    await b.tick();
    expect(b.epoch()).toBe(2);
    await a.tick(); // a comes back: its renewal is refused, it steps down
    expect(a.epoch()).toBeNull();
    expect(b.leader()?.id).toBe('b');
  });

  it('stops leading when Redis cannot confirm the lease within the TTL', async () => {
    const { clock, lease, a } = setup();
    await a.tick();
    lease.down = true;
    clock.t += 1_000;
    await a.tick();
    expect(a.epoch()).toBe(1); // still inside the TTL of the last renewal
    clock.t += 2_000;
    expect(a.epoch()).toBeNull(); // no command is stamped once the lease may have expired
    await a.tick();
    expect(a.isLeader()).toBe(false);
  });

  it('takes a new epoch after losing the lease (Redis restarted empty)', async () => {
    const { lease, a } = setup();
    await a.tick();
    lease.value = null; // the key is gone
    await a.tick(); // renewal refused → step down
    expect(a.epoch()).toBeNull();
    await a.tick(); // leads again, with a new term
    expect(a.epoch()).toBe(2);
  });

  it('gives the lease back when no epoch can be recorded, and on release', async () => {
    const { lease, epochs, a, b } = setup();
    epochs.failNext = true;
    await a.tick();
    expect(a.isLeader()).toBe(false);
    expect(lease.value).toBeNull();
    await b.tick();
    expect(b.epoch()).toBe(1);
    await b.release();
    expect(lease.value).toBeNull();
    await a.tick();
    expect(a.epoch()).toBe(2);
  });
});
