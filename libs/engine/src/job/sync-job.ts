import {
  ApiError,
  assertOperationAllowed,
  checkTopologyRules,
  wrongStateError,
  type ClusterShape,
  type Progress,
  type StartRequest,
  type SyncState,
} from '@sync/contracts';
import { CopyTally } from '../copy/copy-tally';
import { Copier, DEFAULT_COPIER, type CopierOptions } from '../copy/copier';
import {
  DEFAULT_PARTITIONING,
  planPartitions,
  type PartitioningOptions,
} from '../copy/partition-planner';
import { NamespaceFilter } from '../namespaces/namespace-filter';
import { UnsafeRegexError } from '../namespaces/safe-regex';
import { planSync } from '../plan/planner';
import {
  DestinationNotEmptyError,
  assertDestinationEmpty,
  prepareDestination,
} from '../prepare/destination-preparer';
import { sameCluster, type ClusterDescription } from '../ports/cluster-description';
import type { ClusterDirectory } from '../ports/cluster-directory';
import { systemClock, type Clock } from '../ports/clock';
import type { EngineLogger } from '../ports/engine-logger';
import type { JobRecord, NamespaceRecord, PartitionRecord, PersistedJob } from '../ports/job-store';
import type { SyncEngine } from '../sync-engine';
import type { ChangeApplication, PhaseContext, SyncPhases } from './phases';
import { buildProgress, copyFigures } from './progress-report';

export interface SyncJobOptions {
  clusters: ClusterDirectory;
  logger: EngineLogger;
  /** This instance's id (`--id`); a lone instance defaults to "worker". */
  syncID?: string;
  /** Set when another instance coordinates this one; defaults to syncID (alone or coordinator). */
  coordinatorID?: string;
  clock?: Clock;
  copier?: Partial<CopierOptions>;
  partitioning?: Partial<PartitioningOptions>;
  /** Topology rules of the start request (throws ApiError); defaults to @sync/contracts' rules. */
  checkTopology?: (request: StartRequest, source: ClusterShape, destination: ClusterShape) => void;
  phases?: SyncPhases;
  /** Called once when the job fails in the background (the worker logs and exits). */
  onFatal?: (error: Error) => void;
  /** Scrubs secrets from failure texts shown in progress (the adapters know the URIs). */
  redact?: (text: string) => string;
  /** Releases adapter resources (client connections) on close. */
  onClose?: () => Promise<void>;
  /** Pause between retries of the boot-time restore while a cluster is unreachable. */
  restoreRetryMs?: number;
}

interface Active {
  job: JobRecord;
  namespaces: NamespaceRecord[];
  partitions: PartitionRecord[] | null;
  sourceHost: string;
  destinationHost: string;
}

/**
 * The state machine of one sync instance (SPEC §3):
 * INITIALIZING → IDLE → RUNNING ⇄ PAUSED → COMMITTING → COMMITTED (→ REVERSING → RUNNING).
 * RUNNING drives the copy phases (prepare → partition → copy) in the background, with change
 * application (when plugged in) running from T0 concurrently with the copy. Every step is
 * persisted on the destination before the next starts, so a restart continues where it stopped.
 */
export class SyncJob implements SyncEngine {
  private current: SyncState = 'INITIALIZING';
  private active: Active | null = null;
  private starting = false;
  private tally = new CopyTally();
  private copyStarted = false;
  private controller: AbortController | null = null;
  private background: Promise<void> = Promise.resolve();
  private changeApplication: ChangeApplication | null = null;
  private writable = false;
  private failure: Error | null = null;
  private fatalInit: ApiError | null = null;
  private closed = false;
  private readonly syncID: string;
  private readonly clock: Clock;
  private readonly logger: EngineLogger;

  constructor(private readonly options: SyncJobOptions) {
    this.syncID = options.syncID ?? 'worker';
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger;
  }

  get state(): SyncState {
    return this.current;
  }

  /**
   * Boot: finds this instance's persisted job on one of the launched clusters and restores it,
   * retrying while a cluster is unreachable. Rejects (permanently) with JobClusterMismatch when
   * the job belongs to other clusters; the engine then stays INITIALIZING and answers that error.
   */
  async initialize(): Promise<void> {
    for (;;) {
      try {
        await this.restore();
        return;
      } catch (error) {
        if (error instanceof ApiError) {
          this.fatalInit = error;
          this.logger.error('cannot resume the persisted sync', {
            error: error.error,
            description: error.message,
          });
          throw error;
        }
        if (this.closed) throw error;
        this.logger.warn('restoring the sync state failed; retrying', {
          error: describeError(error),
        });
        if (this.closed) throw error;
        await this.clock.sleep(this.options.restoreRetryMs ?? 5_000);
      }
    }
  }

  async start(request: StartRequest): Promise<void> {
    this.assertInitialized('start');
    if (this.starting) throw wrongStateError('start', 'RUNNING');
    assertOperationAllowed('start', this.current);
    this.starting = true;
    try {
      await this.startJob(request);
    } finally {
      this.starting = false;
    }
  }

  progress(): Progress {
    if (this.fatalInit) throw this.fatalInit;
    if (this.current === 'INITIALIZING') {
      throw new ApiError('NotReady', 'The instance is restoring its sync state; retry shortly.');
    }
    const active = this.active;
    if (this.current === 'IDLE' || !active) return buildProgress(this.progressInputs(null));
    return buildProgress(this.progressInputs(active));
  }

  async pause(): Promise<void> {
    this.assertInitialized('pause');
    assertOperationAllowed('pause', this.current);
    await this.stopBackground();
    await this.transition('PAUSED');
    this.logger.info('sync paused');
  }

  async resume(): Promise<void> {
    this.assertInitialized('resume');
    assertOperationAllowed('resume', this.current);
    await this.transition('RUNNING');
    this.launch();
    this.logger.info('sync resumed');
  }

  async commit(): Promise<void> {
    this.assertInitialized('commit');
    assertOperationAllowed('commit', this.current);
    const committer = this.options.phases?.commit;
    if (!committer) {
      throw new ApiError(
        'InvalidState',
        'commit is not available in state RUNNING: this build has no change event application yet, so the destination cannot be brought to a commit point.',
      );
    }
    if (!this.canCommit()) {
      throw new ApiError(
        'CommitNotReady',
        'commit needs canCommit: the copy must be done and change events applied with small lag.',
      );
    }
    await this.transition('COMMITTING');
    await committer.commit(
      this.phaseContext(this.controller?.signal ?? new AbortController().signal),
      () => {
        this.writable = true;
      },
    );
    this.writable = true;
    await this.stopBackground();
    await this.transition('COMMITTED');
  }

  async reverse(): Promise<void> {
    this.assertInitialized('reverse');
    assertOperationAllowed('reverse', this.current);
    if (!this.active?.job.request.reversible) {
      throw new ApiError(
        'ReverseNotAllowed',
        'reverse needs a committed sync that was started with reversible: true.',
      );
    }
    const reverser = this.options.phases?.commit?.reverse;
    if (!reverser) {
      throw new ApiError(
        'InvalidState',
        'reverse is not available in state COMMITTED: this build has no reverse support yet.',
      );
    }
    await this.transition('REVERSING');
    await reverser.call(
      this.options.phases!.commit,
      this.phaseContext(new AbortController().signal),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.stopBackground();
    await this.options.onClose?.();
  }

  /** Resolves when background work settles (tests; also used by pause). */
  async idle(): Promise<void> {
    await this.background;
  }

  // ---- start ----------------------------------------------------------------------------------

  private async startJob(request: StartRequest): Promise<void> {
    const { clusters } = this.options;
    for (const name of [request.source, request.destination]) {
      if (!clusters.names().includes(name)) {
        throw new ApiError(
          'UnknownCluster',
          `cluster ${JSON.stringify(name)} was not configured at launch.`,
        );
      }
    }
    if (request.source === request.destination) {
      throw new ApiError(
        'SameSourceAndDestination',
        'source and destination must be different clusters.',
      );
    }
    let filter: NamespaceFilter;
    try {
      filter = new NamespaceFilter(request.includeNamespaces, request.excludeNamespaces);
    } catch (error) {
      if (error instanceof UnsafeRegexError) throw new ApiError('InvalidRequest', error.message);
      throw error;
    }
    const source = clusters.source(request.source);
    const destination = clusters.destination(request.destination);
    const [sourceInfo, destinationInfo] = await Promise.all([
      source.describe(),
      destination.describe(),
    ]);
    (this.options.checkTopology ?? checkTopologyRules)(
      request,
      shapeOf(sourceInfo),
      shapeOf(destinationInfo),
    );
    if (request.sharding) {
      this.logger.warn(
        'sharding entries are accepted but destination sharding is not implemented in the copy phase yet',
      );
    }

    const plan = await planSync(source, filter, this.syncID, this.logger);
    try {
      await assertDestinationEmpty(destination, plan.namespaces);
    } catch (error) {
      if (error instanceof DestinationNotEmptyError)
        throw new ApiError('DestinationNotEmpty', error.message);
      throw error;
    }
    const now = new Date(this.clock.now());
    const job: JobRecord = {
      _id: this.syncID,
      request,
      state: 'RUNNING',
      phase: 'planned',
      t0: plan.t0,
      estimatedTotalBytes: plan.estimatedTotalBytes,
      source: { name: request.source, fingerprint: sourceInfo.fingerprint },
      destination: { name: request.destination, fingerprint: destinationInfo.fingerprint },
      createdAt: now,
      updatedAt: now,
    };
    const store = clusters.jobStore(request.destination);
    // The plan is written before the job: a job document always implies its complete plan.
    await store.saveNamespaces(plan.namespaces);
    await store.saveJob(job);
    this.active = {
      job,
      namespaces: plan.namespaces,
      partitions: null,
      sourceHost: sourceInfo.displayHost,
      destinationHost: destinationInfo.displayHost,
    };
    this.tally = new CopyTally();
    this.copyStarted = false;
    this.current = 'RUNNING';
    this.logger.info('sync started', { source: request.source, destination: request.destination });
    this.launch();
  }

  // ---- restore --------------------------------------------------------------------------------

  private async restore(): Promise<void> {
    const { clusters } = this.options;
    const found: Array<{ name: string; persisted: PersistedJob }> = [];
    for (const name of clusters.names()) {
      const persisted = await clusters.jobStore(name).load();
      if (persisted) found.push({ name, persisted });
    }
    if (found.length === 0) {
      this.current = 'IDLE';
      this.logger.info('no persisted sync; IDLE');
      return;
    }
    // After a reverse both clusters may hold metadata; the most recently updated one wins.
    found.sort((a, b) => b.persisted.job.updatedAt.getTime() - a.persisted.job.updatedAt.getTime());
    const { name, persisted } = found[0]!;
    const { job } = persisted;
    if (job.destination.name !== name || !clusters.names().includes(job.source.name)) {
      throw mismatch(
        `the persisted sync (${job.source.name} → ${job.destination.name}) was found on cluster ${name}`,
      );
    }
    const [sourceInfo, destinationInfo] = await Promise.all([
      clusters.source(job.source.name).describe(),
      clusters.destination(job.destination.name).describe(),
    ]);
    if (!sameCluster(job.source.fingerprint, sourceInfo.fingerprint)) {
      throw mismatch(`cluster ${job.source.name} is not the source the sync was started with`);
    }
    if (!sameCluster(job.destination.fingerprint, destinationInfo.fingerprint)) {
      throw mismatch(
        `cluster ${job.destination.name} is not the destination the sync was started with`,
      );
    }
    const partitions =
      job.phase === 'partitioned' || job.phase === 'copied' ? persisted.partitions : null;
    this.active = {
      job,
      namespaces: persisted.namespaces,
      partitions,
      sourceHost: sourceInfo.displayHost,
      destinationHost: destinationInfo.displayHost,
    };
    const doneBytes = (partitions ?? [])
      .filter((p) => p.status === 'done')
      .reduce((s, p) => s + p.copiedBytes, 0);
    this.tally = new CopyTally(doneBytes);
    this.copyStarted = partitions !== null;
    this.current = job.state;
    this.writable = job.state === 'COMMITTED';
    this.logger.info('persisted sync restored', { state: job.state, phase: job.phase });
    if (this.current === 'RUNNING') this.launch();
  }

  // ---- background phases ----------------------------------------------------------------------

  private launch(): void {
    const controller = new AbortController();
    this.controller = controller;
    this.failure = null;
    this.background = this.runPhases(controller.signal).catch((error: unknown) => {
      this.fail(error);
      controller.abort(); // stop the other phase too: a failed sync must not half-run
    });
  }

  private async stopBackground(): Promise<void> {
    this.controller?.abort();
    await this.background;
    this.controller = null;
  }

  private async runPhases(signal: AbortSignal): Promise<void> {
    const active = this.active!;
    const { job } = active;
    const { clusters } = this.options;
    const source = clusters.source(job.source.name);
    const destination = clusters.destination(job.destination.name);
    const store = clusters.jobStore(job.destination.name);

    if (job.phase === 'planned') {
      active.namespaces = await prepareDestination(
        destination,
        job.request,
        active.namespaces,
        this.logger,
      );
      await store.saveNamespaces(active.namespaces);
      await this.advance('prepared');
    }
    if (signal.aborted) return;

    const ceaDone = this.startChangeApplication(signal);

    if (job.phase === 'prepared') {
      const partitioning = { ...DEFAULT_PARTITIONING, ...this.options.partitioning };
      const partitions: PartitionRecord[] = [];
      for (const ns of active.namespaces) {
        if (signal.aborted) return;
        partitions.push(...(await planPartitions(source, ns, partitioning)));
      }
      await store.savePartitions(partitions);
      active.partitions = partitions;
      await this.advance('partitioned');
    }
    if (job.phase === 'partitioned') {
      this.copyStarted = true;
      const copier = new Copier(source, destination, store, this.tally, this.logger, {
        ...DEFAULT_COPIER,
        ...this.options.copier,
      });
      const outcome = await copier.run(active.partitions ?? [], signal);
      if (outcome === 'aborted') return;
      await this.advance('copied');
      this.logger.info('collection copy done', { copiedBytes: this.tally.copiedBytes });
    }
    await ceaDone;
  }

  private startChangeApplication(signal: AbortSignal): Promise<void> {
    const factory = this.options.phases?.changeApplication;
    if (!factory) return Promise.resolve();
    const cea = factory();
    this.changeApplication = cea;
    return cea.run(this.phaseContext(signal)).catch((error: unknown) => {
      this.fail(error);
      this.controller?.abort();
    });
  }

  private async advance(phase: JobRecord['phase']): Promise<void> {
    const active = this.active!;
    active.job.phase = phase;
    await this.persistJob();
  }

  private async transition(state: SyncState): Promise<void> {
    this.current = state;
    if (this.active) {
      this.active.job.state = state;
      await this.persistJob();
    }
  }

  private async persistJob(): Promise<void> {
    const active = this.active!;
    active.job.updatedAt = new Date(this.clock.now());
    await this.options.clusters.jobStore(active.job.destination.name).saveJob(active.job);
  }

  private fail(error: unknown): void {
    if (this.failure) return;
    const failure = error instanceof Error ? error : new Error(String(error));
    this.failure = failure;
    this.logger.error('sync failed', { error: describeError(failure) });
    this.options.onFatal?.(failure);
  }

  // ---- progress inputs ------------------------------------------------------------------------

  private copyDone(): boolean {
    return this.active?.job.phase === 'copied';
  }

  private canCommit(): boolean {
    if (this.current !== 'RUNNING' || !this.copyDone() || this.failure) return false;
    return (
      this.changeApplication?.status().readyToCommit === true &&
      this.options.phases?.commit !== undefined
    );
  }

  private progressInputs(active: Active | null): Parameters<typeof buildProgress>[0] {
    const job = active?.job;
    return {
      state: this.current,
      canCommit: this.canCommit(),
      // Writes on the destination are only safe once the commit made it final (SEED-API §2.5:
      // "writes must not be made while false"), whether or not write blocking enforces it.
      canWrite: this.writable,
      copyStarted: this.copyStarted,
      copyDone: this.copyDone(),
      estimatedTotalBytes: job?.estimatedTotalBytes ?? 0,
      copiedBytes: this.tally.copiedBytes,
      changeApplication: this.changeApplication?.status() ?? null,
      sourceMapping: `${job?.source.name}: ${active?.sourceHost}`,
      destinationMapping: `${job?.destination.name}: ${active?.destinationHost}`,
      syncID: this.syncID,
      coordinatorID: this.options.coordinatorID ?? this.syncID,
      failure: this.failure ? (this.options.redact ?? String)(describeError(this.failure)) : null,
    };
  }

  private phaseContext(signal: AbortSignal): PhaseContext {
    const active = this.active!;
    const { clusters } = this.options;
    return {
      job: active.job,
      t0: active.job.t0,
      namespaces: active.namespaces,
      source: clusters.source(active.job.source.name),
      destination: clusters.destination(active.job.destination.name),
      store: clusters.jobStore(active.job.destination.name),
      logger: this.logger,
      signal,
      copyDone: () => this.copyDone(),
      saveExtension: async (key, value) => {
        active.job.extensions = { ...active.job.extensions, [key]: value };
        await this.persistJob();
      },
    };
  }

  private assertInitialized(operation: 'start' | 'pause' | 'resume' | 'commit' | 'reverse'): void {
    if (this.fatalInit) throw this.fatalInit;
    if (this.current === 'INITIALIZING') throw wrongStateError(operation, 'INITIALIZING');
  }
}

/** Used by tests and the figures the coordinator merges. */
export { copyFigures };

function shapeOf(info: ClusterDescription): ClusterShape {
  return { kind: info.kind, shardCount: info.shardCount };
}

function mismatch(detail: string): ApiError {
  return new ApiError(
    'JobClusterMismatch',
    `${detail}; refusing to resume it. Relaunch with the original clusters.`,
  );
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
