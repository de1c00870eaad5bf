import type { JobSession } from '../job/job-session';
import type { SyncRunner } from '../job/sync-runner';
import { joinsCommitUnderWay } from './commit';

/** A per-shard worker (id `a`) whose change application runs; `requested` is the shared record's. */
function worker(requested: string[], overrides: { lagBehind?: boolean; failed?: boolean } = {}) {
  const session = {
    job: {
      shard: { id: 'a', coordinatorID: 'a' },
      phase: 'copied',
      failure: overrides.failed ? { error: 'DestinationWriteError' } : undefined,
    },
    copiesPending: () => false,
    coordination: { load: async () => ({ commitSteps: { requested } }) },
  } as unknown as JobSession;
  const runner = {
    active: true,
    failure: null,
    retrying: false,
    status: () => ({
      copying: false,
      changeApplication: {
        lagTimeSeconds: overrides.lagBehind ? 30 : 0,
        totalEventsApplied: 5,
        readyToCommit: !overrides.lagBehind,
      },
    }),
  } as unknown as SyncRunner;
  return { session, runner };
}

describe('joinsCommitUnderWay (a per-shard worker joins a commit another worker accepted)', () => {
  it('joins when another worker has requested the commit, whatever its own lag', async () => {
    const { session, runner } = worker(['b'], { lagBehind: true });
    await expect(joinsCommitUnderWay('RUNNING', session, runner)).resolves.toBe(true);
  });

  it('does not when no other worker has requested it (its own lag decides: canCommit)', async () => {
    for (const requested of [[], ['a']]) {
      const { session, runner } = worker(requested, { lagBehind: true });
      await expect(joinsCommitUnderWay('RUNNING', session, runner)).resolves.toBe(false);
    }
  });

  it('never for a failed sync, outside RUNNING, or without a shard', async () => {
    const failed = worker(['b'], { failed: true });
    await expect(joinsCommitUnderWay('RUNNING', failed.session, failed.runner)).resolves.toBe(
      false,
    );
    const ok = worker(['b']);
    await expect(joinsCommitUnderWay('PAUSED', ok.session, ok.runner)).resolves.toBe(false);
    const unsharded = { ...ok.session, job: { ...ok.session.job, shard: undefined } };
    await expect(
      joinsCommitUnderWay('RUNNING', unsharded as unknown as JobSession, ok.runner),
    ).resolves.toBe(false);
  });
});
