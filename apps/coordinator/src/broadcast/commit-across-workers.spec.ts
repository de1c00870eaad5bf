import type { CommandJobResult } from '@sync/contracts';
import { commitAcrossWorkers, type Outcomes } from './command-outcomes';

const ok: CommandJobResult = { ok: true } as CommandJobResult;
const notReady: CommandJobResult = {
  ok: false,
  error: 'CommitNotReady',
  errorDescription: 'commit needs canCommit',
} as CommandJobResult;

/** Workers answering commit round by round (a worker's list: its verdict per send). */
function workers(verdicts: Record<string, CommandJobResult[]>) {
  const sends: Array<{ targets: string[]; round: number }> = [];
  const send = async (targets: readonly string[] | null, round: number): Promise<Outcomes> => {
    const to = targets ? [...targets] : Object.keys(verdicts);
    sends.push({ targets: to, round });
    return new Map(to.map((w) => [w, verdicts[w]!.shift() ?? notReady]));
  };
  return { send, sends };
}

const noWait = async () => undefined;

describe('commitAcrossWorkers', () => {
  it('sends commit again to the workers that refused while others took it; they join', async () => {
    const w = workers({ s0: [ok], s1: [notReady, ok] });
    await expect(commitAcrossWorkers(w.send, noWait)).resolves.toBeNull();
    expect(w.sends).toEqual([
      { targets: ['s0', 's1'], round: 0 },
      { targets: ['s1'], round: 1 },
    ]);
  });

  it('refused by every worker: CommitNotReady, nothing sent again', async () => {
    const w = workers({ s0: [notReady], s1: [notReady] });
    const error = await commitAcrossWorkers(w.send, noWait);
    expect(error?.error).toBe('CommitNotReady');
    expect(w.sends).toHaveLength(1);
  });

  it('a refuser that never joins within the rounds: WorkersRejected naming it', async () => {
    const w = workers({ s0: [ok], s1: [] });
    const error = await commitAcrossWorkers(w.send, noWait, 2);
    expect(error?.error).toBe('WorkersRejected');
    expect(error?.message).toContain('s1: CommitNotReady');
    expect(w.sends.map((s) => s.round)).toEqual([0, 1, 2]);
  });
});
