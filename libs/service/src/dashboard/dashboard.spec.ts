import { FakeSyncEngine } from '../test/fake-sync-engine';
import { startTestApi, type TestApi } from '../test/start-test-api';
import { DASHBOARD_CSS, DASHBOARD_HTML } from './dashboard-page';
import { DASHBOARD_SCRIPT } from './dashboard-script';

describe('dashboard assets', () => {
  let api: TestApi;
  let root: string;

  beforeAll(async () => {
    api = await startTestApi(async () => new FakeSyncEngine());
    root = api.baseUrl.replace(/\/api\/v1$/, '');
  });

  afterAll(async () => {
    await api.app.close();
  });

  it('serves the page at / with a strict Content-Security-Policy', async () => {
    const response = await fetch(`${root}/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.text()).toBe(DASHBOARD_HTML);
  });

  it('serves the script and the stylesheet the page links, relative to it', async () => {
    const script = await fetch(`${root}/dashboard/dashboard.js`);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await script.text()).toBe(DASHBOARD_SCRIPT);
    const css = await fetch(`${root}/dashboard/dashboard.css?v=1`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(await css.text()).toBe(DASHBOARD_CSS);
    expect(DASHBOARD_HTML).toContain('src="dashboard/dashboard.js"');
    expect(DASHBOARD_HTML).toContain('href="dashboard/dashboard.css"');
  });

  it('is valid JavaScript without inline code, and talks only to the relative API', () => {
    expect(() => new Function(DASHBOARD_SCRIPT)).not.toThrow();
    expect(DASHBOARD_HTML).not.toMatch(/<script>|<style>|\son[a-z]+=/);
    expect(DASHBOARD_SCRIPT).toContain("var API = 'api/v1/'");
    expect(DASHBOARD_SCRIPT).not.toMatch(/innerHTML|eval\(/);
  });

  it('leaves the API and other paths to Nest', async () => {
    const progress = await fetch(`${api.baseUrl}/progress`);
    expect(progress.status).toBe(200);
    expect(((await progress.json()) as { success: boolean }).success).toBe(true);
    const post = await fetch(`${root}/`, { method: 'POST' });
    expect(post.status).toBe(404);
    expect(post.headers.get('content-security-policy')).toBeNull();
    const other = await fetch(`${root}/dashboard/other.js`);
    expect(other.status).toBe(404);
  });
});
