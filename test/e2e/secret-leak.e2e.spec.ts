import { EJSON } from 'bson';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnProcess, stopAllProcesses, type ManagedProcess } from '../helpers/processes';
import {
  APP,
  SYNCER,
  WORKER,
  WorkerApi,
  buildOnce,
  closeClients,
  connect,
  startCluster,
  steps,
  type Cluster,
} from './support/harness';
import { describeOn } from '../helpers/real-clusters';

const TOKEN = 'Leak-Test-Api-T0ken-7f3c9a1e';
const INTERNAL_DB = 'sync_reserved_for_internal_use';

interface Order {
  _id: number | string;
  item?: string;
  qty: number;
}

/**
 * Issue 13 §6 (leaks): a worker against emulated clusters WITH credentials, its connection
 * strings and API token given through the environment (SYNC_CLUSTER0_URI, SYNC_CLUSTER1_URI,
 * SYNC_API_TOKEN), runs start → progress → commit at TRACE verbosity. Then every log line
 * (stdout, stderr, --logPath), every API response body and every document the sync persisted in
 * the destination's internal database is searched for the passwords and the token.
 */
describeOn('replicaSets')('no secret leaks (passwords, API token)', () => {
  let source: Cluster;
  let destination: Cluster;
  let worker: ManagedProcess;
  let api: WorkerApi;
  let unauthenticated: WorkerApi;
  let logPath: string;
  const responses: string[] = [];
  const step = steps(240_000);

  /** The secrets, as written and in the encodings a leak could take. */
  const secrets = [SYNCER.password, APP.password, TOKEN].flatMap((secret) => [
    secret,
    encodeURIComponent(secret),
    Buffer.from(secret).toString('base64'),
  ]);
  const leaksIn = (text: string): string[] => secrets.filter((secret) => text.includes(secret));

  beforeAll(async () => {
    buildOnce();
    [source, destination] = await Promise.all([
      startCluster('leak-source', true),
      startCluster('leak-destination', true),
    ]);
    logPath = join(mkdtempSync(join(tmpdir(), 'sync-leak-')), 'worker.log');
    worker = spawnProcess(
      'node',
      [WORKER, '--port', '0', '--verbosity', 'TRACE', '--logPath', logPath],
      {
        SYNC_CLUSTER0_URI: source.uriFor(SYNCER),
        SYNC_CLUSTER1_URI: destination.uriFor(SYNCER),
        SYNC_API_TOKEN: TOKEN,
      },
    );
    const listening = await worker.waitForJsonLine((record) => record.msg === 'worker listening');
    api = new WorkerApi(listening.url as string, { token: TOKEN, record: responses });
    unauthenticated = new WorkerApi(listening.url as string, { record: responses });
  }, 360_000);

  afterAll(async () => {
    await closeClients();
    await stopAllProcesses();
  });

  step('keeps the secrets out of the process list (they came from the environment)', async () => {
    const cmdline = readFileSync(`/proc/${worker.child.pid}/cmdline`, 'utf8');
    expect(leaksIn(cmdline)).toEqual([]);
  });

  step('answers 401 Unauthorized without the token', async () => {
    const refused = await unauthenticated.progressResult();
    expect([refused.status, refused.body.error]).toEqual([401, 'Unauthorized']);
    const start = await unauthenticated.post('start', {
      source: 'cluster0',
      destination: 'cluster1',
    });
    expect([start.status, start.body.error]).toEqual([401, 'Unauthorized']);
  });

  step('syncs with the token: start, progress, refusals, commit', async () => {
    const app = await connect(source.uriFor(APP));
    await app
      .db('shop')
      .collection<Order>('orders')
      .insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i, item: `item-${i}`, qty: i })));
    await api.waitFor('IDLE after boot', (p) => p.state === 'IDLE', 60_000);
    const bad = await api.post('start', { source: 'cluster0', destination: 'cluster9' });
    expect(bad.body.error).toBe('UnknownCluster');
    await api.expectSuccess('start', { source: 'cluster0', destination: 'cluster1' });
    expect(
      (await api.post('start', { source: 'cluster0', destination: 'cluster1' })).body.error,
    ).toBe('NotIdle');
    await app.db('shop').collection<Order>('orders').insertOne({ _id: 'during-sync', qty: 1 });
    await api.waitFor('canCommit', (p) => p.canCommit, 180_000);
    await api.expectSuccess('commit');
    await api.waitFor('COMMITTED', (p) => p.state === 'COMMITTED', 180_000);
    for (const path of ['/metrics', '/api/v1/openapi.json', '/api/v1/progress?detail=namespaces']) {
      const response = await fetch(new URL(path, api.baseUrl), {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(response.status).toBe(200);
      responses.push(await response.text());
    }
  });

  step('never wrote a password or the token: logs, responses, persisted metadata', async () => {
    const dst = await connect(destination.uriFor(SYNCER));
    const persisted: string[] = [];
    const collections = await dst.db(INTERNAL_DB).listCollections({}, { nameOnly: true }).toArray();
    expect(collections.length).toBeGreaterThan(0);
    for (const { name } of collections) {
      for (const doc of await dst.db(INTERNAL_DB).collection(name).find({}).toArray()) {
        persisted.push(`${name}: ${EJSON.stringify(doc)}`);
      }
    }
    expect(persisted.length).toBeGreaterThan(0);

    await worker.stop(); // SIGTERM: the shutdown lines are written too
    const logLines = [
      ...(worker.stdout() + worker.stderr()).split('\n'),
      ...readFileSync(logPath, 'utf8').split('\n'),
    ].filter((line) => line.trim() !== '');
    expect(logLines.length).toBeGreaterThan(20);
    expect(responses.length).toBeGreaterThan(5);

    const found = [
      ...logLines.map((line) => ['log', line] as const),
      ...responses.map((body) => ['response', body] as const),
      ...persisted.map((doc) => ['metadata', doc] as const),
    ].flatMap(([where, text]) =>
      leaksIn(text).map((secret) => `${where} holds ${secret.slice(0, 4)}…: ${text.slice(0, 300)}`),
    );
    console.log(
      `leak check: ${logLines.length} log lines, ${responses.length} responses, ${persisted.length} metadata documents searched for ${secrets.length} secret forms`,
    );
    expect(found).toEqual([]);
  });
});
