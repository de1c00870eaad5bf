import type { CommandJobResult } from '@sync/contracts';
import { validateThenStart, type Outcomes } from './command-outcomes';

/** Fake workers: each answers validate with its verdict (or never); start is recorded. */
function fakeWorkers(verdicts: Record<string, CommandJobResult | 'pending'>) {
  const rounds: string[] = [];
  const started: string[] = [];
  const send = async (operation: 'validate' | 'start'): Promise<Outcomes> => {
    rounds.push(operation);
    const outcomes: Outcomes = new Map();
    for (const [worker, verdict] of Object.entries(verdicts)) {
      if (operation === 'validate') outcomes.set(worker, verdict);
      else {
        started.push(worker);
        outcomes.set(worker, { ok: true });
      }
    }
    return outcomes;
  };
  return { send, rounds, started };
}

const ok = { ok: true } as const;

describe('validateThenStart (start validated on every worker before any starts)', () => {
  it('sends start only after every worker accepted the validation', async () => {
    const workers = fakeWorkers({ s0: ok, s1: ok });
    await expect(validateThenStart(workers.send)).resolves.toBeNull();
    expect(workers.rounds).toEqual(['validate', 'start']);
    expect(workers.started).toEqual(['s0', 's1']);
  });

  it('one worker refuses: WorkersRejected with each worker’s reason, nobody started', async () => {
    const workers = fakeWorkers({
      s0: ok,
      s1: { ok: false, error: 'InvalidShardId', errorDescription: '--id "s1" is not a shard' },
    });
    const error = await validateThenStart(workers.send);
    expect(error?.error).toBe('WorkersRejected');
    expect(error?.message).toContain('refused by 1 of 2 workers, so none was started');
    expect(error?.message).toContain('s0: ok; s1: InvalidShardId (--id "s1" is not a shard)');
    expect(workers.rounds).toEqual(['validate']);
    expect(workers.started).toEqual([]);
  });

  it('every worker refuses alike: that error by name, nobody started', async () => {
    const refusal = {
      ok: false,
      error: 'ReversibleUnsupportedShardCountMismatch',
      errorDescription: 'same shard count needed',
    } as const;
    const workers = fakeWorkers({ s0: refusal, s1: refusal });
    const error = await validateThenStart(workers.send);
    expect(error?.error).toBe('ReversibleUnsupportedShardCountMismatch');
    expect(error?.message).toBe('same shard count needed');
    expect(workers.started).toEqual([]);
  });

  it('a worker that does not answer the validation: CommandPending, nobody started', async () => {
    const workers = fakeWorkers({ s0: ok, s1: 'pending' });
    const error = await validateThenStart(workers.send);
    expect(error?.error).toBe('CommandPending');
    expect(error?.message).toContain('not validated by s1');
    expect(error?.message).toContain('no worker was started');
    expect(workers.started).toEqual([]);
  });
});
