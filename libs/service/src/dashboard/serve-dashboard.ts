import type { INestApplication } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DASHBOARD_CSS, DASHBOARD_HTML, DASHBOARD_ICON } from './dashboard-page';
import { DASHBOARD_SCRIPT } from './dashboard-script';

interface Asset {
  type: string;
  body: Buffer;
}

/** Path → asset. Relative links in the page, so a reverse proxy may mount it under a prefix. */
const ASSETS: ReadonlyMap<string, Asset> = new Map([
  ['/', { type: 'text/html; charset=utf-8', body: Buffer.from(DASHBOARD_HTML) }],
  [
    '/dashboard/dashboard.js',
    { type: 'text/javascript; charset=utf-8', body: Buffer.from(DASHBOARD_SCRIPT) },
  ],
  [
    '/dashboard/dashboard.css',
    { type: 'text/css; charset=utf-8', body: Buffer.from(DASHBOARD_CSS) },
  ],
  ['/dashboard/icon.svg', { type: 'image/svg+xml', body: Buffer.from(DASHBOARD_ICON) }],
]);

/** Same-origin only: no inline script or style, no frames, the API is the only thing fetched. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** A GET/HEAD of one of the dashboard's constant files (served without the API token). */
export function isDashboardAsset(req: IncomingMessage): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  return ASSETS.has((req.url ?? '').split('?')[0]!);
}

/**
 * Serves the live dashboard (`GET /`, its script and stylesheet) ahead of Nest's router; any
 * other request goes on to the API untouched. The assets are constants: the page reads every
 * figure from `/api/v1/progress` in the browser, so nothing here can leak a connection string.
 */
export function dashboardHandler(
  req: IncomingMessage,
  res: ServerResponse,
  next: () => void,
): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') return next();
  const path = (req.url ?? '').split('?')[0]!;
  const asset = ASSETS.get(path);
  if (!asset) return next();
  res.statusCode = 200;
  res.setHeader('Content-Type', asset.type);
  res.setHeader('Content-Length', asset.body.length);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  res.end(req.method === 'HEAD' ? undefined : asset.body);
}

/** Mounts the dashboard on the app's HTTP server; call before the app listens. */
export function mountDashboard(app: INestApplication): void {
  app.use(dashboardHandler);
}
