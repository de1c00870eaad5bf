import { ApiError } from '@sync/contracts';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isDashboardAsset } from '../dashboard/serve-dashboard';
import { failureBody } from './api-envelope';

const BEARER = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i;

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * True when the `Authorization` header carries `Bearer <token>`. Both sides are hashed first, so
 * timingSafeEqual compares equal-length digests and the time taken says nothing about the token
 * (not even its length).
 */
export function bearerTokenMatches(header: string | undefined, expected: Buffer): boolean {
  const match = BEARER.exec(header ?? '');
  const given = digest(match ? match[1] : '');
  // Always compare, even without a header, so both paths take the same time.
  return timingSafeEqual(given, expected) && match !== null;
}

/**
 * With an API token (--apiToken / SYNC_API_TOKEN), every request — /api/v1, /metrics,
 * /api/v1/openapi.json, on loopback too — must send `Authorization: Bearer <token>`, else
 * 401 Unauthorized in the API's envelope. The dashboard's own files are exempt: they are
 * constants with no data in them, and a browser cannot send a header when it opens a page; the
 * page reads the token from its URL fragment (`/#token=...`, never sent to the server) and sends
 * it with every API call. Without a token, everything passes (loopback only, see launch rules).
 */
export function apiTokenGuard(
  token: string | undefined,
): (req: IncomingMessage, res: ServerResponse, next: () => void) => void {
  if (token === undefined) return (_req, _res, next) => next();
  const expected = digest(token);
  return (req, res, next) => {
    if (isDashboardAsset(req)) return next();
    if (bearerTokenMatches(req.headers.authorization, expected)) return next();
    const error = new ApiError('Unauthorized');
    res.statusCode = 401;
    res.setHeader('www-authenticate', 'Bearer realm="cluster-sync"');
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('cache-control', 'no-store');
    res.end(JSON.stringify(failureBody(error.error, error.message)));
  };
}
