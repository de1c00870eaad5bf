import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { ApiError, IDLE_PROGRESS } from '@sync/contracts';
import type { SyncEngine } from '@sync/engine';
import { JsonLogger, readLiveness, type RoleRegistration } from '@sync/service';
import Redis from 'ioredis';
import { WorkerAgent } from './worker-agent';

const hasRedis = spawnSync('redis-server', ['--version']).status === 0;
const describeWithRedis = hasRedis ? describe : describe.skip;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const engine = (): SyncEngine => ({
  state: 'RUNNING',
  progress: () => ({ ...IDLE_PROGRESS, state: 'RUNNING' }),
  start: async () => undefined,
  pause: async () => undefined,
  resume: async () => undefined,
  commit: async () => undefined,
  reverse: async () => undefined,
  close: async () => undefined,
});

describeWithRedis('WorkerAgent of a standby (--standby) in the registry', () => {
  let server: ChildProcess;
  let url: string;
  let redis: Redis;
  const agents: WorkerAgent[] = [];

  beforeAll(async () => {
    const port = await freePort();
    server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '']);
    url = `redis://127.0.0.1:${port}`;
    redis = new Redis(url, { maxRetriesPerRequest: 1 });
    for (let i = 0; ; i++) {
      try {
        await redis.ping();
        break;
      } catch (error) {
        if (i > 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  });
  afterAll(async () => {
    for (const agent of agents) await agent.close();
    redis.disconnect();
    server.kill('SIGKILL');
  });

  const agentOf = (standby: boolean, instance: string, shard = 'shardA') => {
    const agent = new WorkerAgent({
      redisUrl: url,
      workerId: shard,
      shardId: shard,
      logger: new JsonLogger('ERROR', []),
      instance,
      standby,
    });
    agents.push(agent);
    return agent;
  };
  const ready = async (agent: WorkerAgent, id: string) => {
    for (let i = 0; i < 100; i++) {
      await agent.heartbeat();
      const live = await readLiveness(redis, 60_000);
      if (live.registrations.some((r) => r.id === id)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  it('registers beside the active worker, never over it, and under the shard id once it took over', async () => {
    const active = agentOf(false, 'i-active');
    active.attach(engine());
    await ready(active, 'shardA');
    const standby = agentOf(true, 'i-standby');
    await ready(standby, 'shardA~standby~i-standby');
    await standby.heartbeat();
    await active.heartbeat();

    let live = await readLiveness(redis, 60_000);
    const byId = new Map(live.registrations.map((r) => [r.id, r as RoleRegistration]));
    expect(byId.get('shardA')).toMatchObject({ role: 'active', instance: 'i-active' });
    expect(byId.get('shardA~standby~i-standby')).toMatchObject({
      role: 'standby',
      shardId: 'shardA',
      instance: 'i-standby',
    });
    const report = JSON.parse((await redis.get('cluster-sync:report:shardA~standby~i-standby'))!);
    expect(report).toMatchObject({ progress: null, error: { error: 'WorkerIsStandby' } });
    expect(standby.role).toBe('standby');

    // The active worker died; the standby took the shard over.
    await active.close();
    await standby.becomeActive();
    standby.attach(engine());
    await standby.heartbeat();
    live = await readLiveness(redis, 60_000);
    expect(live.registrations.map((r) => r.id)).toEqual(['shardA']);
    expect(live.registrations[0]).toMatchObject({ role: 'active', instance: 'i-standby' });
    expect(await redis.get('cluster-sync:report:shardA~standby~i-standby')).toBeNull();
  });

  it("a process that is not the shard's live worker (its claim lost) stops beating under the shard id", async () => {
    const zombie = agentOf(false, 'i-zombie', 'shardB');
    zombie.attach({
      ...engine(),
      progress: () => {
        throw new ApiError('ShardClaimLost', 'taken over');
      },
    });
    for (let i = 0; i < 20; i++) {
      await zombie.heartbeat();
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(zombie.consumes).toBe(false);
    const live = await readLiveness(redis, 60_000);
    expect(live.registrations.map((r) => r.id)).not.toContain('shardB');
  });

  it('a worker whose lapsed lease was claimed again takes commands and beats under its id again', async () => {
    const agent = agentOf(false, 'i-lapsed', 'shardC');
    let lapsed = true;
    const consumer = { stopped: 0, resumed: 0 };
    agent.onStopConsuming(
      () => void (consumer.stopped += 1),
      () => void (consumer.resumed += 1),
    );
    agent.attach({
      ...engine(),
      progress: () => {
        if (lapsed) throw new ApiError('ShardClaimLost', 'its lease ran out');
        return { ...IDLE_PROGRESS, state: 'RUNNING' };
      },
    });
    await agent.heartbeat();
    expect(agent.consumes).toBe(false);
    expect(consumer).toEqual({ stopped: 1, resumed: 0 });
    expect((await readLiveness(redis, 60_000)).registrations.map((r) => r.id)).not.toContain(
      'shardC',
    );

    lapsed = false; // the engine holds its shard again
    await ready(agent, 'shardC');
    expect(agent.consumes).toBe(true);
    expect(consumer).toEqual({ stopped: 1, resumed: 1 });
  });
});
