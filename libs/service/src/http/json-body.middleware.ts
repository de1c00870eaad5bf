import { Injectable, type NestMiddleware } from '@nestjs/common';
import { ApiError } from '@sync/contracts';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Large enough for any start body (filters, sharding entries), small enough to be harmless. */
export const MAX_BODY_BYTES = 1024 * 1024;
/**
 * Deepest nesting of objects and arrays a body may have. The deepest valid start body is about
 * 6 levels; the validators recurse, so a body nested thousands deep (well under 1 MiB) would
 * otherwise exhaust the stack and answer 500 (found by the fuzz test).
 */
export const MAX_BODY_DEPTH = 32;

type BodyRequest = IncomingMessage & { body?: unknown };

/**
 * Reads and parses POST bodies itself instead of using express.json(): errors thrown from a Nest
 * middleware reach the API exception filter, so every transport failure gets its named error
 * (PayloadTooLarge, UnsupportedMediaType, MalformedJson) in the usual envelope. The body must be
 * a JSON object; `{}` when an operation takes no fields.
 */
@Injectable()
export class JsonBodyMiddleware implements NestMiddleware {
  async use(req: BodyRequest, _res: ServerResponse, next: () => void): Promise<void> {
    if (req.method !== 'POST') return next();
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > MAX_BODY_BYTES) {
      req.resume();
      throw tooLarge();
    }
    const raw = await readLimited(req);
    if (raw.length === 0) {
      throw new ApiError(
        'InvalidRequest',
        'the request body must be a JSON object; send {} when there are no fields',
      );
    }
    assertJsonContentType(req.headers['content-type']);
    const body = parseJson(raw);
    assertDepth(body);
    req.body = body;
    next();
  }
}

function assertJsonContentType(header: string | undefined): void {
  const [type, ...params] = (header ?? '').split(';').map((part) => part.trim().toLowerCase());
  const json = type === 'application/json' || /^application\/[\w.+-]+\+json$/.test(type);
  const charset = params.find((param) => param.startsWith('charset='))?.slice('charset='.length);
  if (!json || (charset !== undefined && charset.replace(/"/g, '') !== 'utf-8')) {
    throw new ApiError(
      'UnsupportedMediaType',
      `POST bodies must be sent as Content-Type: application/json (UTF-8); got ${header ? JSON.stringify(header.slice(0, 100)) : 'none'}`,
    );
  }
}

function parseJson(raw: Buffer): unknown {
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
    return JSON.parse(text);
  } catch (error) {
    throw new ApiError(
      'MalformedJson',
      `The request body is not valid JSON: ${(error as Error).message}`,
    );
  }
}

/** Iterative, so checking a deep body cannot overflow the stack either. */
function assertDepth(body: unknown): void {
  const pending: Array<[unknown, number]> = [[body, 1]];
  while (pending.length > 0) {
    const [value, depth] = pending.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth > MAX_BODY_DEPTH) {
      throw new ApiError(
        'InvalidRequest',
        `the request body nests objects or arrays deeper than ${MAX_BODY_DEPTH} levels`,
      );
    }
    for (const child of Object.values(value)) pending.push([child, depth + 1]);
  }
}

function readLimited(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        failed = true;
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => failed || resolve(Buffer.concat(chunks)));
    req.on('error', (error) => failed || reject(error));
  });
}

function tooLarge(): ApiError {
  return new ApiError(
    'PayloadTooLarge',
    `The request body exceeds the ${MAX_BODY_BYTES} byte limit.`,
  );
}
