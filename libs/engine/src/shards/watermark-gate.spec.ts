import { Timestamp } from 'bson';
import { systemClock } from '../ports/clock';
import { silentLogger } from '../ports/engine-logger';
import type { DdlAnnouncement } from '../ports/watermark-store';
import { FakeWatermarkStore } from '../testing/in-memory-watermarks';
import { firstChunkMove, type ShardingSnapshot } from './ownership';
import { WatermarkGate } from './watermark-gate';

const ts = (t: number, i = 1) => new Timestamp({ t, i });

function gateFor(
  store: FakeWatermarkStore,
  me: string,
  recorded: DdlAnnouncement[] = [],
): WatermarkGate {
  return new WatermarkGate({
    store,
    me,
    members: ['a', 'b'],
    clock: systemClock,
    logger: silentLogger,
    start: ts(1),
    recorded: () => {
      const last = recorded[recorded.length - 1];
      return last && { clusterTime: last.clusterTime, token: last.token };
    },
    recordForeign: async (ddl) => void recorded.push(ddl),
    pollMs: 5,
    publishMs: 5,
  });
}

/** Resolves true when `promise` settles within `ms`, false otherwise. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setTimeout(r, ms));
  return done;
}

describe('WatermarkGate (per-shard cluster-time order)', () => {
  let stop: AbortController;
  beforeEach(() => (stop = new AbortController()));
  afterEach(() => stop.abort());

  it('holds an event until every other worker has read its shard that far', async () => {
    const store = new FakeWatermarkStore();
    const a = gateFor(store, 'a');
    a.start(stop.signal);
    await store.publish({ worker: 'b', readThrough: ts(5), appliedBefore: ts(5) });
    const admitted = a.admit(ts(10), stop.signal);
    expect(await settlesWithin(admitted, 50)).toBe(false);
    expect(a.allows(ts(10))).toBe(false);
    await store.publish({ worker: 'b', readThrough: ts(10), appliedBefore: ts(6) });
    expect(await settlesWithin(admitted, 100)).toBe(true);
    expect(a.allows(ts(10))).toBe(true);
    expect(a.allows(ts(11))).toBe(false);
  });

  it("records another shard's DDL before any later event, only once it is applied", async () => {
    const store = new FakeWatermarkStore();
    const recorded: DdlAnnouncement[] = [];
    const a = gateFor(store, 'a', recorded);
    a.start(stop.signal);
    await store.announce({
      token: '01',
      worker: 'b',
      clusterTime: ts(7),
      event: { operationType: 'drop' },
    });
    await store.publish({ worker: 'b', readThrough: ts(20), appliedBefore: ts(7) });
    // An event before the DDL goes; one after it waits for the DDL to be applied by b.
    await a.admit(ts(6), stop.signal);
    expect(recorded).toEqual([]);
    const after = a.admit(ts(8), stop.signal);
    expect(await settlesWithin(after, 50)).toBe(false);
    // a waits at 8 with everything before it applied: b sees that much.
    expect(store.marks.get('a')!.appliedBefore).toEqual(ts(8));
    await store.markApplied('01');
    expect(await settlesWithin(after, 100)).toBe(true);
    expect(recorded.map((d) => d.token)).toEqual(['01']);
    // Recorded once: a later event does not record it again.
    await a.admit(ts(9), stop.signal);
    expect(recorded).toHaveLength(1);
  });

  it('applies its own DDL only when every other worker has applied everything before it', async () => {
    const store = new FakeWatermarkStore();
    const b = gateFor(store, 'b');
    b.start(stop.signal);
    await store.publish({ worker: 'a', readThrough: ts(30), appliedBefore: ts(12) });
    const own = b.admit(ts(15), stop.signal, { token: '0f' });
    expect(await settlesWithin(own, 50)).toBe(false);
    await store.publish({ worker: 'a', readThrough: ts(30), appliedBefore: ts(15) });
    expect(await settlesWithin(own, 100)).toBe(true);
  });

  it('two DDLs at one cluster time on two shards: the smaller token first, no deadlock', async () => {
    const store = new FakeWatermarkStore();
    const recordedA: DdlAnnouncement[] = [];
    const a = gateFor(store, 'a', recordedA);
    const b = gateFor(store, 'b');
    a.start(stop.signal);
    b.start(stop.signal);
    await store.announce({ token: '01', worker: 'a', clusterTime: ts(9), event: {} });
    await store.announce({ token: '02', worker: 'b', clusterTime: ts(9), event: {} });
    const ownA = a.admit(ts(9), stop.signal, { token: '01' });
    const ownB = b.admit(ts(9), stop.signal, { token: '02' });
    a.noteRead(ts(9));
    b.noteRead(ts(9));
    expect(await settlesWithin(ownA, 200)).toBe(true);
    expect(await settlesWithin(ownB, 50)).toBe(false); // b waits for a's DDL
    await a.markApplied('01');
    expect(await settlesWithin(ownB, 200)).toBe(true);
  });

  it('a halt by any worker stops every worker with its named error', async () => {
    const store = new FakeWatermarkStore();
    const a = gateFor(store, 'a');
    a.start(stop.signal);
    await store.halt({ worker: 'b', name: 'ChunkMigrationDuringSync', message: 'moved' });
    await new Promise((r) => setTimeout(r, 30));
    expect(() => a.allows(ts(2))).toThrow(
      expect.objectContaining({ name: 'ChunkMigrationDuringSync' }),
    );
  });
});

describe('firstChunkMove', () => {
  const base = (chunks: Array<[number, number, string]>): ShardingSnapshot => ({
    shards: ['a', 'b'],
    databases: [{ name: 'app', primary: 'a' }],
    balancer: { mode: 'off' },
    collections: [
      {
        ns: 'app.c',
        uuid: '00112233445566778899aabbccddeeff',
        key: { k: 1 },
        unique: false,
        chunks: chunks.map(([min, max, shard]) => ({ min: { k: min }, max: { k: max }, shard })),
      },
    ],
  });

  it('ignores splits that keep every range on its shard', () => {
    expect(
      firstChunkMove(
        base([
          [0, 10, 'a'],
          [10, 20, 'b'],
        ]),
        base([
          [0, 5, 'a'],
          [5, 10, 'a'],
          [10, 20, 'b'],
        ]),
      ),
    ).toBeNull();
  });

  it('names the moved range and both shards', () => {
    expect(
      firstChunkMove(
        base([
          [0, 10, 'a'],
          [10, 20, 'b'],
        ]),
        base([
          [0, 5, 'a'],
          [5, 10, 'b'],
          [10, 20, 'b'],
        ]),
      ),
    ).toEqual({
      ns: 'app.c',
      range: { min: { k: 5 }, max: { k: 10 } },
      from: 'a',
      to: 'b',
    });
  });

  it('names a movePrimary', () => {
    const moved = base([[0, 20, 'a']]);
    moved.databases = [{ name: 'app', primary: 'b' }];
    expect(firstChunkMove(base([[0, 20, 'a']]), moved)).toEqual({
      ns: 'app',
      range: null,
      from: 'a',
      to: 'b',
    });
  });
});
