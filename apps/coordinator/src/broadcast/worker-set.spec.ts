import { ApiError, type CommandJobResult, type WorkerRegistration } from '@sync/contracts';
import { summarizeOutcomes, type Outcomes } from './command-outcomes';
import { targetWorkers } from './worker-set';

const reg = (id: string, shardId: string | null = id): WorkerRegistration => ({
  id,
  shardId,
  queue: `sync.commands.${id}`,
  url: null,
  registeredAt: 0,
});

function errorOf(run: () => unknown): ApiError {
  try {
    run();
  } catch (error) {
    return error as ApiError;
  }
  throw new Error('expected an error');
}

describe('targetWorkers', () => {
  it('needs one worker per source shard', () => {
    expect(targetWorkers([reg('s1'), reg('s0')], ['s0', 's1'])).toEqual(['s0', 's1']);
    const missing = errorOf(() => targetWorkers([reg('s0')], ['s0', 's1']));
    expect(missing.error).toBe('WorkersMissing');
    expect(missing.message).toContain('no worker for source shard(s) s1');
    const extra = errorOf(() => targetWorkers([reg('s0'), reg('s1'), reg('s9')], ['s0', 's1']));
    expect(extra.message).toContain('s9 name no source shard');
  });

  it('refuses when nobody registered, and per-shard workers for a replica set', () => {
    expect(errorOf(() => targetWorkers([], ['s0'])).error).toBe('NoWorkersRegistered');
    expect(errorOf(() => targetWorkers([reg('s0')], null)).error).toBe('WorkersMissing');
  });

  it('lets one worker without --id sync any source, alone', () => {
    expect(targetWorkers([reg('worker', null)], null)).toEqual(['worker']);
    expect(targetWorkers([reg('worker', null)], ['s0', 's1'])).toEqual(['worker']);
    expect(errorOf(() => targetWorkers([reg('worker', null), reg('s0')], ['s0'])).error).toBe(
      'WorkersMissing',
    );
  });

  it('targets every registered worker when the source is not known', () => {
    expect(targetWorkers([reg('a'), reg('b')], undefined)).toEqual(['a', 'b']);
  });
});

describe('summarizeOutcomes', () => {
  const outcomes = (entries: Array<[string, CommandJobResult | 'pending']>): Outcomes =>
    new Map(entries);
  const ok = { ok: true } as const;
  const refuse = (error: 'NotIdle' | 'InvalidRequest', text = 'no') =>
    ({ ok: false, error, errorDescription: text }) as const;

  it('succeeds only when every worker took the command', () => {
    expect(
      summarizeOutcomes(
        'pause',
        outcomes([
          ['a', ok],
          ['b', ok],
        ]),
      ),
    ).toBeNull();
  });

  it('names the workers that did not take it before the deadline', () => {
    const error = summarizeOutcomes(
      'commit',
      outcomes([
        ['a', ok],
        ['b', 'pending'],
      ]),
    );
    expect(error?.error).toBe('CommandPending');
    expect(error?.message).toContain('not taken by b');
  });

  it('answers a common refusal with its own name, mixed ones with each reason', () => {
    const same = summarizeOutcomes(
      'start',
      outcomes([
        ['a', refuse('NotIdle')],
        ['b', refuse('NotIdle')],
      ]),
    );
    expect(same?.error).toBe('NotIdle');
    const mixed = summarizeOutcomes(
      'start',
      outcomes([
        ['a', ok],
        ['b', refuse('InvalidRequest', 'bad filter')],
      ]),
    );
    expect(mixed?.error).toBe('WorkersRejected');
    expect(mixed?.message).toContain('a: ok; b: InvalidRequest (bad filter)');
  });
});
