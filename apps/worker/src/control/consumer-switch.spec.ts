import { Queue, Worker } from 'bullmq';
import { stopAllProcesses } from '../../../../test/helpers/processes';
import { startRedis, type RedisServer } from '../../../../test/e2e/support/coordinator-harness';
import { resumeConsuming, stopConsuming } from './consumer-switch';

/**
 * A worker that lost its shard stops taking its queue's commands and, its shard claimed again,
 * takes them again — through a real BullMQ worker on a real redis-server.
 */
describe('stopConsuming / resumeConsuming (BullMQ over redis-server)', () => {
  let redis: RedisServer;
  const open: Array<{ close(): Promise<unknown> }> = [];

  beforeAll(async () => {
    redis = await startRedis();
  }, 30_000);

  afterAll(async () => {
    for (const item of open.reverse()) await item.close().catch(() => undefined);
    await stopAllProcesses();
  }, 30_000);

  async function consumer(name: string): Promise<{ queue: Queue; worker: Worker; taken: string[] }> {
    const connection = { host: '127.0.0.1', port: redis.port, password: redis.password };
    const queue = new Queue(name, { connection });
    const taken: string[] = [];
    // A short drainDelay: the blocking fetch (and so the paused main loop) ends within 1 s.
    const worker = new Worker(name, async (job) => void taken.push(job.name), {
      connection,
      autorun: false,
      drainDelay: 1,
    });
    open.push(worker, queue);
    void worker.run();
    await worker.waitUntilReady();
    return { queue, worker, taken };
  }

  async function until(predicate: () => boolean, what: string, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('takes jobs again once resumed after its main loop ended', async () => {
    const { queue, worker, taken } = await consumer('switch-ended');
    await queue.add('before', {});
    await until(() => taken.length === 1, 'the first job');

    await stopConsuming(worker);
    await until(() => !worker.isRunning(), 'the paused main loop to end');
    await queue.add('while-stopped', {});
    await new Promise((r) => setTimeout(r, 1_500));
    expect(taken).toEqual(['before']);

    resumeConsuming(worker, () => true);
    await until(() => taken.length === 2, 'the job queued while stopped');
    await queue.add('after', {});
    await until(() => taken.length === 3, 'a job added after resuming');
    expect(taken).toEqual(['before', 'while-stopped', 'after']);
  }, 30_000);

  it('takes jobs again when resumed while its main loop is still running', async () => {
    const { queue, worker, taken } = await consumer('switch-running');
    await stopConsuming(worker);
    expect(worker.isRunning()).toBe(true); // still in its blocking fetch
    resumeConsuming(worker, () => true);
    await queue.add('after', {});
    await until(() => taken.length === 1, 'a job after resuming');
    expect(worker.isPaused()).toBe(false);
  }, 30_000);
});
