import { faultCode, hasFaultLabel, hasFaultLabelInChain } from './fault-labels';

/**
 * Which failures are transient (worth trying again: failover, shutdown, timeouts, a dropped
 * connection) — by their fault labels (fault-labels.ts): attached by the driver adapters, or
 * read from the failure itself when it never passed one.
 */

/**
 * A failure of ONE operation that running the same operation again may cure: the `transient`
 * label on the error or any of its causes. Used for retries in place (the operation is
 * idempotent); the run-level decision (restart from the persisted state or stop) is
 * `isPermanent` in the runner.
 */
export function isTransientFault(error: unknown): boolean {
  return hasFaultLabelInChain(error, 'transient');
}

/**
 * Whether running a failed operation again may succeed once its in-place retries are spent: a
 * server's refusal with a code repeats unless the code is transient; a named API error (e.g.
 * ShardClaimLost: another process holds the shard now) repeats too; an error without a code (a
 * connection, a closed client) is worth running again.
 */
export function worthRunningAgain(error: unknown): boolean {
  if (hasFaultLabel(error, 'permanent')) return false;
  return !hasFaultLabel(error, 'refused') || isTransientFault(error);
}

/** "<codeName, else the error's name> (code N): <message>", for a failure's text. */
export function describeFault(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const { code: raw, codeName } = error as { code?: unknown; codeName?: unknown };
  const code = faultCode(raw);
  const what = typeof codeName === 'string' ? codeName : error.name;
  return `${what}${code !== undefined ? ` (code ${code})` : ''}: ${error.message}`;
}
