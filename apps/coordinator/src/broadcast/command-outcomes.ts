import {
  ApiError,
  type CommandJobResult,
  type CommandOperation,
  type SyncOperation,
} from '@sync/contracts';

/** What each target worker did with a command: its verdict, or still pending at the deadline. */
export type Outcomes = Map<string, CommandJobResult | 'pending'>;

/**
 * One answer for the whole command, or null for success. All took it → success. Some still
 * pending → CommandPending naming them (their jobs stay queued). All refused with the same
 * error → that error (the same name a single worker would give). Otherwise WorkersRejected
 * with every worker's outcome. `validation`: the outcomes are the dry run that precedes a start
 * (nothing was started anywhere when it fails).
 */
export function summarizeOutcomes(
  operation: SyncOperation,
  outcomes: Outcomes,
  validation = false,
): ApiError | null {
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
    if (validation) {
      return new ApiError(
        'CommandPending',
        `${operation} was not validated by ${pending.join(', ')} before the deadline, so no worker was started (the validation stays queued for them; progress shows them missing if they are down). Retry with the same X-Command-Id to wait again${others.length > 0 ? `. Others: ${others.map(describe).join('; ')}` : ''}.`,
      );
    }
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
  if (validation) {
    return new ApiError(
      'WorkersRejected',
      `${operation} was refused by ${refusals.length} of ${entries.length} workers, so none was started: ${entries.map(describe).join('; ')}.`,
    );
  }
  return new ApiError(
    'WorkersRejected',
    `${operation}: ${entries.map(describe).join('; ')}${operation === 'start' ? '. Workers that accepted hold a started sync; pause it or fix the cause on the others' : ''}.`,
  );
}

/**
 * `start` in two rounds: every target worker first validates the request (the engine's start
 * checks, nothing written); only when all accepted is `start` sent — so a start some workers
 * would refuse starts none. `send` broadcasts one round and waits for its outcomes.
 */
export async function validateThenStart(
  send: (operation: Extract<CommandOperation, 'validate' | 'start'>) => Promise<Outcomes>,
): Promise<ApiError | null> {
  const refused = summarizeOutcomes('start', await send('validate'), true);
  if (refused) return refused;
  return summarizeOutcomes('start', await send('start'));
}

/**
 * `commit` to every worker of a per-shard sync. A worker whose own lag was above the commit
 * limit refuses with CommitNotReady while the others accept — leaving them committing (the
 * source write-blocked) and it RUNNING. Once any worker has accepted, a refuser joins the
 * commit under way (its drain covers its lag), so commit is sent to the refusers again, a few
 * times a second apart (each round under its own derived command id, so a client's retry with
 * the same X-Command-Id replays the same rounds).
 */
export async function commitAcrossWorkers(
  send: (targets: readonly string[] | null, round: number) => Promise<Outcomes>,
  sleep: (ms: number) => Promise<void>,
  rounds = 5,
): Promise<ApiError | null> {
  const outcomes = await send(null, 0);
  for (let round = 1; round <= rounds; round++) {
    const entries = [...outcomes.entries()];
    const accepted = entries.some(([, o]) => o !== 'pending' && o.ok);
    const refusers = entries
      .filter(([, o]) => o !== 'pending' && !o.ok && o.error === 'CommitNotReady')
      .map(([worker]) => worker);
    if (!accepted || refusers.length === 0) break;
    await sleep(1000);
    for (const [worker, outcome] of await send(refusers, round)) outcomes.set(worker, outcome);
  }
  return summarizeOutcomes('commit', outcomes);
}
