import { ApiError } from '../api-error';
import type { SyncOperation } from '../sync-operations';
import { isJsonObject } from './request-shape';

/**
 * pause / resume / commit / reverse take no fields: the body must be `{}`. A field sent anyway is
 * almost certainly a client mistake (e.g. a start body sent to the wrong endpoint), so it is an
 * error rather than silently ignored.
 */
export function validateEmptyRequest(
  body: unknown,
  operation: Exclude<SyncOperation, 'start'>,
): void {
  if (!isJsonObject(body)) {
    throw new ApiError(
      'InvalidRequest',
      `the ${operation} request body must be a JSON object ({})`,
    );
  }
  const fields = Object.keys(body);
  if (fields.length > 0) {
    const names = fields.map((field) => `"${field}"`).join(', ');
    throw new ApiError(
      'InvalidRequest',
      `${operation} takes no fields; unknown field ${names} (send {})`,
    );
  }
}
