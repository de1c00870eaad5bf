import { ApiError } from './api-error';

/**
 * Options of a state-changing command. `commandId` makes a command idempotent: a command
 * delivered again with the same id (a retried HTTP call, a re-delivered queue message) is
 * answered with success and applied once. HTTP: the `X-Command-Id` header.
 */
export interface CommandOptions {
  commandId?: string;
}

export const COMMAND_ID_HEADER = 'x-command-id';

/** 1–128 characters of letters, digits and `._:-`; anything else is InvalidRequest. */
export function parseCommandId(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^[A-Za-z0-9._:-]{1,128}$/.test(value)) {
    throw new ApiError(
      'InvalidRequest',
      'X-Command-Id must be 1 to 128 characters of letters, digits and "._:-".',
    );
  }
  return value;
}

/** `GET /progress?detail=namespaces`: adds one entry per namespace (`namespaceDetail`). */
export interface ProgressOptions {
  detail?: 'namespaces';
}

export function parseProgressDetail(value: unknown): ProgressOptions {
  if (value === undefined) return {};
  if (value !== 'namespaces') {
    throw new ApiError('InvalidRequest', 'detail must be "namespaces" (or absent).');
  }
  return { detail: 'namespaces' };
}
