import { ApiError } from '@sync/contracts';
import { request as httpRequest } from 'node:http';
import { FakeSyncEngine } from '../test/fake-sync-engine';
import { startTestApi, type TestApi } from '../test/start-test-api';

const start = { source: 'cluster0', destination: 'cluster1' };

describe('HTTP API /api/v1', () => {
  let engine: FakeSyncEngine;
  let api: TestApi;

  beforeEach(async () => {
    engine = new FakeSyncEngine();
    api = await startTestApi(async () => engine);
  });

  afterEach(async () => {
    await api.app.close();
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${api.baseUrl}/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const json = async (response: Response) => ({
    status: response.status,
    body: (await response.json()) as any,
  });

  it('reports IDLE progress with every field null but state and canCommit', async () => {
    expect(await json(await fetch(`${api.baseUrl}/progress`))).toEqual({
      status: 200,
      body: {
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
      },
    });
  });

  it('starts with a valid body, passing the defaults to the engine', async () => {
    expect(await json(await post('start', start))).toEqual({
      status: 200,
      body: { success: true },
    });
    expect(engine.started).toEqual([
      {
        ...start,
        buildIndexes: 'beforeDataCopy',
        enableUserWriteBlocking: false,
        reversible: false,
      },
    ]);
    const progress = await json(await fetch(`${api.baseUrl}/progress`));
    expect(progress.body.progress.state).toBe('RUNNING');
  });

  it('progress?detail=namespaces reaches the engine; another detail is InvalidRequest', async () => {
    const ok = await fetch(`${api.baseUrl}/progress?detail=namespaces`);
    expect(ok.status).toBe(200);
    expect(engine.progressOptions).toEqual({ detail: 'namespaces' });
    const bad = await fetch(`${api.baseUrl}/progress?detail=everything`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ success: false, error: 'InvalidRequest' });
  });

  it('passes X-Command-Id to the engine and refuses a malformed one', async () => {
    await post('start', start, { 'x-command-id': 'cmd-1' });
    await post('pause', {}, { 'X-Command-Id': 'cmd:2' });
    expect(engine.commandIds).toEqual(['cmd-1', 'cmd:2']);
    const bad = await json(await post('resume', {}, { 'x-command-id': 'has space' }));
    expect(bad).toMatchObject({ status: 400, body: { success: false, error: 'InvalidRequest' } });
    expect(engine.state).toBe('PAUSED');
  });

  it('drives pause, resume and commit, and answers wrong states with 409', async () => {
    await post('start', start);
    expect((await json(await post('resume', {}))).body).toEqual({
      success: false,
      error: 'InvalidState',
      errorDescription:
        'resume is not available in state RUNNING; it is only allowed while PAUSED.',
    });
    expect((await post('pause', {})).status).toBe(200);
    expect(
      (await json(await fetch(`${api.baseUrl}/progress`))).body.progress.lagTimeSeconds,
    ).toBeNull();
    expect((await post('resume', {})).status).toBe(200);
    expect(await json(await post('start', start))).toMatchObject({
      status: 409,
      body: { error: 'NotIdle' },
    });
    expect((await post('commit', {})).status).toBe(200);
    expect(engine.state).toBe('COMMITTED');
  });

  it.each([
    [
      'unknown field',
      { ...start, includeNamespace: [] },
      400,
      'InvalidRequest',
      'unknown field "includeNamespace"',
    ],
    [
      'boolean as string',
      { ...start, reversible: 'true' },
      400,
      'InvalidRequest',
      'reversible must be a boolean',
    ],
    ['unknown cluster', { ...start, source: 'cluster7' }, 400, 'UnknownCluster', 'cluster7'],
    [
      'same clusters',
      { ...start, destination: 'cluster0' },
      400,
      'SameSourceAndDestination',
      'cluster0',
    ],
    [
      'never + reversible',
      { ...start, buildIndexes: 'never', reversible: true, enableUserWriteBlocking: true },
      400,
      'NeverWithReversible',
      'never',
    ],
    ['array body', [start], 400, 'InvalidRequest', 'JSON object'],
  ])(
    'rejects a start body with %s and changes nothing',
    async (_name, body, status, error, text) => {
      const response = await json(await post('start', body));
      expect(response.status).toBe(status);
      expect(response.body.success).toBe(false);
      expect(response.body.error).toBe(error);
      expect(response.body.errorDescription).toContain(text);
      expect(engine.started).toEqual([]);
      expect(engine.state).toBe('IDLE');
    },
  );

  it('renders an engine ApiError with its status (a topology rule)', async () => {
    engine.failNext = new ApiError('ShardingRequiredForReplicaSetToSharded');
    expect(await json(await post('start', start))).toMatchObject({
      status: 400,
      body: { success: false, error: 'ShardingRequiredForReplicaSetToSharded' },
    });
  });

  it('answers MalformedJson for broken JSON', async () => {
    expect(await json(await post('start', '{"source": '))).toMatchObject({
      status: 400,
      body: { success: false, error: 'MalformedJson' },
    });
  });

  it('answers UnsupportedMediaType for a non-JSON content type', async () => {
    const response = await post('pause', '{}', { 'content-type': 'text/plain' });
    expect(await json(response)).toMatchObject({
      status: 415,
      body: { error: 'UnsupportedMediaType' },
    });
  });

  it('answers InvalidRequest for a POST without a body', async () => {
    const response = await fetch(`${api.baseUrl}/pause`, { method: 'POST' });
    expect(await json(response)).toMatchObject({ status: 400, body: { error: 'InvalidRequest' } });
  });

  it('answers PayloadTooLarge above 1 MiB, declared or streamed', async () => {
    const big = JSON.stringify({ ...start, padding: 'x'.repeat(1024 * 1024) });
    expect(await json(await post('start', big))).toMatchObject({
      status: 413,
      body: { error: 'PayloadTooLarge' },
    });
    const streamed = await rawChunkedPost(`${api.baseUrl}/start`, big);
    expect(streamed.status).toBe(413);
    expect(JSON.parse(streamed.body)).toMatchObject({ error: 'PayloadTooLarge' });
  });

  it('rejects fields on operations that take none', async () => {
    await post('start', start);
    expect(await json(await post('pause', { now: true }))).toMatchObject({
      status: 400,
      body: { error: 'InvalidRequest', errorDescription: expect.stringContaining('"now"') },
    });
    expect(engine.state).toBe('RUNNING');
  });

  it.each([
    ['GET', 'nope'],
    ['GET', 'start'],
    ['POST', 'progress'],
  ])('answers NotFound for %s %s', async (method, path) => {
    const response = await fetch(`${api.baseUrl}/${path}`, {
      method,
      ...(method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {}),
    });
    expect(await json(response)).toMatchObject({
      status: 404,
      body: { success: false, error: 'NotFound' },
    });
  });

  it('hides unexpected errors behind InternalError and logs them without secrets', async () => {
    engine.failNext = new Error('boom at mongodb://admin:hunter2-password@db:27017 stack secret');
    const response = await json(await post('start', start));
    expect(response).toEqual({
      status: 500,
      body: {
        success: false,
        error: 'InternalError',
        errorDescription: 'An unexpected internal error occurred.',
      },
    });
    const logged = api.logLines.join('');
    expect(logged).toContain('"error":"InternalError"');
    expect(logged).not.toContain('hunter2-password');
  });
});

describe('HTTP API while the engine is not ready', () => {
  it('answers NotReady (503) until the engine exists, then serves it', async () => {
    let resolve!: (engine: FakeSyncEngine) => void;
    const api = await startTestApi(() => new Promise((done) => (resolve = done)));
    try {
      const early = await fetch(`${api.baseUrl}/progress`);
      expect(early.status).toBe(503);
      expect(await early.json()).toMatchObject({ success: false, error: 'NotReady' });
      resolve(new FakeSyncEngine());
      await new Promise((done) => setImmediate(done));
      expect((await fetch(`${api.baseUrl}/progress`)).status).toBe(200);
    } finally {
      await api.app.close();
    }
  });

  it('reports a failed engine creation as fatal and answers its error', async () => {
    const api = await startTestApi(async () => {
      throw new ApiError('JobClusterMismatch');
    });
    try {
      await new Promise((done) => setImmediate(done));
      expect(api.fatal).toHaveLength(1);
      const response = await fetch(`${api.baseUrl}/progress`);
      expect(response.status).toBe(409);
      expect(await response.json()).toMatchObject({ error: 'JobClusterMismatch' });
    } finally {
      await api.app.close();
    }
  });

  it('closes the engine when the app closes', async () => {
    const engine = new FakeSyncEngine();
    const api = await startTestApi(async () => engine);
    await api.app.close();
    expect(engine.closed).toBe(true);
  });
});

/** fetch always sends Content-Length for a string body; this streams it chunked instead. */
function rawChunkedPost(url: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EPIPE' ? undefined : reject(error),
    );
    for (let offset = 0; offset < body.length; offset += 64 * 1024)
      req.write(body.slice(offset, offset + 64 * 1024));
    req.end();
  });
}
