import { ApiError, type CommandJobResult, type SyncOperation } from '@sync/contracts';

/** What each target worker did with a command: its verdict, or still pending at the deadline. */
export type Outcomes = Map<string, CommandJobResult | 'pending'>;

/**
 * One answer for the whole command, or null for success. All took it → success. Some still
 * pending → CommandPending naming them (their jobs stay queued). All refused with the same
 * error → that error (the same name a single worker would give). Otherwise WorkersRejected
 * with every worker's outcome.
 */
export function summarizeOutcomes(operation: SyncOperation, outcomes: Outcomes): ApiError | null {
  const entries = [...outcomes.entries()];
  const describe = ([worker, outcome]: [string, CommandJobResult | 'pending']): string =>
    outcome === 'pending'
      ? `${worker}: not taken yet`
      : outcome.ok
        ? `${worker}: ok`
        : `${worker}: ${outcome.error} (${outcome.errorDescription})`;
  const pending = entries.filter(([, outcome]) => outcome === 'pending').map(([w]) => w);
  if (pending.length > 0) {
    const others = entries.filter(([, o]) => o !== 'pending');
    return new ApiError(
      'CommandPending',
      `${operation} was not taken by ${pending.join(', ')} before the deadline; it stays queued for them (progress shows them missing if they are down). Retry with the same X-Command-Id to wait again${others.length > 0 ? `. Others: ${others.map(describe).join('; ')}` : ''}.`,
    );
  }
  const refusals = entries.flatMap(([, o]) => (o !== 'pending' && !o.ok ? [o] : []));
  if (refusals.length === 0) return null;
  if (refusals.length === entries.length && refusals.every((r) => r.error === refusals[0].error)) {
    const distinct = [...new Set(refusals.map((r) => r.errorDescription))];
    return new ApiError(
      refusals[0].error,
      distinct.length === 1 ? distinct[0] : entries.map(describe).join('; '),
    );
  }
  return new ApiError(
    'WorkersRejected',
    `${operation}: ${entries.map(describe).join('; ')}${operation === 'start' ? '. Workers that accepted hold a started sync; pause it or fix the cause on the others' : ''}.`,
  );
}
