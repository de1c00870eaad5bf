import { RetryCounter, retryInPlace, type InPlaceRetry } from './retry-in-place';
import { isTransientFault } from './transient';

function recordingClock() {
  const sleeps: number[] = [];
  return { sleeps, clock: { now: () => 0, sleep: async (ms: number) => void sleeps.push(ms) } };
}

const serverError = (code: number, labels: string[] = []) =>
  Object.assign(new Error(`server error ${code}`), {
    name: 'MongoServerError',
    code,
    errorLabels: labels,
  });

describe('isTransientFault', () => {
  it.each([
    ['NotWritablePrimary', serverError(10107), true],
    ['ExceededTimeLimit', serverError(262), true],
    ['a RetryableWriteError label', serverError(6, ['RetryableWriteError']), true],
    ['a ResumableChangeStreamError label', serverError(91, ['ResumableChangeStreamError']), true],
    ['a network error', Object.assign(new Error('x'), { name: 'MongoNetworkError' }), true],
    ['a transient cause', new Error('wrapped', { cause: serverError(189) }), true],
    ['a duplicate key', serverError(11000), false],
    ['Unauthorized', serverError(13), false],
    ['a plain error', new Error('bug'), false],
  ])('%s → %s', (_name, error, expected) => {
    expect(isTransientFault(error)).toBe(expected);
  });
});

describe('retryInPlace', () => {
  it('retries a transient failure with doubling, jittered backoff and reports each retry', async () => {
    const { sleeps, clock } = recordingClock();
    const events: InPlaceRetry[] = [];
    const counter = new RetryCounter();
    let calls = 0;
    const result = await retryInPlace(
      'write to d.c',
      async () => {
        if (++calls <= 3) throw serverError(10107);
        return 'ok';
      },
      {
        attempts: 5,
        baseMs: 100,
        maxMs: 300,
        random: () => 1,
        clock,
        onRetry: (e) => {
          events.push(e);
          counter.record(e, 42);
        },
      },
    );
    expect(result).toBe('ok');
    expect(calls).toBe(4);
    expect(sleeps).toEqual([100, 200, 300]);
    expect(events.map((e) => [e.what, e.attempt])).toEqual([
      ['write to d.c', 1],
      ['write to d.c', 2],
      ['write to d.c', 3],
    ]);
    expect(counter.total).toBe(3);
    expect(counter.last).toEqual({
      what: 'write to d.c',
      error: 'MongoServerError: server error 10107',
      at: 42,
    });
  });

  it('draws each wait from [½, 1] of the ceiling (jitter)', async () => {
    const { sleeps, clock } = recordingClock();
    let calls = 0;
    await retryInPlace(
      'x',
      async () => {
        if (++calls === 1) throw serverError(91);
      },
      { baseMs: 100, random: () => 0, clock },
    );
    expect(sleeps).toEqual([50]);
  });

  it('throws the last transient failure once the attempts are spent', async () => {
    const { clock } = recordingClock();
    let calls = 0;
    const failure = serverError(262);
    await expect(
      retryInPlace(
        'x',
        async () => {
          calls++;
          throw failure;
        },
        { attempts: 2, clock },
      ),
    ).rejects.toBe(failure);
    expect(calls).toBe(3);
  });

  it('throws a permanent failure at once', async () => {
    const { sleeps, clock } = recordingClock();
    let calls = 0;
    const failure = serverError(11000);
    await expect(
      retryInPlace(
        'x',
        async () => {
          calls++;
          throw failure;
        },
        { clock },
      ),
    ).rejects.toBe(failure);
    expect(calls).toBe(1);
    expect(sleeps).toEqual([]);
  });

  it('stops retrying when the signal aborts', async () => {
    const controller = new AbortController();
    let calls = 0;
    const failure = serverError(10107);
    await expect(
      retryInPlace(
        'x',
        async () => {
          calls++;
          controller.abort();
          throw failure;
        },
        { clock: recordingClock().clock },
        controller.signal,
      ),
    ).rejects.toBe(failure);
    expect(calls).toBe(1);
  });
});
