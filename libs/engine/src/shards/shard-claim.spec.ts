import { ApiError } from '@sync/contracts';
import { systemClock, type Clock } from '../ports/clock';
import { silentLogger } from '../ports/engine-logger';
import { FakeCoordinationStore } from '../testing/in-memory-coordination';
import { ShardClaim } from './shard-claim';

/** A host's clock: the virtual time (jest's fake timers) plus this host's skew. */
const hostClock = (offsetMs: number): Clock & { skew(ms: number): void } => {
  let offset = offsetMs;
  return {
    now: () => Date.now() + offset,
    sleep: (ms, signal) => systemClock.sleep(ms, signal),
    skew: (ms) => void (offset += ms),
  };
};

const OPTIONS = { staleMs: 10_000, renewMs: 3_000 }; // lease margin: 2 s
const HOUR = 3_600_000;

describe('ShardClaim (the destination clock judges; epochs; the lease)', () => {
  let store: FakeCoordinationStore;

  beforeEach(() => {
    jest.useFakeTimers({ now: 1_700_000_000_000 });
    // The destination's own clock: the only one a claim is judged by.
    store = new FakeCoordinationStore(() => Date.now());
  });
  afterEach(() => jest.useRealTimers());

  const claimOf = (clock: Clock) => new ShardClaim('shardA', clock, silentLogger, OPTIONS);

  it("ignores the hosts' clock skew: a live holder is never taken over, a dead one after staleMs", async () => {
    const lost: ApiError[] = [];
    const behind = claimOf(hostClock(-HOUR));
    await behind.acquire(store, (e) => lost.push(e));
    expect(behind.epoch).toBe(1);

    // An hour ahead: by its own clock the holder's heartbeat is an hour old. Refused anyway.
    const ahead = claimOf(hostClock(+HOUR));
    const refused = ahead.acquire(store, () => undefined);
    refused.catch(() => undefined);
    await jest.advanceTimersByTimeAsync(12_000);
    await expect(refused).rejects.toMatchObject({ error: 'DuplicateShardWorker' });
    await jest.advanceTimersByTimeAsync(30_000);
    expect(lost).toEqual([]);
    expect(() => behind.fence.assertHeld()).not.toThrow();
    expect(store.claims.get('shardA')).toMatchObject({ instance: behind.instance, epoch: 1 });

    // The holder (an hour behind) dies; the newcomer (an hour ahead) takes over after staleMs
    // of the destination's time — not at once, not an hour later.
    behind.stop();
    const diedAt = Date.now();
    const next = claimOf(hostClock(+HOUR));
    const taken = next.acquire(store, () => undefined);
    await jest.advanceTimersByTimeAsync(9_000);
    expect(next.epoch).toBeUndefined();
    await jest.advanceTimersByTimeAsync(3_000);
    await taken;
    expect(next.epoch).toBe(2);
    expect(Date.now() - diedAt).toBeLessThan(13_000);
    expect(store.fences.get('shardA')).toBe(2);
    next.stop();
  });

  it('stops writing on its own before the claim can go stale when renewals fail', async () => {
    const clock = hostClock(0);
    const holder = claimOf(clock);
    const lost: ApiError[] = [];
    const claim = store.claim.bind(store);
    let blocked = false;
    store.claim = (...args) =>
      blocked ? Promise.reject(new Error('network partition')) : claim(...args);
    const acquiredAt = Date.now();
    await holder.acquire(store, (e) => lost.push(e));
    blocked = true;

    // The lease: sent + staleMs − margin = 8 s after the last acknowledged renewal was sent.
    await jest.advanceTimersByTimeAsync(7_900);
    expect(() => holder.fence.assertHeld()).not.toThrow();
    expect(lost).toEqual([]);
    await jest.advanceTimersByTimeAsync(200);
    expect(() => holder.fence.assertHeld()).toThrow(/lease ran out/);
    expect(lost.map((e) => e.error)).toEqual(['ShardClaimLost']);
    // ...while the destination still sees the claim fresh: nobody could have taken it over yet.
    const heartbeat = store.claims.get('shardA')!.heartbeatAt.getTime();
    expect(heartbeat).toBe(acquiredAt);
    expect(Date.now() - heartbeat).toBeLessThan(OPTIONS.staleMs);

    // Renewals working again change nothing: a lost claim stays lost.
    blocked = false;
    await jest.advanceTimersByTimeAsync(10_000);
    expect(() => holder.fence.assertHeld()).toThrow(/ShardClaimLost|no longer holds/);
    holder.stop();
  });

  it('a paused process finds its lease run out the moment it wakes, before any timer fires', async () => {
    const clock = hostClock(0);
    const holder = claimOf(clock);
    await holder.acquire(store, () => undefined);
    await jest.advanceTimersByTimeAsync(2_900);
    expect(() => holder.fence.assertHeld()).not.toThrow();
    // The VM is paused for 9 s: its monotonic clock moved on, nothing of it ran.
    clock.skew(9_000);
    expect(() => holder.fence.assertHeld()).toThrow(/lease ran out/);
    holder.stop();
  });

  it('the holder learns at its next renewal that another instance took over (epoch + 1)', async () => {
    const holder = claimOf(hostClock(0));
    const lost: ApiError[] = [];
    await holder.acquire(store, (e) => lost.push(e));
    // A successor took the claim over (say the holder's renewals were lost for a while).
    store.claims.set('shardA', {
      _id: 'shardA',
      instance: 'successor',
      heartbeatAt: new Date(Date.now()),
      epoch: 2,
    });
    await jest.advanceTimersByTimeAsync(3_100);
    expect(lost.map((e) => e.error)).toEqual(['ShardClaimLost']);
    expect(lost[0].message).toMatch(/took the shard over.*epoch 2/);
    expect(() => holder.fence.assertHeld()).toThrow(/took the shard over/);
    holder.stop();
  });

  it('a restart waits out a dead predecessor however long it takes (a late last renewal included)', async () => {
    const dead = claimOf(hostClock(0));
    await dead.acquire(store, () => undefined);
    dead.stop(); // crashed: no more renewals...
    const restarted = claimOf(hostClock(0));
    const taken = restarted.acquire(store, () => undefined);
    taken.catch(() => undefined);
    // ...but one renewal it had sent lands 2 s later: its heartbeat advanced once.
    await jest.advanceTimersByTimeAsync(2_000);
    await store.claim('shardA', dead.instance, OPTIONS.staleMs);
    await jest.advanceTimersByTimeAsync(11_500);
    await expect(taken).resolves.toBeUndefined();
    expect(restarted.epoch).toBe(2);
    expect(store.claims.get('shardA')).toMatchObject({ instance: restarted.instance, epoch: 2 });
    restarted.stop();
  });

  it('refuses a second live process, saying the holder is alive', async () => {
    const holder = claimOf(hostClock(0));
    await holder.acquire(store, () => undefined);
    const twin = claimOf(hostClock(0));
    const refused = twin.acquire(store, () => undefined);
    refused.catch(() => undefined);
    await jest.advanceTimersByTimeAsync(8_000);
    await expect(refused).rejects.toMatchObject({
      error: 'DuplicateShardWorker',
      message: expect.stringMatching(/alive.*--standby/),
    });
    holder.stop();
  });
});

describe('ShardClaim standby mode (--standby)', () => {
  let store: FakeCoordinationStore;

  beforeEach(() => {
    jest.useFakeTimers({ now: 1_700_000_000_000 });
    store = new FakeCoordinationStore(() => Date.now());
  });
  afterEach(() => jest.useRealTimers());

  // Renew 1 s (the default), stale 4 s (lease margin 0.8 s): the timings these cases count in.
  const TIMING = { staleMs: 4_000 };
  const active = (clock: Clock = hostClock(0)) =>
    new ShardClaim('shardA', clock, silentLogger, TIMING);
  const standby = (clock: Clock = hostClock(0), extra: object = {}) =>
    new ShardClaim('shardA', clock, silentLogger, { ...TIMING, standby: true, ...extra });

  it('never takes over from a live active worker, however long it waits, and never refuses', async () => {
    const holder = active(hostClock(-HOUR));
    const lost: ApiError[] = [];
    await holder.acquire(store, (e) => lost.push(e));
    const waiting = standby(hostClock(+HOUR));
    let settled = false;
    const taken = waiting.acquire(store, () => undefined);
    void taken.then(
      () => (settled = true),
      () => (settled = true),
    );
    await jest.advanceTimersByTimeAsync(5 * 60_000);
    expect(settled).toBe(false);
    expect(waiting.epoch).toBeUndefined();
    expect(lost).toEqual([]);
    expect(() => holder.fence.assertHeld()).not.toThrow();
    expect(store.claims.get('shardA')).toMatchObject({ instance: holder.instance, epoch: 1 });
    expect(store.fences.get('shardA')).toBe(1);
    holder.stop();
    await jest.advanceTimersByTimeAsync(6_000);
    expect(settled).toBe(true);
    waiting.stop();
  });

  it('takes a dead active worker over within a few seconds (stale by the destination clock), epoch + 1, fenced', async () => {
    const holder = active();
    const lostByHolder: ApiError[] = [];
    await holder.acquire(store, (e) => lostByHolder.push(e));
    const holders: Array<string | null> = [];
    const waiting = standby(hostClock(0), {
      onStandby: (h: { instance: string } | null) => holders.push(h?.instance ?? null),
    });
    const taken = waiting.acquire(store, () => undefined);
    await jest.advanceTimersByTimeAsync(10_000);
    expect(waiting.epoch).toBeUndefined();
    expect(holders.length).toBeGreaterThan(0);
    expect(new Set(holders)).toEqual(new Set([holder.instance]));

    // The active worker dies right after a renewal.
    holder.stop();
    const lastBeat = store.claims.get('shardA')!.heartbeatAt.getTime();
    const diedAt = Date.now();
    await jest.advanceTimersByTimeAsync(3_900 - (diedAt - lastBeat));
    expect(waiting.epoch).toBeUndefined(); // not before the claim is stale
    await jest.advanceTimersByTimeAsync(700);
    await taken;
    expect(waiting.epoch).toBe(2);
    // Stale after 4 s, seen within one poll (0.5 s): under 4.6 s after the last heartbeat.
    expect(Date.now() - lastBeat).toBeLessThanOrEqual(4_600);
    expect(store.fences.get('shardA')).toBe(2);
    expect(store.claims.get('shardA')).toMatchObject({ instance: waiting.instance, epoch: 2 });
    expect(() => waiting.fence.assertHeld()).not.toThrow();

    // It renews as an active worker does: held for minutes.
    await jest.advanceTimersByTimeAsync(120_000);
    expect(() => waiting.fence.assertHeld()).not.toThrow();
    expect(store.claims.get('shardA')!.heartbeatAt.getTime()).toBeGreaterThan(Date.now() - 1_500);
    waiting.stop();
  });

  it('never claims a shard nobody holds (no active worker to stand by), and writes nothing', async () => {
    const waiting = standby();
    const controller = new AbortController();
    const taken = waiting.acquire(store, () => undefined, controller.signal);
    taken.catch(() => undefined);
    await jest.advanceTimersByTimeAsync(30_000);
    expect(store.claims.size).toBe(0);
    expect(store.fences.size).toBe(0);
    expect(waiting.epoch).toBeUndefined();
    // An active worker claims it later: the standby stands by it.
    const holder = active();
    await holder.acquire(store, () => undefined);
    await jest.advanceTimersByTimeAsync(30_000);
    expect(store.claims.get('shardA')).toMatchObject({ instance: holder.instance, epoch: 1 });
    controller.abort();
    await expect(taken).rejects.toBeDefined();
    holder.stop();
  });

  it('of two standbys exactly one takes over; the other stands by the new active worker', async () => {
    const holder = active();
    await holder.acquire(store, () => undefined);
    const a = standby();
    const b = standby();
    const controller = new AbortController();
    const takenA = a.acquire(store, () => undefined, controller.signal);
    const takenB = b.acquire(store, () => undefined, controller.signal);
    takenA.catch(() => undefined);
    takenB.catch(() => undefined);
    holder.stop();
    await jest.advanceTimersByTimeAsync(30_000);
    const epochs = [a.epoch, b.epoch];
    expect(epochs.filter((e) => e === 2)).toHaveLength(1);
    expect(epochs.filter((e) => e === undefined)).toHaveLength(1);
    const winner = a.epoch === 2 ? a : b;
    expect(store.claims.get('shardA')).toMatchObject({ instance: winner.instance, epoch: 2 });
    controller.abort();
    a.stop();
    b.stop();
  });

  it("the engine's own claim with the standby's instance renews the taken-over epoch (no second takeover)", async () => {
    const holder = active();
    await holder.acquire(store, () => undefined);
    const waiting = standby(hostClock(0), { instance: 'standby-1' });
    const taken = waiting.acquire(store, () => undefined);
    holder.stop();
    await jest.advanceTimersByTimeAsync(6_000);
    await taken;
    expect(waiting.epoch).toBe(2);
    const engineClaim = new ShardClaim('shardA', hostClock(0), silentLogger, {
      ...TIMING,
      instance: 'standby-1',
    });
    await engineClaim.acquire(store, () => undefined);
    expect(engineClaim.epoch).toBe(2);
    expect(store.claims.get('shardA')).toMatchObject({ instance: 'standby-1', epoch: 2 });
    waiting.stop();
    await jest.advanceTimersByTimeAsync(20_000);
    expect(() => engineClaim.fence.assertHeld()).not.toThrow();
    engineClaim.stop();
  });

  it('one slow renewal costs no lease: renewals go on while it is unacknowledged', async () => {
    const holder = active();
    const lost: ApiError[] = [];
    await holder.acquire(store, (e) => lost.push(e));
    const claim = store.claim.bind(store);
    let slow = 1; // the next renewal takes 2.8 s to be acknowledged (lease: 3.2 s)
    store.claim = async (...args) => {
      if (slow-- > 0) await new Promise((resolve) => setTimeout(resolve, 2_800));
      return claim(...args);
    };
    await jest.advanceTimersByTimeAsync(10_000);
    expect(lost).toEqual([]);
    expect(() => holder.fence.assertHeld()).not.toThrow();
    // A destination that acknowledges nothing for longer than the lease: the holder stops.
    store.claim = () => new Promise(() => undefined);
    await jest.advanceTimersByTimeAsync(3_300);
    expect(lost.map((e) => e.error)).toEqual(['ShardClaimLost']);
    holder.stop();
  });

  it('keeps the invariant renew < stale − margin', () => {
    expect(() => new ShardClaim('shardA', hostClock(0), silentLogger, { renewMs: 5_000 })).toThrow(
      /renewMs/,
    );
    expect(() => new ShardClaim('shardA', hostClock(0), silentLogger)).not.toThrow();
  });
});
