import { createHash } from 'node:crypto';
import { FakeSyncEngine } from '../test/fake-sync-engine';
import { startTestApi, type TestApi } from '../test/start-test-api';
import { bearerTokenMatches } from './api-token.guard';

const TOKEN = 'api-T0ken-under-test-0123456789';

describe('bearerTokenMatches', () => {
  const expected = createHash('sha256').update(TOKEN).digest();

  it.each<[string | undefined, boolean]>([
    [`Bearer ${TOKEN}`, true],
    [`bearer ${TOKEN}`, true],
    [`Bearer  ${TOKEN} `, true],
    [undefined, false],
    ['', false],
    [TOKEN, false],
    [`Basic ${TOKEN}`, false],
    [`Bearer ${TOKEN}x`, false],
    [`Bearer ${TOKEN.slice(0, -1)}`, false],
    ['Bearer ', false],
    [`Bearer ${TOKEN} extra`, false],
  ])('%j → %s', (header, ok) => {
    expect(bearerTokenMatches(header, expected)).toBe(ok);
  });
});

describe('HTTP API with an API token', () => {
  let engine: FakeSyncEngine;
  let api: TestApi;
  let root: string;
  const bodies: string[] = [];

  beforeEach(async () => {
    engine = new FakeSyncEngine();
    api = await startTestApi(async () => engine, { apiToken: TOKEN });
    root = api.baseUrl.replace(/\/api\/v1$/, '');
  });

  afterEach(async () => {
    await api.app.close();
  });

  afterAll(() => {
    for (const body of bodies) expect(body).not.toContain(TOKEN);
  });

  const call = async (url: string, init: RequestInit = {}) => {
    const response = await fetch(url, init);
    const text = await response.text();
    bodies.push(text);
    return { response, text };
  };
  const auth = (token = TOKEN) => ({ authorization: `Bearer ${token}` });

  it.each([
    ['GET', '/api/v1/progress'],
    ['GET', '/api/v1/progress?detail=namespaces'],
    ['GET', '/metrics'],
    ['GET', '/api/v1/openapi.json'],
    ['GET', '/api/v1/nothing-here'],
    ['POST', '/api/v1/start'],
    ['POST', '/api/v1/pause'],
    ['POST', '/api/v1/commit'],
    ['HEAD', '/api/v1/progress'],
  ])('answers %s %s with 401 Unauthorized without the token', async (method, path) => {
    for (const headers of [{}, auth('wrong-token-0123456789-abcdef'), { authorization: TOKEN }]) {
      const { response, text } = await call(`${root}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...headers },
        ...(method === 'POST'
          ? { body: JSON.stringify({ source: 'cluster0', destination: 'cluster1' }) }
          : {}),
      });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="cluster-sync"');
      if (method !== 'HEAD') {
        expect(JSON.parse(text)).toMatchObject({ success: false, error: 'Unauthorized' });
      }
    }
    expect(engine.state).toBe('IDLE');
    expect(engine.started).toEqual([]);
    expect(engine.commandIds).toEqual([]);
  });

  it('serves every endpoint with the token', async () => {
    const progress = await call(`${api.baseUrl}/progress`, { headers: auth() });
    expect(progress.response.status).toBe(200);
    const metrics = await call(`${root}/metrics`, { headers: auth() });
    expect(metrics.response.status).toBe(200);
    const openapi = await call(`${api.baseUrl}/openapi.json`, { headers: auth() });
    expect(openapi.response.status).toBe(200);
    const start = await call(`${api.baseUrl}/start`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth() },
      body: JSON.stringify({ source: 'cluster0', destination: 'cluster1' }),
    });
    expect([start.response.status, JSON.parse(start.text)]).toEqual([200, { success: true }]);
    expect(engine.state).toBe('RUNNING');
  });

  it('serves the dashboard files without the token (constants; the page sends it)', async () => {
    for (const path of ['/', '/dashboard/dashboard.js', '/dashboard/dashboard.css']) {
      expect((await call(`${root}${path}`)).response.status).toBe(200);
    }
    expect((await call(`${root}/dashboard/other.js`)).response.status).toBe(401);
  });

  it('never writes the token to the log', async () => {
    await call(`${api.baseUrl}/progress`, { headers: auth() });
    await call(`${api.baseUrl}/progress`, { headers: auth(`${TOKEN}-wrong`) });
    await call(`${api.baseUrl}/progress?detail=${TOKEN}`, { headers: auth() });
    for (const line of api.logLines) expect(line).not.toContain(TOKEN);
  });
});

describe('HTTP API without a token', () => {
  it('stays open (loopback only, enforced at launch)', async () => {
    const api = await startTestApi(async () => new FakeSyncEngine());
    try {
      const response = await fetch(`${api.baseUrl}/progress`);
      expect(response.status).toBe(200);
    } finally {
      await api.app.close();
    }
  });
});
