import { systemClock, type Clock } from '../ports/clock';
import { isTransientFault } from './transient';

/**
 * How one idempotent operation (a bulk of change events, a lookup, a checkpoint, a batch of
 * copied documents...) is tried again where it failed, before the failure reaches the run — which
 * would restart the whole pass from the persisted state, far more expensive under a steady
 * trickle of faults.
 */
export interface InPlaceRetryOptions {
  /** Further tries after the first (default 5). 0 turns retries in place off. */
  attempts?: number;
  /** First backoff (default 100 ms), doubling up to `maxMs` (default 2000 ms), with jitter. */
  baseMs?: number;
  maxMs?: number;
  random?: () => number;
  clock?: Clock;
  /** Told of each retry (progress counters, a debug line). */
  onRetry?: (event: InPlaceRetry) => void;
  /** Which failures are worth another try (default: isTransientFault). */
  retryable?: (error: unknown) => boolean;
}

export interface InPlaceRetry {
  what: string;
  attempt: number;
  delayMs: number;
  error: unknown;
}

/** Counts retries in place for progress (`retriedOperations`) and metrics. */
export class RetryCounter {
  total = 0;
  last: { what: string; error: string; at: number } | null = null;

  record(event: InPlaceRetry, now = Date.now()): void {
    this.total += 1;
    const error = event.error instanceof Error ? event.error : new Error(String(event.error));
    this.last = { what: event.what, error: `${error.name}: ${error.message}`, at: now };
  }
}

/**
 * Runs `op`; on a transient failure waits (exponential backoff, jitter drawn from [½, 1] × the
 * ceiling so parallel lanes do not retry in lockstep) and runs it again, up to `attempts` times.
 * A permanent failure, the last transient one, or an aborted `signal` is thrown as it is. `op`
 * must be idempotent: it may have taken effect before its reply was lost.
 */
export async function retryInPlace<T>(
  what: string,
  op: () => Promise<T>,
  options: InPlaceRetryOptions = {},
  signal?: AbortSignal,
): Promise<T> {
  const attempts = options.attempts ?? 5;
  const clock = options.clock ?? systemClock;
  for (let attempt = 1; ; attempt++) {
    try {
      return await op();
    } catch (error) {
      const retryable = options.retryable ?? isTransientFault;
      if (attempt > attempts || signal?.aborted || !retryable(error)) throw error;
      const ceiling = Math.min(options.maxMs ?? 2000, (options.baseMs ?? 100) * 2 ** (attempt - 1));
      const delayMs = Math.round(ceiling * (0.5 + 0.5 * (options.random ?? Math.random)()));
      options.onRetry?.({ what, attempt, delayMs, error });
      await clock.sleep(delayMs, signal);
      if (signal?.aborted) throw error;
    }
  }
}
