import type { Progress } from './progress';
import { applyProgressRules } from './progress-rules';

const running: Progress = {
  state: 'RUNNING',
  canCommit: true,
  canWrite: false,
  info: 'change event application',
  lagTimeSeconds: 2,
  totalEventsApplied: 10,
  collectionCopy: { estimatedTotalBytes: 10, estimatedCopiedBytes: 10 },
  directionMapping: { Source: 'cluster0: h:1', Destination: 'cluster1: h:2' },
  syncID: 'a',
  coordinatorID: 'a',
  warnings: [],
};

describe('applyProgressRules', () => {
  it('reports only state and canCommit (false) while IDLE, dropping extras', () => {
    const idle = applyProgressRules({ ...running, state: 'IDLE' });
    expect(idle).toEqual({
      state: 'IDLE',
      canCommit: false,
      canWrite: null,
      info: null,
      lagTimeSeconds: null,
      totalEventsApplied: null,
      collectionCopy: null,
      directionMapping: null,
      syncID: null,
      coordinatorID: null,
    });
  });

  it('has no lag while PAUSED', () => {
    expect(applyProgressRules({ ...running, state: 'PAUSED' })).toEqual({
      ...running,
      state: 'PAUSED',
      lagTimeSeconds: null,
    });
  });

  it('passes other states through', () => {
    expect(applyProgressRules(running)).toBe(running);
  });

  it('withholds canCommit while the lag is over 30 s (MongoDB’s tool), not at 30 s', () => {
    const lagged = (seconds: number): Progress => ({
      ...running,
      lagTimeSeconds: seconds,
      lag: { overallLagSeconds: seconds, crudLagSeconds: seconds, ddlLagSeconds: seconds },
    });
    expect(applyProgressRules(lagged(31)).canCommit).toBe(false);
    expect(applyProgressRules(lagged(30)).canCommit).toBe(true);
    expect(
      applyProgressRules({ ...running, lag: { overallLagSeconds: 45 } } as Progress).canCommit,
    ).toBe(false);
  });

  it('nulls the lag object while PAUSED', () => {
    const paused = applyProgressRules({
      ...running,
      state: 'PAUSED',
      lag: { overallLagSeconds: 3, crudLagSeconds: 3, ddlLagSeconds: 3 },
    });
    expect(paused.lag).toEqual({
      overallLagSeconds: null,
      crudLagSeconds: null,
      ddlLagSeconds: null,
    });
  });
});
