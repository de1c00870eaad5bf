import {
  describeOplogTimeRemaining,
  mergeSnapshots,
  renderProgress,
  type ProgressSnapshot,
} from './progress-snapshot';

const base = (overrides: Partial<ProgressSnapshot>): ProgressSnapshot => ({
  state: 'RUNNING',
  canCommit: true,
  canWrite: false,
  copyStarted: true,
  copyDone: true,
  estimatedTotalBytes: 1000,
  copiedBytes: 400,
  changeApplication: { lagTimeSeconds: 2, totalEventsApplied: 10, readyToCommit: true },
  sourceMapping: 'cluster0: a:1',
  destinationMapping: 'cluster1: b:1',
  syncID: 'shard0',
  coordinatorID: 'shard0',
  failure: null,
  sourceWriteBlocked: false,
  commitStep: null,
  commitFailure: null,
  failureDetail: null,
  retrying: null,
  namespaces: { total: 2, copied: 2 },
  waitingFor: null,
  verification: null,
  ...overrides,
});

describe('progress snapshots', () => {
  it('merge: copied bytes summed, total global, worst lag, canCommit only when all can', () => {
    const merged = mergeSnapshots([
      base({ copiedBytes: 400 }),
      base({
        syncID: 'shard1',
        copiedBytes: 500,
        canCommit: false,
        changeApplication: { lagTimeSeconds: 7, totalEventsApplied: 5, readyToCommit: false },
      }),
    ])!;
    expect(merged).toMatchObject({
      canCommit: false,
      copiedBytes: 900,
      estimatedTotalBytes: 1000,
      changeApplication: { lagTimeSeconds: 7, totalEventsApplied: 15, readyToCommit: false },
      namespaces: { total: 4, copied: 4 },
    });
    expect(renderProgress(merged).collectionCopy).toEqual({
      estimatedTotalBytes: 900,
      estimatedCopiedBytes: 900,
    });
  });

  it('merge: the least advanced state wins and an unknown lag stays unknown', () => {
    const merged = mergeSnapshots([
      base({ state: 'COMMITTED' }),
      base({ state: 'COMMITTING', changeApplication: null }),
    ])!;
    expect(merged.state).toBe('COMMITTING');
    expect(merged.changeApplication).toBeNull();
    expect(mergeSnapshots([])).toBeNull();
  });

  it('render: failure with where it happened, commit failure, source write block', () => {
    const progress = renderProgress(
      base({
        state: 'COMMITTING',
        failure: 'DestinationWriteError: rejected',
        failureDetail: { error: 'DestinationWriteError', namespace: 'shop.items', eventTime: '5' },
        commitFailure: { step: 'indexesRestored', error: 'MongoServerError', message: 'dup' },
        sourceWriteBlocked: true,
      }),
    );
    expect(progress).toMatchObject({
      error: 'DestinationWriteError',
      failure: 'DestinationWriteError: rejected',
      failureNamespace: 'shop.items',
      failureEventTime: '5',
      commitFailure: { step: 'indexesRestored', retry: expect.stringMatching(/commit again/) },
      sourceWriteBlocked: true,
    });
    expect(renderProgress(base({ state: 'IDLE' }))).not.toHaveProperty('namespaces');
  });

  it('merge and render: verification counts add up, a failed phase wins', () => {
    const status = (phase: 'live' | 'failed' | 'passed', verified: number, mismatches = 0) => ({
      phase,
      namespacesTotal: 3,
      namespacesVerified: verified,
      mismatches,
      pendingRecheck: 0,
      samples:
        mismatches > 0
          ? [{ namespace: 'shop.items', problems: ['document _id 1 differs'], ids: ['1'] }]
          : [],
    });
    const merged = mergeSnapshots([
      base({ verification: status('passed', 3) }),
      base({ verification: status('failed', 2, 1) }),
      base({ verification: null }),
    ])!;
    expect(renderProgress(merged).verification).toEqual({
      phase: 'failed',
      namespacesTotal: 6,
      namespacesVerified: 5,
      mismatches: 1,
      pendingRecheck: 0,
      samples: [{ namespace: 'shop.items', problems: ['document _id 1 differs'], ids: ['1'] }],
    });
    expect(renderProgress(base({ verification: null }))).not.toHaveProperty('verification');
  });

  it('render: the lag object beside lagTimeSeconds (CRUD and DDL from one ordered stream)', () => {
    const progress = renderProgress(base({}));
    expect(progress.lagTimeSeconds).toBe(2);
    expect(progress.lag).toEqual({ overallLagSeconds: 2, crudLagSeconds: 2, ddlLagSeconds: 2 });
    expect(renderProgress(base({ state: 'PAUSED' })).lag).toEqual({
      overallLagSeconds: null,
      crudLagSeconds: null,
      ddlLagSeconds: null,
    });
  });

  it('render: estimatedOplogTimeRemaining only while RUNNING and not writable', () => {
    expect(
      renderProgress(base({ oplogTimeRemainingSeconds: 5 * 3600 + 59 }))
        .estimatedOplogTimeRemaining,
    ).toBe('5 hours');
    expect(renderProgress(base({})).estimatedOplogTimeRemaining).toBe('not checked yet');
    expect(
      renderProgress(base({ state: 'COMMITTED', canWrite: true, oplogTimeRemainingSeconds: 9_999 }))
        .estimatedOplogTimeRemaining,
    ).toBeUndefined();
    expect(describeOplogTimeRemaining(14 * 60 + 59)).toBe('less than 15 minutes');
    expect(describeOplogTimeRemaining(45 * 60)).toBe('45 minutes');
    expect(describeOplogTimeRemaining(73 * 3600)).toBe('more than 72 hours');
  });

  it('merge: the tightest oplog decides; unknown everywhere stays unknown', () => {
    const merged = mergeSnapshots([
      base({ oplogTimeRemainingSeconds: 7_200 }),
      base({ oplogTimeRemainingSeconds: 3_600 }),
      base({ oplogTimeRemainingSeconds: null }),
    ])!;
    expect(merged.oplogTimeRemainingSeconds).toBe(3_600);
    expect(mergeSnapshots([base({}), base({})])!.oplogTimeRemainingSeconds).toBeNull();
  });

  it('render: an oplog not seen truncating yet gives a lower bound, worded as one', () => {
    // A fresh source: 3 minutes of history, nothing truncated — not "less than 15 minutes".
    expect(
      renderProgress(base({ oplogTimeRemainingSeconds: 200, oplogTimeRemainingIsLowerBound: true }))
        .estimatedOplogTimeRemaining,
    ).toBe('not known yet (the oplog has not filled yet)');
    expect(describeOplogTimeRemaining(45 * 60, true)).toBe(
      'at least 45 minutes (the oplog has not filled yet)',
    );
    expect(describeOplogTimeRemaining(3 * 3600 + 5, true)).toBe(
      'at least 3 hours (the oplog has not filled yet)',
    );
    expect(describeOplogTimeRemaining(80 * 3600, true)).toBe('more than 72 hours');
    expect(describeOplogTimeRemaining(200)).toBe('less than 15 minutes');
  });

  it('merge: the smallest figure decides, and whether it is a lower bound goes with it', () => {
    const figure = (s: ProgressSnapshot) => [
      s.oplogTimeRemainingSeconds,
      s.oplogTimeRemainingIsLowerBound,
    ];
    // A worker whose oplog keeps everything (at least 60 s) beside one truncating (100 s left):
    // every history keeps at least 60 s.
    const lb = { oplogTimeRemainingSeconds: 60, oplogTimeRemainingIsLowerBound: true };
    expect(figure(mergeSnapshots([base(lb), base({ oplogTimeRemainingSeconds: 100 })])!)).toEqual([
      60,
      true,
    ]);
    // The truncating one is the tightest: its estimate is the answer, whichever worker is the
    // least advanced (whose other fields the merge starts from).
    const merged = mergeSnapshots([
      base({ ...lb, oplogTimeRemainingSeconds: 120 }),
      base({ oplogTimeRemainingSeconds: 100 }),
    ])!;
    expect(figure(merged)).toEqual([100, false]);
    expect(figure(mergeSnapshots([base(lb), base({ oplogTimeRemainingSeconds: 60 })])!)).toEqual([
      60,
      false,
    ]);
  });
});
