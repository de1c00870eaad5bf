import type { WorkerRegistration, WorkerReport } from '@sync/contracts';
import type { ProgressSnapshot } from '@sync/engine';
import { figuresFromRoster, SyncMetrics, type InstanceFigures } from '@sync/service';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';

function snapshot(over: Record<string, unknown>): ProgressSnapshot {
  return {
    state: 'RUNNING',
    canCommit: true,
    canWrite: false,
    copyStarted: true,
    copyDone: true,
    estimatedTotalBytes: 1_000,
    copiedBytes: 500,
    changeApplication: { lagTimeSeconds: 2, totalEventsApplied: 10, readyToCommit: true },
    sourceMapping: 'cluster0: mongodb://admin:s3cret@src:1',
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
    ...over,
  } as unknown as ProgressSnapshot;
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
  progress: null,
  error: snap ? null : { error: 'NotReady', errorDescription: 'initializing' },
  highestEpoch: 0,
});

describe("the coordinator's /metrics: every worker's figures, by worker", () => {
  const now = 100_000;
  const roster = {
    registrations: [reg('shardA'), reg('shardB'), reg('shardC')],
    reports: new Map<string, WorkerReport>([
      // shardA: fresh, verifying with a mismatch; no `verification` at all on shardB (older build).
      [
        'shardA',
        report(
          'shardA',
          now - 500,
          snapshot({
            verification: {
              phase: 'live',
              namespacesTotal: 2,
              namespacesVerified: 1,
              mismatches: 1,
              pendingRecheck: 1,
              samples: [],
            },
          }),
        ),
      ],
      // shardB: stale (missing) and failed; its last figures stay.
      [
        'shardB',
        report(
          'shardB',
          now - 60_000,
          snapshot({
            state: 'PAUSED',
            copiedBytes: 300,
            changeApplication: { lagTimeSeconds: 9, totalEventsApplied: 4, readyToCommit: false },
            failureDetail: { error: 'DestinationNotEmpty', namespace: 'db.c' },
          }),
        ),
      ],
      ['shardC', report('shardC', now - 100, null)],
    ]),
  };

  function scrape(figures: () => InstanceFigures[]) {
    const metrics = new SyncMetrics({ source: figures, defaultMetrics: false });
    return metrics.metrics().then((text) => ({
      text,
      families: new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f])),
    }));
  }
  const sample = (
    families: Map<string, ReturnType<typeof parsePrometheusTextFormat>[number]>,
    name: string,
    labels: Record<string, string>,
  ) =>
    families
      .get(name)
      ?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value;

  it('labels each worker, marks missing ones, and never shows a connection string', async () => {
    const figures = figuresFromRoster({ ...roster, now, staleMs: 5_000 });
    expect(figures.map((f) => f.worker)).toEqual(['shardA', 'shardB', 'shardC']);
    const { text, families } = await scrape(() => figures);

    expect(sample(families, 'cluster_sync_copied_bytes', { worker: 'shardA' })).toBe('500');
    expect(sample(families, 'cluster_sync_copied_bytes', { worker: 'shardB' })).toBe('300');
    expect(sample(families, 'cluster_sync_events_applied_total', { worker: 'shardA' })).toBe('10');
    expect(sample(families, 'cluster_sync_events_applied_total', { worker: 'shardB' })).toBe('4');
    expect(sample(families, 'cluster_sync_lag_seconds', { worker: 'shardA' })).toBe('2');
    // Paused: no lag, as in progress.
    expect(sample(families, 'cluster_sync_lag_seconds', { worker: 'shardB' })).toBeUndefined();
    expect(sample(families, 'cluster_sync_state', { worker: 'shardB', state: 'PAUSED' })).toBe('1');
    expect(
      sample(families, 'cluster_sync_state', { worker: 'shardC', state: 'INITIALIZING' }),
    ).toBe('1');
    expect(sample(families, 'cluster_sync_worker_up', { worker: 'shardA' })).toBe('1');
    expect(sample(families, 'cluster_sync_worker_up', { worker: 'shardB' })).toBe('0');
    expect(
      sample(families, 'cluster_sync_worker_last_report_age_seconds', { worker: 'shardB' }),
    ).toBe('60');
    expect(
      sample(families, 'cluster_sync_errors_total', {
        worker: 'shardB',
        error: 'DestinationNotEmpty',
      }),
    ).toBe('1');
    expect(sample(families, 'cluster_sync_verification_mismatches', { worker: 'shardA' })).toBe(
      '1',
    );
    expect(
      sample(families, 'cluster_sync_verification_mismatches', { worker: 'shardB' }),
    ).toBeUndefined();
    expect(text).not.toContain('s3cret');
    expect(text).not.toContain('mongodb://');
  });

  it('shows nothing per worker before the first read of Redis, and keeps a label value safe', async () => {
    expect((await scrape(() => [])).families.get('cluster_sync_state')?.metrics ?? []).toHaveLength(
      0,
    );
    const odd = figuresFromRoster({
      registrations: [reg('mongodb://u:pw@h/x y')],
      reports: new Map(),
      now,
      staleMs: 5_000,
    });
    expect(odd[0]).toMatchObject({ worker: 'invalid-id', up: false, state: null });
  });
});
