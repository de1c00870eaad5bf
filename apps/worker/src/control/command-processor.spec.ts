import { ApiError, type CommandJobData } from '@sync/contracts';
import type { SyncEngine } from '@sync/engine';
import { CommandProcessor, NotTheLiveWorkerError } from './command-processor';

function engine(): SyncEngine & { calls: string[] } {
  const calls: string[] = [];
  const seen = new Set<string>();
  const command = (name: string) => async (options?: { commandId?: string }) => {
    if (options?.commandId && seen.has(options.commandId)) return;
    if (options?.commandId) seen.add(options.commandId);
    if (name === 'resume') throw new ApiError('InvalidState', 'resume needs PAUSED');
    if (name === 'commit') throw new ApiError('NotReady');
    calls.push(name);
  };
  return {
    calls,
    state: 'RUNNING',
    progress: () => ({}) as never,
    start: (_request, options) => command('start')(options),
    validateStart: async (request) => {
      calls.push('validate');
      if (request.reversible) throw new ApiError('ReversibleRequiresWriteBlocking', 'no');
    },
    pause: command('pause'),
    resume: command('resume'),
    commit: command('commit'),
    reverse: command('reverse'),
    close: async () => undefined,
  };
}

const job = (operation: CommandJobData['operation'], epoch: number, commandId = `c-${operation}`) =>
  ({ operation, epoch, commandId, issuedBy: 'coord' }) as CommandJobData;

describe('CommandProcessor', () => {
  it('applies a command once per command id (a re-delivered job answers ok again)', async () => {
    const e = engine();
    const processor = new CommandProcessor(() => e);
    await expect(processor.process(job('pause', 1))).resolves.toEqual({ ok: true });
    await expect(processor.process(job('pause', 1))).resolves.toEqual({ ok: true });
    expect(e.calls).toEqual(['pause']);
  });

  it('refuses commands from an older epoch than any it has taken', async () => {
    const e = engine();
    const processor = new CommandProcessor(() => e);
    await processor.process(job('pause', 3, 'p3'));
    const stale = await processor.process(job('pause', 2, 'p2'));
    expect(stale).toMatchObject({ ok: false, error: 'StaleEpoch' });
    expect(processor.highestEpoch).toBe(3);
    expect(e.calls).toEqual(['pause']);
  });

  it('returns refusals as results and throws transient errors for a retry', async () => {
    const processor = new CommandProcessor(() => engine());
    await expect(processor.process(job('resume', 1))).resolves.toMatchObject({
      ok: false,
      error: 'InvalidState',
    });
    await expect(processor.process(job('commit', 1))).rejects.toThrow(ApiError);
  });

  it('validate runs the engine’s dry run of start, and a refusal is a result', async () => {
    const e = engine();
    const processor = new CommandProcessor(() => e);
    const request = { source: 'cluster0', destination: 'cluster1' } as never;
    const validate = (body: object): CommandJobData =>
      ({ ...job('validate', 1, 's-1'), request: body }) as CommandJobData;
    await expect(processor.process(validate(request))).resolves.toEqual({ ok: true });
    await expect(
      processor.process(validate({ ...(request as object), reversible: true })),
    ).resolves.toMatchObject({ ok: false, error: 'ReversibleRequiresWriteBlocking' });
    expect(e.calls).toEqual(['validate', 'validate']);
  });

  it('never runs a command its admission refuses (older than one taken, or expired)', async () => {
    const e = engine();
    let highest = 0;
    const admit = async (data: CommandJobData) => {
      if ((data.sequence ?? 0) < highest) return `#${data.sequence} is older than #${highest}`;
      highest = data.sequence ?? highest;
      return null;
    };
    const processor = new CommandProcessor(() => e, admit);
    const at = (operation: CommandJobData['operation'], sequence: number) =>
      ({ ...job(operation, 1, `c-${sequence}`), sequence }) as CommandJobData;
    await expect(processor.process(at('pause', 5))).resolves.toEqual({ ok: true });
    await expect(processor.process(at('resume', 4))).resolves.toMatchObject({
      ok: false,
      error: 'CommandSuperseded',
      errorDescription: '#4 is older than #5',
    });
    await expect(processor.process(at('pause', 5))).resolves.toEqual({ ok: true }); // re-delivered
    expect(e.calls).toEqual(['pause']);
  });

  it('keeps the highest epoch across a restart: loaded before the first command, raised before a newer one runs', async () => {
    const stored = { epoch: 7, raises: [] as number[], loads: 0 };
    const record = {
      load: async () => {
        stored.loads += 1;
        return stored.epoch;
      },
      raise: async (epoch: number) => {
        stored.raises.push(epoch);
        stored.epoch = Math.max(stored.epoch, epoch);
      },
    };
    // A restarted worker: its memory is empty, the record says 7.
    const e = engine();
    const restarted = new CommandProcessor(() => e, undefined, record);
    await expect(restarted.process(job('pause', 5))).resolves.toMatchObject({
      ok: false,
      error: 'StaleEpoch',
    });
    expect(e.calls).toEqual([]);
    await expect(restarted.process(job('pause', 7, 'p-7'))).resolves.toEqual({ ok: true });
    expect(stored.raises).toEqual([]); // not newer: nothing to write
    await expect(restarted.process(job('resume', 9, 'r-9'))).resolves.toMatchObject({
      ok: false,
      error: 'InvalidState',
    });
    expect(stored.raises).toEqual([9]); // persisted before the command ran
    expect(stored.loads).toBe(1);
    // The next restart refuses epoch 8.
    const again = new CommandProcessor(() => e, undefined, record);
    await expect(again.process(job('pause', 8, 'p-8'))).resolves.toMatchObject({
      error: 'StaleEpoch',
    });
  });

  it('a failed read of the persisted epoch is retried by the queue, never skipped', async () => {
    const e = engine();
    let fail = true;
    const record = {
      load: async () => {
        if (fail) throw new Error('cluster1 unreachable');
        return 3;
      },
      raise: async () => undefined,
    };
    const processor = new CommandProcessor(() => e, undefined, record);
    await expect(processor.process(job('pause', 2))).rejects.toThrow('cluster1 unreachable');
    expect(e.calls).toEqual([]);
    fail = false;
    await expect(processor.process(job('pause', 2))).resolves.toMatchObject({
      error: 'StaleEpoch',
    });
  });

  it.each(['ShardClaimLost', 'DuplicateShardWorker'])(
    'a process whose engine answers %s takes no command: it goes back to the queue for the live one',
    async (name) => {
      const e = engine();
      e.progress = () => {
        throw new ApiError(name as never, 'another process holds this shard');
      };
      const stopped: string[] = [];
      const processor = new CommandProcessor(
        () => e,
        undefined,
        undefined,
        (reason) => stopped.push(reason),
      );
      const taking = processor.process(job('commit', 1));
      await expect(taking).rejects.toThrow(NotTheLiveWorkerError);
      await expect(taking).rejects.toThrow(name);
      expect(stopped).toEqual([name]);
      expect(e.calls).toEqual([]);
    },
  );
});
