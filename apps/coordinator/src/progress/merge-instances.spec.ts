import type { Progress, WorkerRegistration, WorkerReport } from '@sync/contracts';
import type { ProgressSnapshot } from '@sync/engine';
import { renderProgress } from '@sync/engine';
import { mergeInstances, type InstanceView } from './merge-instances';

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
      expect.objectContaining({ id: 'c', missing: false, status: 'starting', progress: null }),
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

  /** A report as a real worker sends it: the rendered progress of its snapshot. */
  const full = (id: string, at: number, snap: ProgressSnapshot): WorkerReport => ({
    ...report(id, at, snap),
    progress: renderProgress(snap),
  });
  const instances = (p: Progress) => p.instances as InstanceView[];

  it('gives every instance the whole sync total; their copied bytes never add up above it', () => {
    const during = mergeInstances({
      ...base,
      registrations: [reg('a'), reg('b')],
      reports: new Map([
        [
          'a',
          full(
            'a',
            9_900,
            snapshot({ copyDone: false, estimatedTotalBytes: 3_000, copiedBytes: 900 }),
          ),
        ],
        [
          'b',
          full(
            'b',
            9_900,
            snapshot({ copyDone: false, estimatedTotalBytes: 3_000, copiedBytes: 1_200 }),
          ),
        ],
      ]),
    });
    const after = mergeInstances({
      ...base,
      registrations: [reg('a'), reg('b')],
      reports: new Map([
        ['a', full('a', 9_900, snapshot({ copiedBytes: 1_000 }))],
        ['b', full('b', 9_900, snapshot({ copiedBytes: 0 }))],
      ]),
    });
    for (const [view, total] of [
      [during, 3_000],
      [after, 1_000],
    ] as const) {
      expect(view.collectionCopy?.estimatedTotalBytes).toBe(total);
      const each = instances(view).map((i) => i.progress!.collectionCopy!);
      expect(each.map((c) => c.estimatedTotalBytes)).toEqual([total, total]);
      const sum = each.reduce((n, c) => n + c.estimatedCopiedBytes, 0);
      expect(sum).toBeLessThanOrEqual(total);
    }
    expect(instances(during).map((i) => i.progress!.collectionCopy!.estimatedCopiedBytes)).toEqual([
      900, 1_200,
    ]);
    // Alone, a worker done with its share would report total = its own copied bytes (1 for b).
    expect(instances(after).map((i) => i.progress!.collectionCopy!.estimatedCopiedBytes)).toEqual([
      1_000, 0,
    ]);
  });

  it('a restarted worker that beats without progress is starting, with its last known figures', () => {
    const last = snapshot({ copiedBytes: 600 });
    const progress = mergeInstances({
      ...base,
      registrations: [reg('a'), reg('b')],
      reports: new Map([
        ['a', full('a', 9_900, snapshot({ copiedBytes: 400 }))],
        ['b', report('b', 9_800, null)],
      ]),
      lastKnown: new Map([['b', { at: 4_000, snapshot: last, progress: renderProgress(last) }]]),
    });
    const b = instances(progress).find((i) => i.id === 'b')!;
    expect(b).toMatchObject({ status: 'starting', missing: false, progressSecondsAgo: 6 });
    expect(b.progress?.state).toBe('RUNNING');
    expect(b.reason).toContain('NotReady');
    expect(progress.canCommit).toBe(false);
    expect(progress.collectionCopy?.estimatedCopiedBytes).toBe(1_000); // its share stays counted
  });

  it('a source shard no worker is registered for is a missing instance; canCommit is false', () => {
    const progress = mergeInstances({
      ...base,
      registrations: [reg('a')],
      reports: new Map([['a', full('a', 9_900, snapshot({}))]]),
      expectedShards: ['a', 'b'],
    });
    expect(progress.canCommit).toBe(false);
    expect(progress.missingInstances).toEqual(['b']);
    expect(instances(progress).find((i) => i.id === 'b')).toMatchObject({
      status: 'missing',
      progress: null,
      reason: expect.stringContaining('no worker is registered'),
    });
  });

  it('adds the catch-up estimate during change event application and the clusters’ pings', () => {
    const progress = mergeInstances({
      ...base,
      registrations: [reg('a')],
      reports: new Map([['a', full('a', 9_900, snapshot({}))]]),
      catchup: new Map([
        ['', 12],
        ['a', 12],
      ]),
      pings: new Map([
        ['cluster0', 3.4],
        ['cluster1', -1],
      ]),
    });
    expect(progress.estimatedSecondsToCEACatchup).toBe(12);
    expect(progress.source).toEqual({ pingLatencyMs: 3 });
    expect(progress.destination).toEqual({ pingLatencyMs: -1 });
    expect(instances(progress)[0].progress?.estimatedSecondsToCEACatchup).toBe(12);
    const fast = mergeInstances({
      ...base,
      registrations: [reg('a')],
      reports: new Map([['a', full('a', 9_900, snapshot({}))]]),
      pings: new Map([['cluster0', 0.4]]),
    });
    expect(fast.source).toBeUndefined(); // below 1 ms: absent, as in MongoDB's tool
    expect(fast.estimatedSecondsToCEACatchup).toBeUndefined();
  });

  it('shows per shard the active instance and its standbys, which never count in the figures', () => {
    const active = { ...reg('a'), role: 'active' as const, instance: 'i-active' };
    const standby = (instance: string) => ({
      ...reg(`a~standby~${instance}`),
      shardId: 'a',
      role: 'standby' as const,
      instance,
      url: `http://127.0.0.1:1/${instance}`,
    });
    const progress = mergeInstances({
      ...base,
      registrations: [active],
      standbys: [
        { registration: standby('i-s1'), seenAt: 9_800 },
        { registration: standby('i-s2'), seenAt: 1_000 },
      ],
      reports: new Map([['a', report('a', 9_500, snapshot({ copiedBytes: 400 }))]]),
      expectedShards: ['a', 'b'],
    });
    const views = progress.instances as InstanceView[];
    expect(views.map((v) => v.id)).toEqual(['a', 'b']);
    expect(views[0]).toMatchObject({
      status: 'active',
      role: 'active',
      instance: 'i-active',
      standbys: [
        { id: 'a~standby~i-s1', instance: 'i-s1', missing: false, lastSeenSecondsAgo: 0.2 },
        { id: 'a~standby~i-s2', instance: 'i-s2', missing: true, lastSeenSecondsAgo: 9 },
      ],
    });
    // Shard b has neither: missing, with no standby to take it over.
    expect(views[1]).toMatchObject({ status: 'missing', instance: null, standbys: [] });
    expect(progress.collectionCopy).toMatchObject({ estimatedCopiedBytes: 400 });
  });
});
