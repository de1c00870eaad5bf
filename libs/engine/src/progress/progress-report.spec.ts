import { buildProgress, copyFigures, type ProgressInputs } from './progress-report';

const base: ProgressInputs = {
  state: 'RUNNING',
  canCommit: false,
  canWrite: false,
  copyStarted: true,
  copyDone: false,
  estimatedTotalBytes: 1000,
  copiedBytes: 400,
  changeApplication: null,
  sourceMapping: 'cluster0: a:1',
  destinationMapping: 'cluster1: b:2',
  syncID: 'worker',
  coordinatorID: 'worker',
  failure: null,
};

describe('progress rules', () => {
  it('IDLE: every field null except state and canCommit', () => {
    const p = buildProgress({ ...base, state: 'IDLE' });
    expect(p).toEqual({
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

  it('before the copy: copied 0, total 1', () => {
    expect(copyFigures({ ...base, copyStarted: false })).toEqual({
      estimatedTotalBytes: 1,
      estimatedCopiedBytes: 0,
    });
  });

  it('copied never above total: total is raised when the source grew', () => {
    expect(copyFigures({ ...base, copiedBytes: 1500 })).toEqual({
      estimatedTotalBytes: 1500,
      estimatedCopiedBytes: 1500,
    });
    expect(copyFigures(base)).toEqual({ estimatedTotalBytes: 1000, estimatedCopiedBytes: 400 });
  });

  it('equal at the end of the copy (also when the source shrank or was empty)', () => {
    expect(copyFigures({ ...base, copyDone: true, copiedBytes: 900 })).toEqual({
      estimatedTotalBytes: 900,
      estimatedCopiedBytes: 900,
    });
    expect(
      copyFigures({ ...base, copyDone: true, copiedBytes: 0, estimatedTotalBytes: 0 }),
    ).toEqual({
      estimatedTotalBytes: 1,
      estimatedCopiedBytes: 1,
    });
  });

  it('RUNNING: info, mapping, ids; lag null until change application exists; PAUSED lag null', () => {
    const p = buildProgress(base);
    expect(p).toMatchObject({
      state: 'RUNNING',
      info: 'collection copy',
      canWrite: false,
      lagTimeSeconds: null,
      totalEventsApplied: null,
      directionMapping: { Source: 'cluster0: a:1', Destination: 'cluster1: b:2' },
      syncID: 'worker',
      coordinatorID: 'worker',
    });
    const cea = { lagTimeSeconds: 3, totalEventsApplied: 10, readyToCommit: true };
    expect(buildProgress({ ...base, copyDone: true, changeApplication: cea })).toMatchObject({
      info: 'change event application',
      lagTimeSeconds: 3,
      totalEventsApplied: 10,
    });
    expect(
      buildProgress({ ...base, state: 'PAUSED', changeApplication: cea }).lagTimeSeconds,
    ).toBeNull();
    expect(
      buildProgress({ ...base, state: 'COMMITTED', canWrite: true, changeApplication: cea }),
    ).toMatchObject({
      info: 'commit completed',
      lagTimeSeconds: 0,
      canWrite: true,
    });
  });
});
