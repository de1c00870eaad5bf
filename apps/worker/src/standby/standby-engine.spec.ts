import { ApiError, IDLE_PROGRESS, type SyncState } from '@sync/contracts';
import { silentLogger, type SyncEngine } from '@sync/engine';
import { ShardClaim } from '@sync/engine/shards/shard-claim';
import { FakeCoordinationStore } from '@sync/engine/testing/in-memory-coordination';
import { StandbyEngine } from './standby-engine';

const CLAIM = { renewMs: 100, staleMs: 500 };

function fakeEngine(state: SyncState = 'RUNNING'): SyncEngine & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    state,
    progress: () => ({ ...IDLE_PROGRESS, state }),
    start: async () => void calls.push('start'),
    pause: async () => void calls.push('pause'),
    resume: async () => void calls.push('resume'),
    commit: async () => void calls.push('commit'),
    reverse: async () => void calls.push('reverse'),
    close: async () => void calls.push('close'),
  };
}

const until = async (what: () => boolean, timeoutMs = 5_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!what()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

describe('StandbyEngine (a worker started with --standby)', () => {
  let store: FakeCoordinationStore;
  let active: ShardClaim;
  let standby: StandbyEngine | null = null;

  beforeEach(async () => {
    store = new FakeCoordinationStore();
    active = new ShardClaim('shardA', { now: Date.now, sleep: sleep }, silentLogger, CLAIM);
    await active.acquire(store, () => undefined);
  });
  afterEach(async () => {
    active.stop();
    await standby?.close();
    standby = null;
  });

  const standbyOf = (engine: SyncEngine, onTakeover?: () => void) =>
    new StandbyEngine({
      shardId: 'shardA',
      instance: 'standby-1',
      clusters: [{ name: 'cluster1', store, jobState: async () => 'RUNNING' }],
      logger: silentLogger,
      claim: CLAIM,
      activate: async () => engine,
      ...(onTakeover ? { onTakeover } : {}),
    });

  it('says it is standby, refuses commands by name, and never takes over a live active worker', async () => {
    const engine = fakeEngine();
    standby = standbyOf(engine);
    await until(() => standby!.progress().state === 'RUNNING');
    expect(standby.progress()).toMatchObject({
      role: 'standby',
      state: 'RUNNING',
      standby: { instance: 'standby-1', activeInstance: active.instance, activeEpoch: 1 },
    });
    await expect(standby.pause()).rejects.toMatchObject({ error: 'WorkerIsStandby' });
    await expect(standby.commit()).rejects.toBeInstanceOf(ApiError);
    expect(() => standby!.snapshot()).toThrow(/standby/);
    await sleep(1_500); // three stale limits: the active worker renews all along
    expect(standby.role).toBe('standby');
    expect(store.claims.get('shardA')).toMatchObject({ instance: active.instance, epoch: 1 });
    expect(engine.calls).toEqual([]);
  });

  it("takes the shard over once the active worker's claim is stale, then is the engine", async () => {
    const engine = fakeEngine();
    let tookOver = 0;
    standby = standbyOf(engine, () => (tookOver = Date.now()));
    await sleep(300);
    active.stop();
    const stoppedAt = Date.now();
    await standby.activated;
    expect(tookOver - stoppedAt).toBeLessThan(CLAIM.staleMs + 400);
    expect(store.claims.get('shardA')).toMatchObject({ instance: 'standby-1', epoch: 2 });
    expect(store.fences.get('shardA')).toBe(2);
    expect(standby.role).toBe('active');
    expect(standby.progress()).toMatchObject({ role: 'active', state: 'RUNNING' });
    await standby.pause();
    expect(engine.calls).toEqual(['pause']);
  });
});

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}
