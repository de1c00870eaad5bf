import { ApiError } from '@sync/contracts';
/**
 * Which failures are transient (worth trying again: failover, shutdown, timeouts, a dropped
 * connection) — recognised without importing the driver, from server codes, the driver's error
 * class names and the labels servers attach to errors worth retrying.
 */

/**
 * Server error codes worth retrying: MongoDB's retryable-error list (HostUnreachable 6,
 * HostNotFound 7, NetworkTimeout 89, ShutdownInProgress 91, PrimarySteppedDown 189,
 * ExceededTimeLimit 262, SocketException 9001, NotWritablePrimary 10107, InterruptedAtShutdown
 * 11600, InterruptedDueToReplStateChange 11602, NotPrimaryNoSecondaryOk 13435,
 * NotPrimaryOrSecondary 13436, ...) plus cursor loss on failover (43), MaxTimeMSExpired (50),
 * WriteConcernFailed (64) and the read-concern/timeouts a failover causes.
 */
export const TRANSIENT_CODES: ReadonlySet<number> = new Set([
  6, 7, 43, 50, 63, 64, 89, 91, 134, 150, 189, 237, 251, 262, 9001, 10107, 11600, 11602, 13435,
  13436,
]);

/** Driver error classes and server labels that mean "try again". */
export function looksTransient(error: unknown): boolean {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const { name, errorLabels } = e as { name?: string; errorLabels?: unknown };
    if (
      typeof name === 'string' &&
      /Network|ServerSelection|PoolCleared|Timeout|NotPrimary|Interrupted/.test(name)
    ) {
      return true;
    }
    const labels =
      errorLabels instanceof Set ? [...errorLabels] : Array.isArray(errorLabels) ? errorLabels : [];
    if (
      labels.some((l) =>
        /Retryable|ResumableChangeStreamError|TransientTransactionError/.test(String(l)),
      )
    ) {
      return true;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * A failure of ONE operation that running the same operation again may cure: a transient code
 * or label anywhere on the error or its causes. Used for retries in place (the operation is
 * idempotent); the run-level decision (restart from the persisted state or stop) is
 * `isPermanent` in the runner.
 */
export function isTransientFault(error: unknown): boolean {
  if (looksTransient(error)) return true;
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'number' && TRANSIENT_CODES.has(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Whether running a failed operation again may succeed once its in-place retries are spent: a
 * server's refusal with a code repeats unless the code is transient; a named API error (e.g.
 * ShardClaimLost: another process holds the shard now) repeats too; an error without a code (a
 * connection, a closed client) is worth running again.
 */
export function worthRunningAgain(error: unknown): boolean {
  if (error instanceof ApiError) return false;
  return (
    typeof (error as { code?: unknown } | undefined)?.code !== 'number' || isTransientFault(error)
  );
}

/** "<codeName, else the error's name> (code N): <message>", for a failure's text. */
export function describeFault(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const { code, codeName } = error as { code?: unknown; codeName?: unknown };
  const what = typeof codeName === 'string' ? codeName : error.name;
  return `${what}${typeof code === 'number' ? ` (code ${code})` : ''}: ${error.message}`;
}
