import type { Timestamp } from 'bson';
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
import {
  ChangeStreamInvalidatedError,
  HistoryLostError,
  UnsupportedEventError,
} from '../apply/errors';
import type { ApplyListener, DdlNotice, DdlScope } from '../apply/ports';
import { compareTimestamps } from '../apply/timestamps';
import type { Namespace } from '../apply/change-event';
import { CopyTally } from '../copy/copy-tally';
import { Copier, DEFAULT_COPIER, type CopierOptions } from '../copy/copier';
import {
  DEFAULT_PARTITIONING,
  planPartitions,
  type PartitioningOptions,
} from '../copy/partition-planner';
import { NamespaceFilter } from '../namespaces/namespace-filter';
import { UnsafeRegexError } from '@sync/contracts';
import { namespaceId, planSync } from '../plan/planner';
import {
  DestinationNotEmptyError,
  assertDestinationEmpty,
  prepareCollection,
  prepareDestination,
} from '../prepare/destination-preparer';
import { restoreRelaxedIndexes } from '../prepare/index-restorer';
import { sameCluster, type ClusterDescription } from '../ports/cluster-description';
import type { ClusterDirectory } from '../ports/cluster-directory';
import { systemClock, type Clock } from '../ports/clock';
import type { EngineLogger } from '../ports/engine-logger';
import type {
  JobRecord,
  NamespaceRecord,
  PartitionRecord,
  PersistedJob,
  RelaxedIndex,
} from '../ports/job-store';
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
  /** Test hook: awaited after each persisted commit step (lets tests "crash" mid-commit). */
  onCommitStep?: (step: CommitStep) => Promise<void>;
}

/** Commit steps in order; each is persisted (job.extensions.commit) once done. */
export const COMMIT_STEPS = [
  'started',
  'sourceBlocked',
  'pointTaken',
  'drained',
  'indexesRestored',
  'destinationTimeTaken',
  'done',
] as const;
export type CommitStep = (typeof COMMIT_STEPS)[number];

export interface CommitProgress {
  step: CommitStep;
  /** Source time (an oplog note written after the source was blocked) to apply up to. */
  commitPoint?: Timestamp;
  /** Destination time before it accepted user writes: a reverse sync reads from here. */
  destinationTime?: Timestamp;
}

/** What SyncJob persists in `job.extensions` (SPEC §4.7: all state on the destination). */
export interface JobExtensions {
  /** The current change-application pass: its checkpoint key and where it starts. */
  cea?: { generation: number; startAt: Timestamp };
  /**
   * Earliest source time a pending re-copy (rename/needsCopy while the copy was done) may
   * read from; the drain pass after that copy starts here. Absent: T0.
   */
  copyEpochStart?: Timestamp;
  commit?: CommitProgress;
  /** Completed reverses (part of the checkpoint key, so each direction starts fresh). */
  reversals?: number;
  /** Set on the job written to the new destination by a reverse (post-swap record). */
  reversed?: boolean;
  /** A failure the sync cannot continue past (history lost...): shown, never skipped. */
  failure?: { error: string; message: string; at: Date };
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
 *
 *   INITIALIZING → IDLE --start--> RUNNING ⇄ PAUSED (pause/resume)
 *   RUNNING --commit (canCommit)--> COMMITTING --(automatic)--> COMMITTED
 *   COMMITTED --reverse (reversible)--> REVERSING --(automatic)--> RUNNING (roles swapped)
 *
 * RUNNING drives prepare → partition → copy in the background while change application runs
 * from T0 concurrently. When a copy completes, change application restarts from the copy's start
 * (the "drain" pass): events applied while a copy write was in flight could have been overtaken
 * by it, and replaying them on the now-complete copy makes every document converge. DDL notices
 * keep the plan consistent (drop → partitions retired; rename / rename-into-filter → the target
 * is re-copied from the source). Every step is persisted on the destination first, so a restart
 * (or a crash) continues where it stopped. A fatal failure is logged, reported through onFatal and
 * shown in progress (`failure`, `error`); the state is left as it was (no FAILED state in the API),
 * and a failure the sync can never get past (history lost) is persisted so that a restart shows it
 * instead of resuming.
 */
export class SyncJob implements SyncEngine {
  private current: SyncState = 'INITIALIZING';
  private active: Active | null = null;
  private starting = false;
  private operating = false;
  private tally = new CopyTally();
  private copyStarted = false;
  private controller: AbortController | null = null;
  private background: Promise<void> = Promise.resolve();
  private changeApplication: ChangeApplication | null = null;
  private ceaController: AbortController | null = null;
  private ceaDone: Promise<void> = Promise.resolve();
  private eventsBefore = 0;
  private copier: Copier | null = null;
  private frozen: DdlScope[] = [];
  private retired = new Set<PartitionRecord>();
  private copyDirty = false;
  private kick: (() => void) | null = null;
  private commitRun: Promise<void> | null = null;
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
    const progress = buildProgress(this.progressInputs(active));
    if (this.failure) progress.error = errorNameOf(this.failure);
    return progress;
  }

  async pause(): Promise<void> {
    this.assertInitialized('pause');
    assertOperationAllowed('pause', this.current);
    await this.exclusive(async () => {
      assertOperationAllowed('pause', this.current);
      await this.stopBackground();
      await this.transition('PAUSED');
      this.logger.info('sync paused');
    });
  }

  async resume(): Promise<void> {
    this.assertInitialized('resume');
    assertOperationAllowed('resume', this.current);
    this.assertNotFailed('resume');
    await this.exclusive(async () => {
      assertOperationAllowed('resume', this.current);
      await this.transition('RUNNING');
      this.launch();
      this.logger.info('sync resumed');
    });
  }

  /**
   * SPEC §4.5. Returns once COMMITTING is persisted; the commit then runs in the background
   * (progress: info `waiting for commit to complete`, then COMMITTED / `commit completed`).
   */
  async commit(): Promise<void> {
    this.assertInitialized('commit');
    assertOperationAllowed('commit', this.current);
    if (!this.options.phases?.changeApplication) {
      throw new ApiError(
        'InvalidState',
        'commit is not available in state RUNNING: this build has no change event application, so the destination cannot be brought to a commit point.',
      );
    }
    if (!this.canCommit()) {
      throw new ApiError(
        'CommitNotReady',
        this.failure
          ? `commit is not possible: the sync failed (${this.failureText()}).`
          : 'commit needs canCommit: the copy must be done and change events applied with small lag.',
      );
    }
    await this.exclusive(async () => {
      assertOperationAllowed('commit', this.current);
      this.ext().commit = { step: 'started' };
      await this.transition('COMMITTING');
      this.logger.info('commit started');
      this.startCommit();
    });
  }

  /** SPEC §4.6: swap roles and follow the old destination's changes from the commit point. */
  async reverse(): Promise<void> {
    this.assertInitialized('reverse');
    assertOperationAllowed('reverse', this.current);
    const request = this.active?.job.request;
    if (!request?.reversible || !request.enableUserWriteBlocking) {
      throw new ApiError(
        'ReverseNotAllowed',
        'reverse needs a committed sync that was started with reversible: true (and enableUserWriteBlocking: true).',
      );
    }
    if (!this.options.phases?.changeApplication) {
      throw new ApiError(
        'InvalidState',
        'reverse is not available in state COMMITTED: this build has no change event application.',
      );
    }
    if (!this.ext().commit?.destinationTime) {
      throw new ApiError(
        'ReverseNotAllowed',
        'the commit did not record the destination time a reverse starts from.',
      );
    }
    await this.exclusive(async () => {
      assertOperationAllowed('reverse', this.current);
      await this.transition('REVERSING');
      await this.runReverse();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.stopBackground();
    await this.commitRun?.catch(() => undefined);
    await this.options.onClose?.();
  }

  /**
   * Resolves when background work settles: the copy when there is no change application, a
   * running commit, or after pause/close. (With change application, RUNNING never settles.)
   */
  async idle(): Promise<void> {
    await this.background;
    await this.commitRun?.catch(() => undefined);
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
    if (request.reversible && request.buildIndexes === 'never') {
      throw new ApiError(
        'NeverWithReversible',
        'buildIndexes "never" cannot be combined with reversible: true.',
      );
    }
    if (request.reversible && !request.enableUserWriteBlocking) {
      throw new ApiError(
        'ReversibleRequiresWriteBlocking',
        'reversible: true requires enableUserWriteBlocking: true.',
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
      extensions: {},
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
    job.extensions ??= {};
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
    const ext = this.ext();
    this.writable =
      job.state === 'COMMITTED' || (job.state === 'COMMITTING' && ext.commit?.step === 'done');
    this.logger.info('persisted sync restored', { state: job.state, phase: job.phase });
    if (ext.failure) {
      const failure = new Error(ext.failure.message);
      failure.name = ext.failure.error;
      this.failure = failure;
      this.logger.error('the persisted sync failed earlier and cannot continue', {
        error: ext.failure.error,
        description: ext.failure.message,
      });
      return;
    }
    if (this.current === 'RUNNING') this.launch();
    if (this.current === 'COMMITTING') {
      const step = ext.commit?.step ?? 'started';
      if (stepIndex(step) < stepIndex('drained')) this.launch();
      this.startCommit();
    }
    if (this.current === 'REVERSING') await this.runReverse();
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
    await this.ceaDone;
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

    this.startChangeApplication(signal);

    if (job.phase === 'prepared') {
      const partitions: PartitionRecord[] = [];
      for (const ns of active.namespaces) {
        if (signal.aborted) return;
        partitions.push(...(await planPartitions(source, ns, this.partitioning())));
      }
      await store.savePartitions(partitions);
      active.partitions = partitions;
      await this.advance('partitioned');
    }

    const copier = new Copier(source, destination, store, this.tally, this.logger, {
      ...DEFAULT_COPIER,
      ...this.options.copier,
    });
    this.copier = copier;
    try {
      while (!signal.aborted) {
        if (job.phase === 'partitioned') {
          this.copyStarted = true;
          this.copyDirty = false;
          const outcome = await copier.run(active.partitions ?? [], signal, (p) =>
            this.isRetired(p),
          );
          if (outcome === 'aborted' || signal.aborted) break;
          const pending = (active.partitions ?? []).some((p) => p.status !== 'done');
          if (this.copyDirty || pending || this.frozen.length > 0) {
            await this.waitForWork(signal, 100);
            continue;
          }
          await this.finishCopy(signal);
          continue;
        }
        if (!this.options.phases?.changeApplication) break;
        await this.waitForWork(signal);
      }
    } finally {
      this.copier = null;
    }
    // Change application ends with the same signal; its passes may have been replaced.
    for (;;) {
      const done = this.ceaDone;
      await done;
      if (done === this.ceaDone) break;
    }
  }

  /** Copy complete: persist it and start the drain pass from the copy's start. */
  private async finishCopy(signal: AbortSignal): Promise<void> {
    const { job } = this.active!;
    const ext = this.ext();
    if (this.options.phases?.changeApplication) {
      const startAt = ext.copyEpochStart ?? job.t0;
      ext.cea = { generation: (ext.cea?.generation ?? 0) + 1, startAt };
      delete ext.copyEpochStart;
      job.phase = 'copied';
      await this.persistJob();
      this.logger.info('collection copy done; replaying change events from the copy start', {
        copiedBytes: this.tally.copiedBytes,
        from: startAt.toString(),
      });
      await this.restartChangeApplication(signal);
    } else {
      await this.advance('copied');
      this.logger.info('collection copy done', { copiedBytes: this.tally.copiedBytes });
    }
  }

  private startChangeApplication(jobSignal: AbortSignal): void {
    const factory = this.options.phases?.changeApplication;
    if (!factory || jobSignal.aborted) return;
    const controller = new AbortController();
    const signal = AbortSignal.any([jobSignal, controller.signal]);
    if (this.changeApplication) {
      this.eventsBefore += this.changeApplication.status().totalEventsApplied ?? 0;
    }
    const cea = factory();
    this.changeApplication = cea;
    this.ceaController = controller;
    const pass = this.ext().cea ?? { generation: 0, startAt: this.active!.job.t0 };
    this.ceaDone = cea.run(this.phaseContext(signal, pass)).catch((error: unknown) => {
      if (controller.signal.aborted && !jobSignal.aborted) return; // replaced by a new pass
      this.fail(error);
      this.controller?.abort();
    });
  }

  private async restartChangeApplication(jobSignal: AbortSignal): Promise<void> {
    this.ceaController?.abort();
    await this.ceaDone;
    this.startChangeApplication(jobSignal);
  }

  private async waitForWork(signal: AbortSignal, timeoutMs = 60_000): Promise<void> {
    const woken = new AbortController();
    this.kick = () => woken.abort();
    try {
      await this.clock.sleep(timeoutMs, AbortSignal.any([signal, woken.signal]));
    } finally {
      this.kick = null;
    }
  }

  private wake(): void {
    this.copyDirty = true;
    this.kick?.();
  }

  private partitioning(): PartitioningOptions {
    return { ...DEFAULT_PARTITIONING, ...this.options.partitioning };
  }

  // ---- DDL notices: keep the plan and partitions consistent -----------------------------------

  private listener(): ApplyListener {
    return {
      beforeDdl: async (scopes) => {
        this.frozen.push(...scopes);
        await this.copier?.cancel((p) => inScopes(scopes, p.database, p.collection));
      },
      afterDdl: async (scopes) => {
        this.frozen = this.frozen.filter((s) => !scopes.includes(s));
        this.wake();
      },
      onDdl: (notice) => this.onDdl(notice),
    };
  }

  private isRetired(p: PartitionRecord): boolean {
    return this.retired.has(p) || inScopes(this.frozen, p.database, p.collection);
  }

  private async onDdl(notice: DdlNotice): Promise<void> {
    switch (notice.kind) {
      case 'created':
        return;
      case 'dropped':
        await this.forgetNamespace(notice.ns);
        return;
      case 'renamed':
        this.logger.info('collection renamed on the source; re-copying its new name', {
          from: `${notice.from.db}.${notice.from.coll}`,
          to: `${notice.to.db}.${notice.to.coll}`,
        });
        await this.forgetNamespace(notice.from);
        await this.recopy(notice.to);
        return;
      case 'needsCopy':
        await this.recopy(notice.ns);
        return;
      case 'indexesRelaxed':
        await this.updateRelaxed(notice.ns, (list) => {
          const names = new Set(notice.relaxed.map((r) => r.name));
          return [...list.filter((r) => !names.has(r.name)), ...notice.relaxed];
        });
        return;
      case 'indexesDropped':
        await this.updateRelaxed(notice.ns, (list) =>
          list.filter((r) => !notice.names.includes(r.name)),
        );
        return;
      case 'indexChanged': {
        const change = notice.index;
        await this.updateRelaxed(notice.ns, (list) => {
          const out = [...list];
          let entry = out.find(
            (r) =>
              (change.name !== undefined && r.name === change.name) ||
              (change.keyPattern !== undefined &&
                JSON.stringify(r.original.key) === JSON.stringify(change.keyPattern)),
          );
          if (!entry) {
            if (change.name === undefined) return out;
            entry = {
              name: change.name,
              original: { name: change.name, key: change.keyPattern ?? {} },
              relaxedUnique: false,
              relaxedHidden: false,
              relaxedExpireAfterSeconds: false,
            };
            out.push(entry);
          }
          const original = { ...entry.original };
          if (change.unique !== undefined) original.unique = change.unique;
          if (change.hidden !== undefined) original.hidden = change.hidden;
          if (change.expireAfterSeconds !== undefined)
            original.expireAfterSeconds = change.expireAfterSeconds;
          Object.assign(entry, {
            original,
            relaxedUnique: original.unique === true,
            relaxedHidden: original.hidden === true,
            relaxedExpireAfterSeconds: original.expireAfterSeconds !== undefined,
          });
          return out;
        });
        return;
      }
    }
  }

  /** The namespace left the sync (dropped, or renamed away): retire its record and partitions. */
  private async forgetNamespace(ns: Namespace): Promise<void> {
    const active = this.active!;
    const store = this.options.clusters.jobStore(active.job.destination.name);
    const id = namespaceId(this.syncID, ns.db, ns.coll);
    const had = active.namespaces.some((n) => n._id === id);
    active.namespaces = active.namespaces.filter((n) => n._id !== id);
    if (had) await store.deleteNamespaces([id]);
    if (active.partitions) {
      const [gone, kept] = partitionBy(
        active.partitions,
        (p) => p.database === ns.db && p.collection === ns.coll,
      );
      if (gone.length > 0) {
        gone.forEach((p) => this.retired.add(p));
        active.partitions = kept;
        await store.savePartitions(kept);
        this.wake();
      }
    }
  }

  /**
   * Copies a collection again from the source (it was renamed, or renamed into the filter):
   * dropped on the destination, re-created with the source's options and relaxed indexes, and
   * given fresh partitions. The copy loop picks them up; the drain pass after it starts no later
   * than now. A collection the source no longer has is left to the events that follow.
   */
  private async recopy(ns: Namespace): Promise<void> {
    const active = this.active!;
    const { job } = active;
    const { clusters } = this.options;
    const source = clusters.source(job.source.name);
    const destination = clusters.destination(job.destination.name);
    const store = clusters.jobStore(job.destination.name);
    const info = (await source.listCollections(ns.db)).find((c) => c.name === ns.coll);
    if (!info || info.type !== 'collection') return;
    const epoch = await source.clusterTime();
    const ext = this.ext();
    if (job.phase === 'copied') {
      ext.copyEpochStart =
        ext.copyEpochStart && compareTimestamps(ext.copyEpochStart, epoch) < 0
          ? ext.copyEpochStart
          : epoch;
      job.phase = 'partitioned';
    }
    await this.forgetNamespace(ns);
    await destination.dropCollection(ns.db, ns.coll);
    const [indexes, stats] = await Promise.all([
      source.listIndexes(ns.db, ns.coll),
      source.collectionStats(ns.db, ns.coll),
    ]);
    const record = await prepareCollection(
      destination,
      job.request.buildIndexes,
      {
        _id: namespaceId(this.syncID, ns.db, ns.coll),
        syncID: this.syncID,
        database: ns.db,
        collection: ns.coll,
        type: 'collection',
        options: info.options,
        indexes,
        relaxedIndexes: [],
        estimatedBytes: stats.bytes,
        estimatedCount: stats.count,
        capped: info.options.capped === true,
      },
      this.logger,
    );
    active.namespaces.push(record);
    await store.saveNamespaces([record]);
    if (active.partitions) {
      active.partitions.push(...(await planPartitions(source, record, this.partitioning())));
      await store.savePartitions(active.partitions);
    }
    await this.persistJob();
    this.wake();
  }

  private async updateRelaxed(
    ns: Namespace,
    change: (list: RelaxedIndex[]) => RelaxedIndex[],
  ): Promise<void> {
    const active = this.active!;
    const id = namespaceId(this.syncID, ns.db, ns.coll);
    let record = active.namespaces.find((n) => n._id === id);
    if (!record) {
      record = {
        _id: id,
        syncID: this.syncID,
        database: ns.db,
        collection: ns.coll,
        type: 'collection',
        options: {},
        indexes: [],
        relaxedIndexes: [],
        estimatedBytes: 0,
        estimatedCount: 0,
        capped: false,
      };
      active.namespaces.push(record);
    }
    record.relaxedIndexes = change(record.relaxedIndexes);
    await this.options.clusters.jobStore(active.job.destination.name).saveNamespaces([record]);
  }

  // ---- commit ---------------------------------------------------------------------------------

  private startCommit(): void {
    this.commitRun = this.runCommit().catch((error: unknown) => {
      this.fail(error);
    });
  }

  private async runCommit(): Promise<void> {
    const active = this.active!;
    const { job } = active;
    const { clusters } = this.options;
    const source = clusters.source(job.source.name);
    const destination = clusters.destination(job.destination.name);
    const blocking = job.request.enableUserWriteBlocking === true;
    const ext = this.ext();
    let state: CommitProgress = ext.commit ?? { step: 'started' };
    const reached = (step: CommitStep) => stepIndex(state.step) >= stepIndex(step);
    const save = async (next: CommitProgress): Promise<void> => {
      state = next;
      this.ext().commit = next;
      await this.persistJob();
      this.logger.info('commit step done', { step: next.step });
      await this.options.onCommitStep?.(next.step);
    };

    if (!reached('sourceBlocked')) {
      if (blocking) await source.setUserWriteBlocking(true);
      await save({ ...state, step: 'sourceBlocked' });
    }
    if (!reached('pointTaken')) {
      const commitPoint = await source.writeNoop('cluster-sync commit point');
      await save({ ...state, step: 'pointTaken', commitPoint });
    }
    if (!reached('drained')) {
      await this.drainTo(state.commitPoint!);
      await this.stopBackground(); // the applier persists its resume point as it stops
      await save({ ...state, step: 'drained' });
    }
    if (!reached('indexesRestored')) {
      await restoreRelaxedIndexes(destination, active.namespaces);
      await save({ ...state, step: 'indexesRestored' });
    }
    if (!reached('destinationTimeTaken')) {
      const destinationTime = await destination.clusterTime();
      await save({ ...state, step: 'destinationTimeTaken', destinationTime });
    }
    if (blocking) await destination.setUserWriteBlocking(false);
    this.writable = true;
    this.ext().commit = { ...state, step: 'done' };
    await this.transition('COMMITTED');
    this.logger.info('commit completed', { destination: job.destination.name });
  }

  /** Waits for the copy (re-copies included) and applies every event up to `point`. */
  private async drainTo(point: Timestamp): Promise<void> {
    for (;;) {
      const signal = this.controller?.signal;
      if (!signal || signal.aborted) throw new Error('the sync stopped during the commit');
      if (this.failure) throw this.failure;
      const cea = this.changeApplication;
      if (!this.copyDone() || !cea) {
        await this.clock.sleep(50, signal);
        continue;
      }
      try {
        await cea.waitUntilApplied(point, signal);
      } catch (error) {
        if (cea === this.changeApplication && this.copyDone()) throw error;
      }
      if (cea === this.changeApplication && this.copyDone()) return;
    }
  }

  // ---- reverse --------------------------------------------------------------------------------

  /**
   * Idempotent: run again from the pre-swap record (REVERSING, not `reversed`) or finished from
   * the post-swap one. The old destination becomes the source from its commit-time cluster time,
   * without a copy; the old source stays write-blocked for users (the sync user bypasses it).
   */
  private async runReverse(): Promise<void> {
    const active = this.active!;
    const { clusters } = this.options;
    let job = active.job;
    if (!this.ext().reversed) {
      const old = job;
      const oldExt = this.ext();
      const startAt = oldExt.commit!.destinationTime!;
      const extensions: JobExtensions = {
        reversals: (oldExt.reversals ?? 0) + 1,
        reversed: true,
        cea: { generation: 0, startAt },
      };
      job = {
        ...old,
        request: { ...old.request, source: old.destination.name, destination: old.source.name },
        state: 'REVERSING',
        phase: 'copied',
        t0: startAt,
        source: old.destination,
        destination: old.source,
        extensions,
        updatedAt: new Date(this.clock.now()),
      };
      const namespaces = active.namespaces.map((n) => ({ ...n, relaxedIndexes: [] }));
      const store = clusters.jobStore(job.destination.name);
      const stale = await store.load();
      if (stale) {
        const keep = new Set(namespaces.map((n) => n._id));
        await store.deleteNamespaces(
          stale.namespaces.map((n) => n._id).filter((id) => !keep.has(id)),
        );
      }
      await store.saveNamespaces(namespaces);
      await store.savePartitions([]);
      await store.saveJob(job);
      this.active = {
        job,
        namespaces,
        partitions: [],
        sourceHost: active.destinationHost,
        destinationHost: active.sourceHost,
      };
    }
    await clusters.destination(job.destination.name).setUserWriteBlocking(true);
    this.writable = false;
    this.copyStarted = true;
    this.tally = new CopyTally();
    this.changeApplication = null;
    this.eventsBefore = 0;
    await this.transition('RUNNING');
    this.logger.info('sync reversed', {
      source: job.source.name,
      destination: job.destination.name,
    });
    this.launch();
  }

  // ---- persistence helpers --------------------------------------------------------------------

  private ext(): JobExtensions {
    const job = this.active!.job;
    job.extensions ??= {};
    return job.extensions as JobExtensions;
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

  /** Operations that change the state run one at a time. */
  private async exclusive(run: () => Promise<void>): Promise<void> {
    if (this.operating) {
      throw new ApiError('InvalidState', `another operation is in progress (${this.current}).`);
    }
    this.operating = true;
    try {
      await run();
    } finally {
      this.operating = false;
    }
  }

  private fail(error: unknown): void {
    if (this.failure || this.closed) return;
    const failure = error instanceof Error ? error : new Error(String(error));
    this.failure = failure;
    this.logger.error('sync failed', {
      error: errorNameOf(failure),
      description: this.failureText(),
      state: this.current,
    });
    const permanent =
      failure instanceof HistoryLostError ||
      failure instanceof ChangeStreamInvalidatedError ||
      failure instanceof UnsupportedEventError;
    void (async () => {
      if (permanent && this.active) {
        this.ext().failure = {
          error: errorNameOf(failure),
          message: this.failureText(),
          at: new Date(this.clock.now()),
        };
        await this.persistJob().catch((e: unknown) =>
          this.logger.error('persisting the failure failed', { error: describeError(e) }),
        );
      }
      this.options.onFatal?.(failure);
    })();
  }

  private failureText(): string {
    return this.failure ? (this.options.redact ?? String)(describeError(this.failure)) : '';
  }

  private assertNotFailed(operation: string): void {
    if (!this.failure) return;
    const name = errorNameOf(this.failure);
    throw new ApiError(
      name === 'HistoryLost' ? 'HistoryLost' : 'InvalidState',
      `${operation} is not possible: the sync failed (${this.failureText()}).`,
    );
  }

  // ---- progress inputs ------------------------------------------------------------------------

  private copyDone(): boolean {
    return this.active?.job.phase === 'copied';
  }

  private canCommit(): boolean {
    if (this.current !== 'RUNNING' || !this.copyDone() || this.failure) return false;
    return this.changeApplication?.status().readyToCommit === true;
  }

  private progressInputs(active: Active | null): Parameters<typeof buildProgress>[0] {
    const job = active?.job;
    let cea = this.changeApplication?.status() ?? null;
    if (cea) {
      cea = { ...cea, totalEventsApplied: this.eventsBefore + (cea.totalEventsApplied ?? 0) };
      const step = (job?.extensions as JobExtensions | undefined)?.commit?.step;
      if (this.current === 'COMMITTING' && step && stepIndex(step) >= stepIndex('drained')) {
        cea = { ...cea, lagTimeSeconds: 0 };
      }
    } else if (
      this.current !== 'IDLE' &&
      this.copyDone() &&
      this.options.phases?.changeApplication
    ) {
      cea = { lagTimeSeconds: null, totalEventsApplied: this.eventsBefore, readyToCommit: false };
    }
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
      changeApplication: cea,
      sourceMapping: `${job?.source.name}: ${active?.sourceHost}`,
      destinationMapping: `${job?.destination.name}: ${active?.destinationHost}`,
      syncID: this.syncID,
      coordinatorID: this.options.coordinatorID ?? this.syncID,
      failure: this.failure ? this.failureText() : null,
    };
  }

  private phaseContext(
    signal: AbortSignal,
    pass: { generation: number; startAt: Timestamp },
  ): PhaseContext {
    const active = this.active!;
    const { clusters } = this.options;
    const filter = new NamespaceFilter(
      active.job.request.includeNamespaces,
      active.job.request.excludeNamespaces,
    );
    const reversals = (active.job.extensions as JobExtensions | undefined)?.reversals ?? 0;
    return {
      job: active.job,
      t0: active.job.t0,
      startAt: pass.startAt,
      checkpointKey: `${this.syncID}|r${reversals}|g${pass.generation}`,
      namespaces: active.namespaces,
      selected: (db, coll) => filter.collectionSelected(db, coll),
      listener: this.listener(),
      source: clusters.source(active.job.source.name),
      destination: clusters.destination(active.job.destination.name),
      store: clusters.jobStore(active.job.destination.name),
      logger: this.logger,
      signal,
      copyDone: () => this.copyDone(),
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

/** Stable name shown in progress.error: the API's name for history loss, else the class. */
function errorNameOf(error: Error): string {
  if (error instanceof HistoryLostError || error.name === 'HistoryLostError') return 'HistoryLost';
  return error.name;
}

function stepIndex(step: CommitStep): number {
  return COMMIT_STEPS.indexOf(step);
}

function inScopes(scopes: readonly DdlScope[], db: string, coll: string): boolean {
  return scopes.some((s) => s.db === db && (s.coll === undefined || s.coll === coll));
}

function partitionBy<T>(items: T[], test: (item: T) => boolean): [T[], T[]] {
  const yes: T[] = [];
  const no: T[] = [];
  for (const item of items) (test(item) ? yes : no).push(item);
  return [yes, no];
}
