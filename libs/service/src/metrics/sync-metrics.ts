import { SYNC_STATES } from '@sync/contracts';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { InstanceFigures } from './instance-figures';

/** Every sync metric starts with this; process metrics keep prom-client's default names. */
export const METRIC_PREFIX = 'cluster_sync_';

export interface SyncMetricsOptions {
  /** The instances to show, read once per scrape (and per error sample). */
  source: () => InstanceFigures[];
  /** prom-client's process and Node.js metrics (off in unit tests that build many registries). */
  defaultMetrics?: boolean;
}

type WorkerLabels = 'worker';

/**
 * The Prometheus registry of one worker or coordinator. Figures are read from `source` once per
 * scrape; every metric's `collect` renders that one reading, so a scrape is consistent. Errors
 * are a counter of failures *seen*: `sample()` (every second, and at each scrape) counts an error
 * name each time it starts standing on a worker.
 */
export class SyncMetrics {
  readonly registry = new Registry();
  private current: InstanceFigures[] = [];
  private readonly standing = new Map<string, Set<string>>();
  private readonly errors: Counter<'worker' | 'error'>;

  constructor(private readonly options: SyncMetricsOptions) {
    const registers = [this.registry];
    const figures = () => this.current;
    const perWorker = (
      name: string,
      help: string,
      pick: (f: InstanceFigures) => number | null | undefined,
    ) =>
      new Gauge<WorkerLabels>({
        name: METRIC_PREFIX + name,
        help,
        labelNames: ['worker'],
        registers,
        collect() {
          this.reset();
          for (const f of figures()) {
            const value = pick(f);
            if (typeof value === 'number' && Number.isFinite(value))
              this.set({ worker: f.worker }, value);
          }
        },
      });

    new Gauge<'worker' | 'state'>({
      name: `${METRIC_PREFIX}state`,
      help: 'The sync state of each worker: 1 for the current state, 0 for the others.',
      labelNames: ['worker', 'state'],
      registers,
      collect() {
        this.reset();
        for (const f of figures()) {
          if (f.state === null) continue;
          for (const s of SYNC_STATES)
            this.set({ worker: f.worker, state: s }, s === f.state ? 1 : 0);
        }
      },
    });
    perWorker('can_commit', '1 when the worker can commit (copy done, lag small enough).', (f) =>
      f.canCommit === null ? null : Number(f.canCommit),
    );
    perWorker(
      'copied_bytes',
      'Bytes of documents copied so far by the initial copy (a gauge: an abandoned partition gives its in-flight bytes back before it is read again).',
      (f) => f.copiedBytes,
    );
    perWorker(
      'estimated_total_bytes',
      'Estimated bytes the initial copy has to copy (planning estimate; the sync-wide total, not a share, on per-shard workers).',
      (f) => f.estimatedTotalBytes,
    );
    perWorker(
      'copied_documents',
      'Documents copied by the initial copy (present only when the engine reports it).',
      (f) => f.copiedDocuments,
    );
    /** A per-worker counter whose value is the figure itself (reset and set at each scrape). */
    const counter = (name: string, help: string, pick: (f: InstanceFigures) => number | null) =>
      new Counter<WorkerLabels>({
        name: METRIC_PREFIX + name,
        help,
        labelNames: ['worker'],
        registers,
        collect() {
          this.reset();
          for (const f of figures()) {
            const value = pick(f);
            if (value !== null && value >= 0) this.inc({ worker: f.worker }, value);
          }
        },
      });
    counter(
      'events_applied_total',
      'Change events applied to the destination since the change event application of this sync started (all operation types).',
      (f) => f.eventsApplied,
    );
    counter(
      'retries_total',
      'Runs of the sync restarted from the persisted state after a transient failure, since the worker process started.',
      (f) => f.retries,
    );
    counter(
      'retried_operations_total',
      'Single operations (a bulk of change events, a lookup, a checkpoint, a stream read, a copy batch) retried in place after a transient failure, since the worker process started.',
      (f) => f.retriedOperations,
    );
    perWorker(
      'lag_seconds',
      'Seconds the destination is behind the source (absent while paused or before change events are applied).',
      (f) => f.lagSeconds,
    );
    perWorker(
      'namespaces',
      'Namespaces selected for sync in the catalog.',
      (f) => f.namespaces?.total,
    );
    perWorker(
      'namespaces_copied',
      'Namespaces whose initial copy is done.',
      (f) => f.namespaces?.copied,
    );
    this.errors = new Counter<'worker' | 'error'>({
      name: `${METRIC_PREFIX}errors_total`,
      help: 'Failures seen, by error name: each time a sync failure, commit failure or retried transient error starts standing on a worker.',
      labelNames: ['worker', 'error'],
      registers,
    });
    perWorker(
      'verification_mismatches',
      'Namespaces whose last verification found the destination different from the source.',
      (f) => f.verification?.mismatches,
    );
    perWorker(
      'verification_documents_repaired',
      'Documents the live verifier found different with no write pending and had rewritten from the source, since the job started on this worker process.',
      (f) => f.verification?.documentsRepaired,
    );
    perWorker(
      'verification_namespaces',
      'Namespaces the embedded verifier has to check.',
      (f) => f.verification?.namespacesTotal,
    );
    perWorker(
      'verification_namespaces_verified',
      'Namespaces the embedded verifier has found equal.',
      (f) => f.verification?.namespacesVerified,
    );
    new Gauge<'worker' | 'phase'>({
      name: `${METRIC_PREFIX}verification_phase`,
      help: "The embedded verifier's phase (disabled, pending, live, final, passed, failed): 1 for the current one.",
      labelNames: ['worker', 'phase'],
      registers,
      collect() {
        this.reset();
        for (const f of figures())
          if (f.verification) this.set({ worker: f.worker, phase: f.verification.phase }, 1);
      },
    });
    perWorker(
      'verification_dirty_documents',
      'Documents written since the verifier last found them equal (checked alone by the live pass).',
      (f) => f.verification?.backlog?.dirtyDocuments,
    );
    perWorker(
      'verification_dirty_ranges',
      '`_id` ranges the verifier has to read again whole (writes past the dirty set caps, DDL).',
      (f) => f.verification?.backlog?.dirtyRanges,
    );
    perWorker(
      'verification_unchecked_ranges',
      'Copied `_id` ranges the verifier has not checked yet.',
      (f) => f.verification?.backlog?.uncheckedRanges,
    );
    perWorker(
      'verification_oldest_dirty_seconds',
      'Age of the oldest write the verifier has not checked (canCommit waits while it is over 10 s).',
      (f) => f.verification?.backlog?.oldestDirtySeconds,
    );
    perWorker(
      'verification_caught_up',
      '1 when the verifier has checked every copied range and every write older than 10 s.',
      (f) =>
        f.verification?.caughtUp === null || f.verification?.caughtUp === undefined
          ? null
          : Number(f.verification.caughtUp),
    );
    new Gauge<'worker' | 'step' | 'error'>({
      name: `${METRIC_PREFIX}commit_rolled_back`,
      help: 'The last commit rolled back (its checks failed before the destination opened; the source accepts writes again): 1 with the step and error name while the sync runs on.',
      labelNames: ['worker', 'step', 'error'],
      registers,
      collect() {
        this.reset();
        for (const f of figures())
          if (f.commitRollback)
            this.set(
              { worker: f.worker, step: f.commitRollback.step, error: f.commitRollback.error },
              1,
            );
      },
    });
    perWorker(
      'worker_up',
      'Coordinator only: 1 when the worker reported within the stale limit, 0 when it is missing.',
      (f) => (f.up === undefined ? null : Number(f.up)),
    );
    perWorker(
      'worker_last_report_age_seconds',
      "Coordinator only: seconds since the worker's last report to Redis.",
      (f) => f.lastReportAgeSeconds,
    );
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Reads the figures once and counts error names that started standing since the last read. */
  sample(): InstanceFigures[] {
    try {
      this.current = this.options.source();
    } catch {
      // A source that cannot be read (the coordinator's Redis) keeps its last figures.
    }
    for (const f of this.current) {
      const before = this.standing.get(f.worker) ?? new Set<string>();
      for (const name of f.failures)
        if (!before.has(name)) this.errors.inc({ worker: f.worker, error: name });
      this.standing.set(f.worker, new Set(f.failures));
    }
    return this.current;
  }

  /** The text exposition format of everything: sync figures, error counts, process metrics. */
  async metrics(): Promise<string> {
    this.sample();
    return this.registry.metrics();
  }
}
