import {
  ensureBuilt,
  eventually,
  spawnProcess,
  stopAllProcesses,
  type ManagedProcess,
} from '../helpers/processes';
import { describeOn } from '../helpers/real-clusters';
import { startCluster } from './support/harness';

const WORKER = 'dist/apps/worker/src/main.js';
const EMULATOR = 'dist/libs/mongo-emulator/src/cli.js';

/**
 * The built worker as a process, against two replica sets (emulated, or the real ones the
 * SYNC_TEST_* variables name), driven only over HTTP.
 */
describeOn('replicaSets')('worker API end to end', () => {
  let cluster0: string;
  let cluster1: string;
  let worker: ManagedProcess;
  let baseUrl: string;

  beforeAll(async () => {
    ensureBuilt([WORKER, EMULATOR]);
    [cluster0, cluster1] = (
      await Promise.all([startCluster('source', false), startCluster('destination', false)])
    ).map((cluster) => cluster.uri);
    worker = spawnProcess('node', [
      WORKER,
      '--cluster0',
      cluster0,
      '--cluster1',
      cluster1,
      '--port',
      '0',
    ]);
    const listening = await worker.waitForJsonLine((record) => record.msg === 'worker listening');
    baseUrl = listening.url as string;
  }, 360_000);

  afterAll(async () => {
    await stopAllProcesses();
  });

  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${baseUrl}/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  const progress = async () => {
    const response = await fetch(`${baseUrl}/progress`);
    return { status: response.status, body: (await response.json()) as any };
  };

  it('exits 2 with one stderr line for a bad option, never printing the connection string', async () => {
    const bad = spawnProcess('node', [
      WORKER,
      '--cluster0',
      'mongodb://alice:Sup3rSecretPw@127.0.0.1:1',
      '--cluster1',
      cluster1,
      '--port',
      'not-a-port',
    ]);
    expect(await bad.waitForExit()).toEqual({ code: 2, signal: null });
    expect(bad.stderr().trim().split('\n')).toEqual([
      expect.stringContaining('--port must be an integer'),
    ]);
    expect(bad.stdout()).toBe('');
    expect(bad.stderr()).not.toContain('Sup3rSecretPw');
    expect(bad.stderr()).not.toContain(cluster1);
  });

  it('logs exactly one INFO line when listening, with the URL', () => {
    const records = worker.stdoutLines.map((line) => JSON.parse(line));
    const listening = records.filter((record) => record.msg === 'worker listening');
    expect(listening).toHaveLength(1);
    expect(listening[0]).toMatchObject({
      level: 'INFO',
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/),
    });
    expect(worker.stdout()).not.toContain(cluster0);
  });

  it('reports IDLE progress: every field null but state and canCommit', async () => {
    const idle = await eventually(async () => {
      const result = await progress();
      return result.status === 200 ? result : undefined; // 503 NotReady while INITIALIZING
    });
    expect(idle.body).toEqual({
      success: true,
      progress: {
        state: 'IDLE',
        canCommit: false,
        canWrite: null,
        info: null,
        lagTimeSeconds: null,
        totalEventsApplied: null,
        collectionCopy: null,
        directionMapping: null,
        syncID: null,
        coordinatorID: null,
      },
    });
  });

  it.each([
    [
      'a misspelt field',
      { source: 'cluster0', destination: 'cluster1', includeNamespace: [] },
      400,
      'InvalidRequest',
    ],
    [
      'a string boolean',
      { source: 'cluster0', destination: 'cluster1', reversible: 'true' },
      400,
      'InvalidRequest',
    ],
    ['an unknown cluster', { source: 'cluster0', destination: 'cluster9' }, 400, 'UnknownCluster'],
    [
      'the same cluster twice',
      { source: 'cluster1', destination: 'cluster1' },
      400,
      'SameSourceAndDestination',
    ],
    [
      'never with reversible',
      {
        source: 'cluster0',
        destination: 'cluster1',
        buildIndexes: 'never',
        reversible: true,
        enableUserWriteBlocking: true,
      },
      400,
      'NeverWithReversible',
    ],
    ['malformed JSON', '{"source":', 400, 'MalformedJson'],
  ])('rejects a start with %s and stays IDLE', async (_name, body, status, error) => {
    const result = await post('start', body);
    expect(result).toMatchObject({ status, body: { success: false, error } });
    expect(typeof result.body.errorDescription).toBe('string');
    expect((await progress()).body.progress.state).toBe('IDLE');
  });

  it('answers NotFound for an unknown route', async () => {
    const response = await fetch(`${baseUrl}/nothing-here`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ success: false, error: 'NotFound' });
  });

  it('starts a sync: success, then RUNNING', async () => {
    expect(await post('start', { source: 'cluster0', destination: 'cluster1' })).toEqual({
      status: 200,
      body: { success: true },
    });
    const running = await progress();
    expect(running.status).toBe(200);
    expect(['RUNNING']).toContain(running.body.progress.state);
    expect(JSON.stringify(running.body)).not.toContain('mongodb://');
    expect(await post('start', { source: 'cluster0', destination: 'cluster1' })).toMatchObject({
      status: 409,
      body: { error: 'NotIdle' },
    });
  });

  it('exits 0 on SIGTERM', async () => {
    worker.child.kill('SIGTERM');
    expect(await worker.waitForExit(20_000)).toEqual({ code: 0, signal: null });
  });
});
