import type { ProgressSnapshot } from '@sync/engine';
import parsePrometheusTextFormat, { type ParsedFamily } from 'parse-prometheus-text-format';
import { FakeSyncEngine } from '../test/fake-sync-engine';
import { startTestApi, type TestApi } from '../test/start-test-api';

/** The fake engine with a raw snapshot, as the real engine has. */
class SnapshotEngine extends FakeSyncEngine {
  figures: Partial<ProgressSnapshot> & Record<string, unknown> = {};

  snapshot(): ProgressSnapshot {
    return {
      state: this.state,
      canCommit: this.canCommit,
      canWrite: false,
      copyStarted: true,
      copyDone: false,
      estimatedTotalBytes: 4096,
      copiedBytes: 1024,
      changeApplication: { lagTimeSeconds: 2.5, totalEventsApplied: 17, readyToCommit: false },
      sourceMapping: 'cluster0: mongodb://u:hunter2-password@h1',
      destinationMapping: 'cluster1: h2',
      syncID: 'worker',
      coordinatorID: 'worker',
      failure: null,
      sourceWriteBlocked: false,
      commitStep: null,
      commitFailure: null,
      failureDetail: null,
      retrying: null,
      namespaces: { total: 3, copied: 1 },
      waitingFor: null,
      verification: null,
      ...this.figures,
    } as ProgressSnapshot;
  }
}

describe('GET /metrics on a worker', () => {
  let engine: SnapshotEngine;
  let api: TestApi;
  let origin: string;

  beforeEach(async () => {
    engine = new SnapshotEngine();
    api = await startTestApi(async () => engine);
    origin = api.baseUrl.replace(/\/api\/v1$/, '');
  });

  afterEach(async () => {
    await api.app.close();
  });

  async function scrape(
    query = '',
  ): Promise<{ text: string; families: Map<string, ParsedFamily> }> {
    const response = await fetch(`${origin}/metrics${query}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    return { text, families: new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f])) };
  }

  const value = (
    families: Map<string, ParsedFamily>,
    name: string,
    labels: Record<string, string> = { worker: 'worker' },
  ): number | undefined => {
    const sample = families
      .get(name)
      ?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
    return sample?.value === undefined ? undefined : Number(sample.value);
  };

  it('serves the sync figures, by worker, in the text format, with process metrics', async () => {
    await fetch(`${api.baseUrl}/start`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source: 'cluster0', destination: 'cluster1' }),
    });
    const { text, families } = await scrape();
    expect(families.get('cluster_sync_events_applied_total')?.type).toBe('COUNTER');
    expect(families.get('cluster_sync_errors_total')?.type).toBe('COUNTER');
    expect(families.get('cluster_sync_copied_bytes')?.type).toBe('GAUGE');
    expect(value(families, 'cluster_sync_copied_bytes')).toBe(1024);
    expect(value(families, 'cluster_sync_estimated_total_bytes')).toBe(4096);
    expect(value(families, 'cluster_sync_events_applied_total')).toBe(17);
    expect(value(families, 'cluster_sync_lag_seconds')).toBe(2.5);
    expect(value(families, 'cluster_sync_can_commit')).toBe(0);
    expect(value(families, 'cluster_sync_namespaces')).toBe(3);
    expect(value(families, 'cluster_sync_namespaces_copied')).toBe(1);
    expect(value(families, 'cluster_sync_state', { worker: 'worker', state: 'RUNNING' })).toBe(1);
    expect(value(families, 'cluster_sync_state', { worker: 'worker', state: 'IDLE' })).toBe(0);
    expect(families.get('cluster_sync_state')?.metrics).toHaveLength(7);
    // No verification section, no document count in this snapshot: no samples, not zeros.
    expect(families.get('cluster_sync_verification_mismatches')?.metrics ?? []).toHaveLength(0);
    expect(families.get('cluster_sync_copied_documents')?.metrics ?? []).toHaveLength(0);
    // prom-client's default metrics.
    expect(families.has('process_cpu_seconds_total')).toBe(true);
    expect(families.has('nodejs_heap_size_used_bytes')).toBe(true);
    // Every family follows the naming rules: counters end in _total, nothing else does.
    for (const family of families.values()) {
      expect(family.name).toMatch(/^[a-z_][a-z0-9_]*$/);
      if (family.name.startsWith('cluster_sync_'))
        expect(family.name.endsWith('_total')).toBe(family.type === 'COUNTER');
    }
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('mongodb://');
  });

  it('counts each failure once while it stands, and verification mismatches', async () => {
    engine.state = 'RUNNING';
    engine.figures = {
      retrying: {
        error: 'MongoNetworkError: connect ECONNREFUSED mongodb://u:hunter2-password@h1',
        retries: 2,
      },
      verification: {
        phase: 'live',
        namespacesTotal: 3,
        namespacesVerified: 1,
        mismatches: 2,
        pendingRecheck: 2,
        documentsRepaired: 4,
        samples: [{ namespace: 'db.c', problems: ['document differs'], ids: ['1'] }],
      },
    } as never;
    await scrape();
    const first = await scrape();
    const text = first.text;
    let families = first.families;
    const errors = { worker: 'worker', error: 'MongoNetworkError' };
    expect(value(families, 'cluster_sync_errors_total', errors)).toBe(1);
    expect(value(families, 'cluster_sync_verification_mismatches')).toBe(2);
    expect(value(families, 'cluster_sync_verification_documents_repaired')).toBe(4);
    expect(value(families, 'cluster_sync_verification_namespaces')).toBe(3);
    expect(value(families, 'cluster_sync_verification_namespaces_verified')).toBe(1);
    expect(
      value(families, 'cluster_sync_verification_phase', { worker: 'worker', phase: 'live' }),
    ).toBe(1);
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('document differs');

    engine.figures = {};
    await scrape();
    engine.figures = {
      retrying: { error: 'MongoNetworkError: again', retries: 1 },
      failureDetail: { error: 'HistoryLostError' },
    } as never;
    ({ families } = await scrape());
    expect(value(families, 'cluster_sync_errors_total', errors)).toBe(2);
    expect(
      value(families, 'cluster_sync_errors_total', { worker: 'worker', error: 'HistoryLost' }),
    ).toBe(1);
  });

  it("exports the verifier's backlog and a rolled-back commit (step and error, never the message)", async () => {
    engine.state = 'RUNNING';
    engine.figures = {
      verification: {
        phase: 'live',
        namespacesTotal: 3,
        namespacesVerified: 3,
        mismatches: 0,
        pendingRecheck: 0,
        samples: [],
        backlog: {
          dirtyDocuments: 42,
          dirtyRanges: 1,
          uncheckedRanges: 2,
          oldestDirtySeconds: 6.5,
        },
        caughtUp: false,
      },
      commitRollback: { step: 'sourceQuiet', error: 'SourceWritesDuringCommit' },
      warnings: ['CommitRolledBack: … insert on db.c (_id "secret-id")'],
    } as never;
    const { text, families } = await scrape();
    expect(value(families, 'cluster_sync_verification_dirty_documents')).toBe(42);
    expect(value(families, 'cluster_sync_verification_dirty_ranges')).toBe(1);
    expect(value(families, 'cluster_sync_verification_unchecked_ranges')).toBe(2);
    expect(value(families, 'cluster_sync_verification_oldest_dirty_seconds')).toBe(6.5);
    expect(value(families, 'cluster_sync_verification_caught_up')).toBe(0);
    const rollback = { worker: 'worker', step: 'sourceQuiet', error: 'SourceWritesDuringCommit' };
    expect(value(families, 'cluster_sync_commit_rolled_back', rollback)).toBe(1);
    expect(
      value(families, 'cluster_sync_errors_total', {
        worker: 'worker',
        error: 'SourceWritesDuringCommit',
      }),
    ).toBe(1);
    expect(text).not.toContain('secret-id');

    engine.figures = {};
    const after = await scrape();
    expect(after.families.get('cluster_sync_commit_rolled_back')?.metrics ?? []).toEqual([]);
  });

  it('refuses query parameters with a named error (it takes none)', async () => {
    const response = await fetch(`${origin}/metrics?format=prometheus&unknown=1`);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      success: false,
      error: 'InvalidRequest',
      errorDescription: expect.stringContaining('"unknown"') as unknown,
    });
  });

  it('is not under /api/v1, and POST is NotFound in the envelope', async () => {
    expect((await fetch(`${api.baseUrl}/metrics`)).status).toBe(404);
    const post = await fetch(`${origin}/metrics`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(post.status).toBe(404);
    expect(await post.json()).toMatchObject({ success: false, error: 'NotFound' });
  });
});

describe('GET /metrics while the engine is not ready', () => {
  it('reports INITIALIZING and still serves process metrics', async () => {
    let resolve!: (engine: FakeSyncEngine) => void;
    const api = await startTestApi(() => new Promise((done) => (resolve = done)));
    try {
      const text = await (await fetch(`${api.baseUrl.replace(/\/api\/v1$/, '')}/metrics`)).text();
      const families = new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
      const initializing = families
        .get('cluster_sync_state')
        ?.metrics.find((m) => m.labels?.state === 'INITIALIZING');
      expect(initializing?.value).toBe('1');
      expect(families.has('process_resident_memory_bytes')).toBe(true);
    } finally {
      resolve(new FakeSyncEngine()); // app.close() waits for the engine being created
      await api.app.close();
    }
  });
});
