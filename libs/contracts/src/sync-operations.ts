import { ApiError } from './api-error';
import type { SyncState } from './sync-state';

/** The state-changing operations of the API. */
export type SyncOperation = 'start' | 'pause' | 'resume' | 'commit' | 'reverse';

/** Where each operation is allowed; the single source for wrong-state error texts. */
export const OPERATION_ALLOWED_STATES: Record<SyncOperation, readonly SyncState[]> = {
  start: ['IDLE'],
  pause: ['RUNNING'],
  resume: ['PAUSED'],
  commit: ['RUNNING'],
  reverse: ['COMMITTED'],
};

/**
 * The error for `operation` attempted in `state`, so every implementation (engine, coordinator)
 * answers with the same name and text: NotReady while INITIALIZING (retry is safe), NotIdle for
 * start (the seed's own rule), InvalidState naming the operation and state otherwise.
 */
export function wrongStateError(operation: SyncOperation, state: SyncState): ApiError {
  if (state === 'INITIALIZING') {
    return new ApiError(
      'NotReady',
      `${operation} is not available yet: the instance is INITIALIZING; retry shortly.`,
    );
  }
  const allowed = OPERATION_ALLOWED_STATES[operation].join(' or ');
  if (operation === 'start') {
    return new ApiError('NotIdle', `start is only allowed while IDLE; the sync is ${state}.`);
  }
  return new ApiError(
    'InvalidState',
    `${operation} is not available in state ${state}; it is only allowed while ${allowed}.`,
  );
}

/** Throws the wrong-state error unless `operation` is allowed in `state`. */
export function assertOperationAllowed(operation: SyncOperation, state: SyncState): void {
  if (!OPERATION_ALLOWED_STATES[operation].includes(state)) throw wrongStateError(operation, state);
}
