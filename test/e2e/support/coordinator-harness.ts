import { createServer, createConnection } from 'node:net';
import type { MongoClient } from 'mongodb';
import { ensureBuilt, spawnProcess, type ManagedProcess } from '../../helpers/processes';
import { recordOutput } from '../../helpers/leak-ledger';
import { testDb, testNs } from '../../helpers/real-clusters';
import { EMULATOR, WORKER, WorkerApi, sleep, type ApiResult } from './harness';

/**
 * The coordinator's end-to-end pieces: a real `redis-server` on a free loopback port (restartable
 * on the same port), the built coordinator and workers joined through Redis, and a POST that
 * carries an X-Command-Id.
 */

export const COORDINATOR = 'dist/apps/coordinator/src/main.js';

export function buildCoordinatorOnce(): void {
  ensureBuilt([WORKER, EMULATOR, COORDINATOR]);
}

export function freePort(): Promise<number> {
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

export interface RedisServer {
  port: number;
  password: string;
  url: string;
  process: ManagedProcess;
}

/** `redis-server` as BullMQ wants it in production: no eviction; no persistence (a restart is empty). */
export async function startRedis(
  port?: number,
  password = 'Redis-S3cret-pw',
): Promise<RedisServer> {
  const chosen = port ?? (await freePort());
  const server = spawnProcess('redis-server', [
    '--port',
    String(chosen),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--maxmemory-policy',
    'noeviction',
    '--requirepass',
    password,
  ]);
  await waitForPong(chosen, password);
  return {
    port: chosen,
    password,
    url: `redis://:${encodeURIComponent(password)}@127.0.0.1:${chosen}`,
    process: server,
  };
}

async function waitForPong(port: number, password: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host: '127.0.0.1' });
      let data = '';
      socket.setTimeout(1_000, () => (socket.destroy(), resolve(false)));
      socket.on('error', () => resolve(false));
      socket.on('connect', () => socket.write(`AUTH ${password}\r\nPING\r\n`));
      socket.on('data', (chunk) => {
        data += chunk.toString();
        if (data.includes('+PONG')) {
          socket.end();
          resolve(true);
        }
      });
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server did not answer on port ${port}`);
    await sleep(100);
  }
}

export interface StartedApp {
  process: ManagedProcess;
  api: WorkerApi;
}

export async function startCoordinator(
  cluster0: string,
  cluster1: string,
  redisUrl: string,
  options: { id?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<StartedApp> {
  const args = [COORDINATOR, '--cluster0', cluster0, '--cluster1', cluster1, '--redis', redisUrl];
  args.push('--port', '0');
  if (options.id) args.push('--id', options.id);
  const coordinator = spawnProcess('node', args, options.env ?? {});
  const listening = await coordinator.waitForJsonLine((r) => r.msg === 'coordinator listening');
  return { process: coordinator, api: new WorkerApi(listening.url as string) };
}

export async function startCoordinatedWorker(
  cluster0: string,
  cluster1: string,
  redisUrl: string,
  id: string,
  env: NodeJS.ProcessEnv = {},
): Promise<StartedApp> {
  const args = [WORKER, '--cluster0', cluster0, '--cluster1', cluster1, '--port', '0'];
  args.push('--redis', redisUrl, '--id', id);
  const worker = spawnProcess('node', args, env);
  const listening = await worker.waitForJsonLine((r) => r.msg === 'worker listening');
  return { process: worker, api: new WorkerApi(listening.url as string) };
}

/** POST with an X-Command-Id (an idempotent command). */
export async function postCommand(
  api: WorkerApi,
  operation: string,
  body: object,
  commandId?: string,
): Promise<ApiResult> {
  const response = await fetch(`${api.baseUrl}/${operation}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(commandId ? { 'x-command-id': commandId } : {}),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(120_000),
  });
  const text = await response.text();
  recordOutput(`response ${new URL(response.url).pathname}`, text);
  return { status: response.status, body: JSON.parse(text) as ApiResult['body'] };
}

/**
 * POST with an X-Command-Id, resent while the answer is 503 — the API's "retrying is safe"
 * (an election, a command a worker has not taken yet); the id makes every resend apply once.
 * Each 503 is printed, so a run shows what the coordinator was waiting for.
 */
export async function postCommandRetrying503(
  api: WorkerApi,
  operation: string,
  body: object,
  commandId: string,
  attempts = 20,
): Promise<ApiResult> {
  for (let attempt = 1; ; attempt++) {
    const result = await postCommand(api, operation, body, commandId);
    if (result.status !== 503 || attempt >= attempts) return result;
    console.warn(`${operation} ${commandId}: 503 ${JSON.stringify(result.body)}; resending`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Retries a command while the coordinator answers 503 (election, Redis coming back). */
export async function commandEventually(
  api: WorkerApi,
  operation: string,
  commandId: string,
  timeoutMs = 60_000,
  body: object = {},
): Promise<ApiResult> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await postCommand(api, operation, body, commandId).catch(
      (error: unknown): ApiResult => ({
        status: 0,
        body: { success: false, error: String(error) },
      }),
    );
    if (result.status !== 503 && result.status !== 0) return result;
    if (Date.now() > deadline) return result;
    await sleep(250);
  }
}

/** How many times a worker's log shows it received `commandId`. */
export function receivedCount(worker: StartedApp, commandId: string): number {
  return worker.process.stdoutLines.filter(
    (line) => line.includes('"command received"') && line.includes(`"commandId":"${commandId}"`),
  ).length;
}

type AnyDoc = { _id: unknown } & Record<string, unknown>;

/**
 * A small sharded dataset: a hashed and a range sharded collection, and an unsharded one, in the
 * databases `app` and `crm` of the scenario (testDb).
 */
export async function loadShardedSource(
  source: MongoClient,
  perCollection: number,
): Promise<number> {
  const admin = source.db('admin');
  await source.db(testDb('crm')).collection<AnyDoc>('notes').insertOne({ _id: -1, body: 'first' });
  await admin.command({ shardCollection: testNs('app.users'), key: { uid: 'hashed' } });
  await admin.command({ shardCollection: testNs('app.orders'), key: { region: 1, _id: 1 } });
  const regions = ['ap', 'eu', 'us'];
  for (let start = 0; start < perCollection; start += 1_000) {
    const n = Math.min(1_000, perCollection - start);
    const ids = Array.from({ length: n }, (_, k) => start + k);
    await source
      .db(testDb('app'))
      .collection<AnyDoc>('users')
      .insertMany(ids.map((i) => ({ _id: i, uid: `u${i}`, name: `user ${i}`, score: i * 1.5 })));
    await source
      .db(testDb('app'))
      .collection<AnyDoc>('orders')
      .insertMany(ids.map((i) => ({ _id: i, region: regions[i % 3], total: i % 97 })));
    await source
      .db(testDb('crm'))
      .collection<AnyDoc>('notes')
      .insertMany(ids.map((i) => ({ _id: i, body: `note ${i}`, tags: i % 2 ? ['x'] : [] })));
  }
  await admin.command({ split: testNs('app.orders'), middle: { region: 'm', _id: 0 } });
  return perCollection * 3 + 1;
}
