import { engineTuning } from './engine-tuning';

describe('engineTuning (launch config → createSyncEngine options)', () => {
  it('sets nothing without tuning, so every default stays the engine’s', () => {
    expect(engineTuning(undefined)).toEqual({});
    expect(engineTuning({})).toEqual({});
  });

  it('maps every group onto the engine’s and the change application’s options', () => {
    expect(
      engineTuning({
        copier: { concurrency: 8, raw: false },
        partitioning: { targetBytes: 1 << 20 },
        verification: { concurrency: 2, limits: { idsTotal: 10 }, retry: { attempts: 1 } },
        historyGuard: { warnRatio: 0.25 },
        retry: { maxTransientRetries: 20, inPlaceRetries: 0, restoreRetryMs: 2000 },
        balancerWatch: { intervalMs: 3000 },
        changeApplication: {
          lanes: 16,
          minLanes: 2,
          maxInFlight: 500,
          checkpointIntervalMs: 200,
          checkpointEveryEvents: 100,
          lagPollMs: 250,
          commitLagLimitSeconds: 5,
          feed: { maxAwaitTimeMS: 200, maxBatchEvents: 50 },
        },
      }),
    ).toEqual({
      engine: {
        copier: { concurrency: 8, raw: false },
        partitioning: { targetBytes: 1 << 20 },
        verification: { concurrency: 2, limits: { idsTotal: 10 }, retry: { attempts: 1 } },
        historyGuard: { warnRatio: 0.25 },
        maxTransientRetries: 20,
        inPlaceRetries: 0,
        restoreRetryMs: 2000,
        balancerWatchMs: 3000,
      },
      changeApplication: {
        lagPollMs: 250,
        commitLagLimitSeconds: 5,
        applier: {
          lanes: 16,
          minLanes: 2,
          maxInFlight: 500,
          checkpointIntervalMs: 200,
          checkpointEveryEvents: 100,
        },
        feed: { maxAwaitTimeMS: 200, maxBatchEvents: 50 },
      },
    });
  });

  it('gives only the side that is tuned', () => {
    expect(engineTuning({ changeApplication: { feed: { maxBatchEvents: 10 } } })).toEqual({
      changeApplication: { feed: { maxBatchEvents: 10 } },
    });
    expect(engineTuning({ balancerWatch: {}, copier: { concurrency: 2 } })).toEqual({
      engine: { copier: { concurrency: 2 } },
    });
  });
});
