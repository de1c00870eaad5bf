import { hasFaultLabel, labelFault } from '../faults/fault-labels';

/**
 * Errors of change application with stable names. None of them is retried by the applier:
 * they stop it so the state machine can surface them (progress + log) instead of skipping.
 */
export class ApplyError extends Error {
  constructor(message: string, isRetryable: boolean, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    if (!isRetryable) labelFault(this, ['permanent']);
  }

  /** True when running the applier again (after a fix or a pause/resume) may succeed. */
  get isRetryable(): boolean {
    return !hasFaultLabel(this, 'permanent');
  }
}

/**
 * The source no longer holds the start point (oplog rolled over past T0 or the resume token):
 * server code 286 ChangeStreamHistoryLost (or 280 when the token's event is gone). Never
 * skipped: continuing would silently lose writes, so the sync must restart from scratch.
 */
export class HistoryLostError extends ApplyError {
  constructor(
    message: string,
    readonly code: number,
    options?: { cause?: unknown },
  ) {
    super(message, false, options);
  }
}

/** A cluster-wide stream never invalidates; if one does, our position is no longer valid. */
export class ChangeStreamInvalidatedError extends ApplyError {
  constructor(message = 'the change stream was invalidated') {
    super(message, false);
  }
}

/** A DDL the destination cannot follow (resharding, refining a shard key...). */
export class UnsupportedEventError extends ApplyError {
  constructor(
    readonly operationType: string,
    message: string,
  ) {
    super(message, false);
  }
}

/** A destination write that failed for a reason other than the idempotency cases we absorb. */
export class DestinationWriteError extends ApplyError {
  constructor(message: string, isRetryable: boolean, options?: { cause?: unknown }) {
    super(message, isRetryable, options);
  }
}

/**
 * The resume point could not be saved on the destination (its sync metadata refused the write:
 * authorization lost, the metadata database made read-only...). Retryable when the cause was
 * transient; the events themselves are applied, only the position is not recorded.
 */
export class CheckpointSaveError extends ApplyError {
  constructor(message: string, isRetryable: boolean, options?: { cause?: unknown }) {
    super(message, isRetryable, options);
  }
}
