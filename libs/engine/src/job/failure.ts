import { HistoryLostError } from '../apply/errors';
import type { FailureRecord, JobRecord } from '../ports/job-store';

export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Stable name shown in progress.error: the API's name for history loss, else the class. */
export function errorNameOf(error: Error): string {
  if (error instanceof HistoryLostError || error.name === 'HistoryLostError') return 'HistoryLost';
  return error.name;
}

/** What is persisted of a failure: its name, text (redacted) and where it happened. */
export function failureRecord(error: Error, text: string, at: Date): FailureRecord {
  const located = error as Error & { namespace?: string; eventTime?: JobRecord['t0'] };
  return {
    error: errorNameOf(error),
    message: text,
    ...(located.namespace ? { namespace: located.namespace } : {}),
    ...(located.eventTime ? { eventTime: located.eventTime } : {}),
    at,
  };
}
