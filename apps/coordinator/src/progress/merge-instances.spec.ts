import type { WorkerRegistration, WorkerReport } from '@sync/contracts';
import type { ProgressSnapshot } from '@sync/engine';
import { mergeInstances } from './merge-instances';

function snapshot(over: Partial<ProgressSnapshot>): ProgressSnapshot {
  return {
    state: 'RUNNING',
    canCommit: true,
    canWrite: false,
    copyStarted: true,
    copyDone: true,
    estimatedTotalBytes: 1_000,
    copiedBytes: 500,
    changeApplication: { lagTimeSeconds: 2, totalEventsApplied: 10, readyToCommit: true },
    sourceMapping: 'cluster0: src:1',
    destinationMapping: 'cluster1: dst:1',
    syncID: 'x',
    coordinatorID: 'a',
    failure: null,
    sourceWriteBlocked: false,
    commitStep: null,
    commitFailure: null,
    failureDetail: null,
    retrying: null,
    namespaces: { total: 2, copied: 2 },
    waitingFor: null,
    verification: null,
    ...over,
  } as ProgressSnapshot;
}

const reg = (id: string): WorkerRegistration => ({
  id,
  shardId: id,
  queue: `sync.commands.${id}`,
  url: null,
  registeredAt: 0,
});
const report = (id: string, at: number, snap: ProgressSnapshot | null): WorkerReport => ({
  id,
  at,
  snapshot: snap,
  progress: snap ? ({ state: snap.state } as never) : null,
  error: snap ? null : { error: 'NotReady', errorDescription: 'starting' },
  highestEpoch: 1,
});

describe('mergeInstances', () => {
  const base = { now: 10_000, staleMs: 5_000, syncID: 'coord-a', coordinatorID: 'coord-a' };

  it('sums copied bytes and events, takes the worst lag and the global total', () => {
    const progress = mergeInstances({
      ...base,
      registrations: [reg('a'), reg('b')],
      reports: new Map([
        ['a', report('a', 9_500, snapshot({ copiedBytes: 400 }))],
        [
          'b',
          report(
            'b',
            9_000,
            snapshot({
              copiedBytes: 600,
              changeApplication: { lagTimeSeconds: 7, totalEventsApplied: 5, readyToCommit: true },
            }),
          ),
        ],
      ]),
    });
    expect(progress).toMatchObject({
      state: 'RUNNING',
      canCommit: true,
      lagTimeSeconds: 7,
      totalEventsApplied: 15,
      collectionCopy: { estimatedTotalBytes: 1_000, estimatedCopiedBytes: 1_000 },
      syncID: 'coord-a',
      coordinatorID: 'coord-a',
    });
    expect(progress.instances).toEqual([
      expect.objectContaining({ id: 'a', missing: false, lastSeenSecondsAgo: 0.5 }),
      expect.objectContaining({ id: 'b', missing: false, lastSeenSecondsAgo: 1 }),
    ]);
    expect(progress.missingInstances).toBeUndefined();
  });

  it('keeps a silent worker in the sums, marks it missing and withholds canCommit', () => {
    const progress = mergeInstances({
      ...base,
      registrations: [reg('a'), reg('b')],
      reports: new Map([
        ['a', report('a', 9_900, snapshot({ copiedBytes: 400 }))],
        ['b', report('b', 1_000, snapshot({ copiedBytes: 600 }))],
      ]),
    });
    expect(progress.canCommit).toBe(false);
    expect(progress.collectionCopy?.estimatedCopiedBytes).toBe(1_000);
    expect(progress.missingInstances).toEqual(['b']);
    expect(progress.instances).toContainEqual(
      expect.objectContaining({ id: 'b', missing: true, lastSeenSecondsAgo: 9 }),
    );
  });

  it('reports the least advanced state, and a worker that never reported', () => {
    const progress = mergeInstances({
      ...base,
      registrations: [reg('a'), reg('b'), reg('c')],
      reports: new Map([
        ['a', report('a', 9_900, snapshot({ state: 'PAUSED', canCommit: false }))],
        ['b', report('b', 9_900, snapshot({}))],
        ['c', report('c', 9_900, null)],
      ]),
    });
    expect(progress.state).toBe('PAUSED');
    expect(progress.lagTimeSeconds).toBeNull();
    expect(progress.canCommit).toBe(false);
    expect(progress.instances).toContainEqual(
      expect.objectContaining({ id: 'c', missing: false, progress: null }),
    );
  });

  it('is IDLE (seed rules) with no sync, still listing the instances', () => {
    const progress = mergeInstances({
      ...base,
      registrations: [reg('a')],
      reports: new Map([['a', report('a', 9_900, snapshot({ state: 'IDLE', canCommit: false }))]]),
    });
    expect(progress).toMatchObject({ state: 'IDLE', canCommit: false, lagTimeSeconds: null });
    expect(progress.instances).toHaveLength(1);
  });
});
