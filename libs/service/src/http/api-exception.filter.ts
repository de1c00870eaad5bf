import {
  Catch,
  HttpException,
  Inject,
  type ArgumentsHost,
  type ExceptionFilter,
} from '@nestjs/common';
import { API_ERRORS, ApiError, redactSecrets, type ApiErrorName } from '@sync/contracts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SERVICE_LOGGER } from '../engine/engine.tokens';
import type { JsonLogger } from '../logging/json-logger';
import { failureBody } from './api-envelope';

/** Nest's own HTTP exceptions (unknown route, ...) mapped onto the API's names. */
const BY_STATUS: Record<number, ApiErrorName> = {
  404: 'NotFound',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
};

/**
 * The single place failures become responses: `{success: false, error, errorDescription}` with
 * the status of API_ERRORS. Anything that is not an ApiError is InternalError with a generic text;
 * its details (already scrubbed by the logger) go to the log, never to the client.
 */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  constructor(@Inject(SERVICE_LOGGER) private readonly logger: JsonLogger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<IncomingMessage>();
    const res = http.getResponse<ServerResponse>();
    const error = this.toApiError(exception, req);
    const status = API_ERRORS[error.error].httpStatus;
    const fields = { method: req.method, path: routePath(req), status, error: error.error };
    // 503s (NotReady, RedisUnavailable, ...) say "retry": expected, and frequent while they last.
    if (status >= 500 && status !== 503)
      this.logger.error('request failed', { ...fields, cause: exception });
    else this.logger.debug('request rejected', fields);
    if (res.headersSent) return void res.end();
    res.statusCode = status;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.end(JSON.stringify(failureBody(error.error, redactSecrets(error.message))));
  }

  private toApiError(exception: unknown, req: IncomingMessage): ApiError {
    if (exception instanceof ApiError) return exception;
    if (exception instanceof HttpException) {
      const name = BY_STATUS[exception.getStatus()];
      if (name === 'NotFound') {
        return new ApiError(
          'NotFound',
          `No endpoint ${req.method} ${routePath(req)}; the API has POST /api/v1/{start,pause,resume,commit,reverse} and GET /api/v1/progress.`,
        );
      }
      if (name) return new ApiError(name);
      if (exception.getStatus() < 500) return new ApiError('InvalidRequest');
    }
    return new ApiError('InternalError');
  }
}

/** The path without its query string, shortened: it is echoed back and logged. */
function routePath(req: IncomingMessage): string {
  return (req.url ?? '').split('?')[0].slice(0, 200);
}
