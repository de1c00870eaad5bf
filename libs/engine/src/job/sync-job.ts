import {
  ApiError,
  assertOperationAllowed,
  wrongStateError,
  type CommandOptions,
  type Progress,
  type ProgressOptions,
  type StartRequest,
  type SyncOperation,
  type SyncState,
} from '@sync/contracts';
import { asError, describeError, errorNameOf, failureRecord } from './failure';
import { commandRecord, commandSeen, rememberCommand } from './commands';
import {
  assertCommitReady,
  canCommitNow,
  commitStepIndex,
  joinsCommitUnderWay,
  destinationWritable,
  rollBackCommit,
  rollsCommitBack,
  runCommit,
} from '../operations/commit';
import { findPersistedJob } from '../operations/restore';
import { assertReversible, reverseJob } from '../operations/reverse';
import { checkShardReverse, reverseShardJob } from '../shards/shard-reverse';
import { checkStart, startJob } from '../operations/start';
import { systemClock, type Clock } from '../ports/clock';
import type { EngineLogger } from '../ports/engine-logger';
import type { CommandRecord, JobRecord, PersistedJob } from '../ports/job-store';
import {
  renderProgress,
  snapshotOf as progressSnapshot,
  type ProgressSnapshot,
} from '../progress/progress-snapshot';
import type { SyncEngine } from '../sync-engine';
import { namespaceDetail } from '../progress/namespace-detail';

export type { SyncJobOptions };
import type { JobSession } from './job-session';
import { createRunner, openSession } from './job-runtime';
import type { SyncJobOptions } from './sync-job-options';
import type { SyncRunner } from './sync-runner';
import type { CoordinationStore } from '../ports/coordination-store';
import { ShardClaim } from '../shards/shard-claim';
import { isLeaseLapse, isShardClaimLost, shardClaimLost } from '../shards/claim-fence';

/**
 * The state machine of one sync instance, a facade over the operations:
 *
 *   INITIALIZING → IDLE --start--> RUNNING ⇄ PAUSED (pause/resume)
 *   RUNNING --commit (canCommit)--> COMMITTING --(automatic)--> COMMITTED
 *   COMMITTED --reverse (reversible)--> REVERSING --(automatic)--> RUNNING (roles swapped)
 *
 * Background work (copy, then change events) is the SyncRunner's; commit steps, start, restore
 * and reverse live in operations/. All state is in the job document on the destination: a
 * restart (or a crash) continues where it stopped. A sync that cannot go on keeps its state,
 * persists and shows the named error and where it happened, and keeps answering the API.
 */
export class SyncJob implements SyncEngine {
  private current: SyncState = 'INITIALIZING';
  private session: JobSession | null = null;
  private runner: SyncRunner | null = null;
  private commitRun: Promise<void> | null = null;
  private commitAbort: AbortController | null = null;
  private operating = false;
  private fatalInit: ApiError | null = null;
  private closed = false;
  /** What a per-shard sync is waiting for on other workers (shown in progress). */
  private waitingFor: string | null = null;
  private readonly syncID: string;
  private claim: ShardClaim | null = null;
  /** A lapsed lease being replaced by a new claim (see `reclaim`), and the lapse's error. */
  private reclaiming: Promise<void> | null = null;
  private lapse: ApiError | null = null;
  private reclaims = 0;
  /** Aborts a claim still being waited for when the engine closes. */
  private readonly closing = new AbortController();
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

  /** The loaded job (tests and diagnostics). */
  get job(): JobRecord | null {
    return this.session?.job ?? null;
  }

  /**
   * Boot: restores this instance's persisted job, retrying while a cluster is unreachable.
   * Rejects (permanently) with JobClusterMismatch when the job belongs to other clusters; the
   * engine then stays INITIALIZING and answers that error.
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
        await this.clock.sleep(this.options.restoreRetryMs ?? 5_000);
        if (this.closed) throw error;
      }
    }
  }

  async start(request: StartRequest, options?: CommandOptions): Promise<void> {
    if (this.seen('start', options)) return;
    this.guard('start');
    await this.exclusive('start', async () => {
      const started = await startJob(request, {
        ...(this.options.shardId !== undefined
          ? { shardId: this.options.shardId, claim: (store) => this.claimShard(store) }
          : {}),
        command: commandRecord('start', options, this.clock),
        clusters: this.options.clusters,
        syncID: this.syncID,
        logger: this.logger,
        now: new Date(this.clock.now()),
        checkTopology: this.options.checkTopology,
        maxNamespaces: this.options.maxNamespaces,
        partitioning: this.options.partitioning,
      });
      this.adopt({ job: started.job, partitions: started.partitions }, started.hosts);
      this.current = 'RUNNING';
      this.runner!.start();
    });
  }

  /**
   * The dry run of `start`: the same state check and the same checks as `start` up to its first
   * write (`checkStart`), nothing persisted, claimed or changed on either cluster. A start whose
   * command id was already applied validates as accepted (the retried request succeeds again).
   */
  async validateStart(request: StartRequest, options?: CommandOptions): Promise<void> {
    if (this.seen('start', options)) return;
    this.guard('start');
    await checkStart(request, {
      ...(this.options.shardId !== undefined ? { shardId: this.options.shardId } : {}),
      clusters: this.options.clusters,
      checkTopology: this.options.checkTopology,
    });
  }

  progress(options?: ProgressOptions): Progress {
    const progress = renderProgress(this.snapshot());
    if (options?.detail === 'namespaces' && this.session && this.current !== 'IDLE') {
      const verification = this.runner?.verification;
      progress.namespaceDetail = namespaceDetail(
        this.session,
        verification ? (record) => verification.isVerified(record) : undefined,
      );
    }
    return progress;
  }

  /** The raw, mergeable progress of this instance (a coordinator merges several). */
  snapshot(): ProgressSnapshot {
    if (this.fatalInit) throw this.fatalInit;
    if (this.lapse) throw this.lapse;
    if (this.current === 'INITIALIZING') {
      throw new ApiError('NotReady', 'The instance is restoring its sync state; retry shortly.');
    }
    return progressSnapshot({
      state: this.current,
      session: this.current === 'IDLE' ? null : this.session,
      runner: this.runner,
      canCommit: this.canCommit(),
      hasChangeApplication: !!this.options.phases?.changeApplication,
      syncID: this.syncID,
      // A per-shard worker knows its coordinator once started (null until then).
      coordinatorID:
        this.current !== 'IDLE' && this.session?.job.shard
          ? this.session.job.shard.coordinatorID
          : this.options.shardId !== undefined
            ? null
            : (this.options.coordinatorID ?? this.syncID),
      waitingFor: this.waitingFor ?? this.runner?.waitingFor ?? null,
      redact: this.options.redact ?? ((t) => t),
    });
  }

  async pause(options?: CommandOptions): Promise<void> {
    if (this.seen('pause', options)) return;
    this.guard('pause');
    await this.exclusive('pause', async () => {
      await this.runner?.stop();
      await this.transition('PAUSED', commandRecord('pause', options, this.clock));
      this.logger.info('sync paused');
    });
  }

  async resume(options?: CommandOptions): Promise<void> {
    if (this.seen('resume', options)) return;
    this.guard('resume');
    this.assertNotFailed('resume');
    await this.exclusive('resume', async () => {
      await this.transition('RUNNING', commandRecord('resume', options, this.clock));
      this.runner!.start();
      this.logger.info('sync resumed');
    });
  }

  /**
   * Commit (steps in operations/commit.ts). Returns once COMMITTING is persisted; the steps then
   * run in the background (progress: `waiting for commit to complete`, then COMMITTED / `commit
   * completed`). In COMMITTING after a failed step, `commit` retries from that step.
   */
  async commit(options?: CommandOptions): Promise<void> {
    if (this.seen('commit', options)) return;
    const command = commandRecord('commit', options, this.clock);
    const retry =
      this.current === 'COMMITTING' && !!this.session?.job.commit?.failed && !this.commitRun;
    if (!retry) this.guard('commit');
    const failure = this.runner?.failure;
    assertCommitReady({
      hasChangeApplication: !!this.options.phases?.changeApplication,
      ready:
        retry ||
        this.canCommit() ||
        (await joinsCommitUnderWay(this.current, this.session, this.runner)),
      failure: failure && !this.runner?.retrying ? this.failureText(failure) : null,
    });
    await this.exclusive('commit', async () => {
      // Job state alone (no namespace record changes): a write that does not grow with the
      // catalog, so the application's downtime does not either.
      if (retry) {
        await this.session!.save((job) => rememberCommand(job, command), {
          catalogUnchanged: true,
        });
        if (commitStepIndex(this.session!.job.commit!.step) < commitStepIndex('drained'))
          this.runner!.start();
      } else {
        await this.session!.save(
          (job) => {
            job.commit = { step: 'started' };
            job.state = 'COMMITTING';
            rememberCommand(job, command);
          },
          { catalogUnchanged: true },
        );
        this.current = 'COMMITTING';
      }
      this.logger.info(retry ? 'commit retried' : 'commit started');
      this.startCommit();
    });
  }

  /** Reverse: swap roles and follow the old destination's changes from the commit point. */
  async reverse(options?: CommandOptions): Promise<void> {
    if (this.seen('reverse', options)) return;
    this.guard('reverse');
    assertReversible(this.session?.job, !!this.options.phases?.changeApplication);
    // Per shard: every worker refuses alike, before anything changes.
    if (this.session!.job.shard) await checkShardReverse(this.session!.job, this.options.clusters);
    await this.exclusive('reverse', async () => {
      await this.transition('REVERSING', commandRecord('reverse', options, this.clock));
      await this.runReverse();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort();
    this.claim?.stop();
    this.commitAbort?.abort();
    await this.runner?.stop();
    await this.commitRun?.catch(() => undefined);
    await this.options.onClose?.();
  }

  /**
   * Resolves when background work settles: the copy when there is no change application, a
   * running commit, or after pause/close. (With change application, RUNNING never settles.)
   */
  async idle(): Promise<void> {
    if (this.current !== 'COMMITTING' && !this.commitRun) await this.runner?.settled();
    await this.commitRun?.catch(() => undefined);
  }

  // ---- internals -------------------------------------------------------------------------------

  private async restore(): Promise<void> {
    const found = await findPersistedJob(this.options.clusters);
    if (!found) {
      this.current = 'IDLE';
      this.logger.info('no persisted sync; IDLE');
      return;
    }
    const { job } = found.persisted;
    if (job.shard) {
      await this.claimShard(
        this.options.clusters.coordination(job.shard.claimsOn ?? job.destination.name),
      );
      // After a reverse the claims live on the other cluster: the metadata here is fenced too.
      if (job.shard.claimsOn && job.shard.claimsOn !== job.destination.name)
        await this.options.clusters
          .coordination(job.destination.name)
          .fence(this.syncID, this.claim!.epoch!);
    }
    this.adopt(found.persisted, found.hosts);
    this.current = job.state;
    this.logger.info('persisted sync restored', { state: job.state, phase: job.phase });
    if (job.failure) {
      this.logger.error('the persisted sync failed earlier and cannot continue', {
        error: job.failure.error,
        description: job.failure.message,
        namespace: job.failure.namespace,
      });
      return;
    }
    if (this.current === 'RUNNING') this.runner!.start();
    if (this.current === 'COMMITTING') {
      if (commitStepIndex(job.commit?.step) < commitStepIndex('drained')) this.runner!.start();
      this.startCommit();
    }
    if (this.current === 'REVERSING') await this.runReverse();
  }

  /**
   * One process per shard id (DuplicateShardWorker otherwise); renewed while this one runs.
   * Lost (taken over, or its lease ran out) the run stops at once: the fence shared with the
   * destination adapters refuses every write from then on, so whatever the stopping run still
   * tries (draining its lanes, saving its checkpoint, persisting the failure) writes nothing,
   * and every call answers ShardClaimLost.
   */
  private async claimShard(store: CoordinationStore): Promise<void> {
    if (this.claim) return;
    const options = this.options.shardClaim ?? {};
    // A re-claim after a lapse takes the shard over under its own instance id, so the claim's
    // epoch goes up and the lapsed run's metadata writes match nothing.
    const instance =
      this.reclaims > 0 && options.instance ? `${options.instance}-r${this.reclaims}` : undefined;
    const claim = new ShardClaim(this.syncID, this.clock, this.logger, {
      ...options,
      ...(instance ? { instance } : {}),
    });
    await claim.acquire(store, (error) => this.shardLost(error), this.closing.signal);
    this.claim = claim;
  }

  /**
   * The claim is lost: nothing more is written (the fence refuses it). Taken over by another
   * worker, every call answers ShardClaimLost from then on. Lost by a lapsed lease alone (the
   * process paused, renewals slow or failing), the worker claims its shard again, as a
   * restarted process would (`reclaim`), unless `shardClaim.reclaimAfterLapse` is false.
   */
  private shardLost(error: ApiError): void {
    if (this.fatalInit?.error === 'ShardClaimLost' || this.reclaiming) return;
    this.claim?.fence.lose(error);
    this.claim?.stop();
    this.logger.error('this worker lost its shard; it stops writing', {
      error: error.error,
      description: error.message,
    });
    this.commitAbort?.abort();
    const stopped = this.runner?.stop();
    if (
      isLeaseLapse(error) &&
      !this.closed &&
      this.options.shardClaim?.reclaimAfterLapse !== false
    ) {
      // Meanwhile progress and commands answer the lapse (ShardClaimLost): a coordinated
      // worker stops taking its shard's commands and beating under its id until it holds the
      // shard again.
      this.lapse = error;
      this.reclaiming = this.reclaim(stopped).finally(() => {
        this.reclaiming = null;
        this.lapse = null;
      });
      return;
    }
    this.fatalInit = error;
    if (!this.closed) this.options.onFatal?.(error);
  }

  /**
   * After a lapsed lease: once the stopped run has settled (nothing of it writes any more), the
   * engine drops its loaded job and restores it as a restart does — claims the shard (waiting
   * until the lapsed claim is stale by the destination's clock; a new epoch fences the old one's
   * writes), reloads the job and resumes from the checkpoint. Another worker found holding the
   * shard meanwhile (a standby took it over): the loss stands, named ShardClaimLost.
   */
  private async reclaim(stopped: Promise<void> | undefined): Promise<void> {
    await stopped?.catch(() => undefined);
    await this.commitRun?.catch(() => undefined);
    const fence = this.claim?.fence;
    this.claim = null;
    this.runner = null;
    this.session = null;
    this.commitRun = null;
    this.commitAbort = null;
    if (this.closed) return;
    fence?.rearm();
    this.reclaims += 1;
    this.logger.warn(
      "claiming the shard again: once its lapsed claim is stale by the destination's clock, the sync resumes from its checkpoint",
      { worker: this.syncID, attempt: this.reclaims },
    );
    try {
      await this.initialize();
      this.logger.info('the shard was claimed again; the sync resumes', { state: this.current });
    } catch (error) {
      if (this.closed) return;
      const why =
        error instanceof ApiError && error.error === 'DuplicateShardWorker'
          ? `another worker took the shard over while this one's lease had lapsed: ${error.message}`
          : `claiming it again failed: ${describeError(error)}`;
      this.fatalInit = shardClaimLost(this.syncID, why);
      this.logger.error('this worker lost its shard; it stops writing', {
        error: this.fatalInit.error,
        description: this.fatalInit.message,
      });
      this.options.onFatal?.(this.fatalInit);
    }
  }

  /** Makes a loaded job current, with a runner over it. */
  private adopt(persisted: PersistedJob, hosts: { source: string; destination: string }): void {
    const session = openSession(persisted, hosts, this.options.clusters, this.clock);
    this.session = session;
    this.runner = createRunner(this.options, this.syncID, this.clock, {
      session: () => session,
      reload: async () => {
        await session.reload();
        return session;
      },
      onPermanentFailure: (error) => this.recordFailure(error),
    });
  }

  private startCommit(): void {
    const abort = new AbortController();
    this.commitAbort = abort;
    const run = runCommit(
      {
        session: this.session!,
        runner: this.runner!,
        signal: abort.signal,
        logger: this.logger,
        clock: this.clock,
        waiting: (what) => void (this.waitingFor = what),
      },
      this.options.onCommitStep,
    ).then(
      () => void (this.current = 'COMMITTED'),
      async (error: unknown) => {
        // Stopped by a lost claim: a lapsed lease is being claimed again (the restored job
        // carries the commit on from its step), or the loss was reported already.
        if (this.closed || this.reclaiming || this.fatalInit) return;
        // The commit's checks failed before the destination opened: the application gets its
        // source back (never both clusters closed), the sync runs on, commit may be called again.
        if (rollsCommitBack(error)) {
          try {
            await rollBackCommit(this.session!, asError(error), this.logger);
            this.current = 'RUNNING';
            this.runner!.start();
            return;
          } catch (undo) {
            this.logger.error('rolling the commit back failed; call commit again to retry', {
              error: describeError(undo),
            });
          }
        }
        this.options.onFatal?.(asError(error));
      },
    );
    this.commitRun = run;
    void run.then(() => {
      if (this.commitRun === run) this.commitRun = null;
    });
  }

  private async runReverse(): Promise<void> {
    const old = this.session!.job;
    let job = old;
    if (old.state === 'REVERSING') {
      if (old.shard) {
        const abort = new AbortController();
        this.commitAbort = abort;
        job = await reverseShardJob(old, {
          clusters: this.options.clusters,
          logger: this.logger,
          clock: this.clock,
          signal: abort.signal,
          waiting: (what) => void (this.waitingFor = what),
        });
        if (this.claim?.epoch !== undefined)
          await this.options.clusters
            .coordination(job.destination.name)
            .fence(this.syncID, this.claim.epoch);
      } else {
        job = await reverseJob(old, {
          clusters: this.options.clusters,
          logger: this.logger,
          now: new Date(this.clock.now()),
        });
      }
    }
    const hosts = {
      source: this.session!.hosts.destination,
      destination: this.session!.hosts.source,
    };
    await this.options.clusters.destination(job.destination.name).setUserWriteBlocking(true);
    this.adopt({ job, partitions: [] }, hosts);
    this.current = 'RUNNING';
    this.runner!.start();
  }

  /** A failure the sync cannot continue past: persisted (a restart shows it), never skipped. */
  private async recordFailure(error: Error): Promise<void> {
    if (this.closed) return;
    // A write refused by the claim's fence: the shard is another worker's now (nothing to
    // persist: that write would be refused too).
    if (isShardClaimLost(error)) return this.shardLost(shardLostError(error));
    const record = failureRecord(error, this.failureText(error), new Date(this.clock.now()));
    this.logger.error('sync failed', {
      error: record.error,
      description: record.message,
      namespace: record.namespace,
      eventTime: record.eventTime?.toString(),
      state: this.current,
    });
    await this.session
      ?.save((job) => void (job.failure = record))
      .catch((e: unknown) =>
        this.logger.error('persisting the failure failed', { error: describeError(e) }),
      );
    this.options.onFatal?.(error);
  }

  private async transition(state: SyncState, command?: CommandRecord | null): Promise<void> {
    this.current = state;
    await this.session?.save(
      (job) => {
        job.state = state;
        rememberCommand(job, command);
      },
      { catalogUnchanged: true },
    );
  }

  /** True when this command id was applied already (the re-delivery succeeds, changes nothing). */
  private seen(operation: SyncOperation, options?: CommandOptions): boolean {
    return commandSeen(this.session?.job, operation, options?.commandId);
  }

  private guard(operation: SyncOperation): void {
    if (this.fatalInit) throw this.fatalInit;
    if (this.lapse) throw this.lapse;
    if (this.current === 'INITIALIZING') throw wrongStateError(operation, 'INITIALIZING');
    assertOperationAllowed(operation, this.current);
  }

  /** State-changing operations run one at a time; the state is checked again inside. */
  private async exclusive(operation: SyncOperation, run: () => Promise<void>): Promise<void> {
    if (this.operating) {
      throw new ApiError('InvalidState', `another operation is in progress (${this.current}).`);
    }
    this.operating = true;
    try {
      if (operation !== 'commit' || this.current !== 'COMMITTING')
        assertOperationAllowed(operation, this.current);
      await run();
    } finally {
      this.operating = false;
    }
  }

  private canCommit(): boolean {
    return canCommitNow(this.current, this.session, this.runner);
  }

  private assertNotFailed(operation: string): void {
    const failure = this.session?.job.failure;
    if (!failure) return;
    throw new ApiError(
      failure.error === 'HistoryLost' ? 'HistoryLost' : 'InvalidState',
      `${operation} is not possible: the sync failed (${failure.error}: ${failure.message}).`,
    );
  }

  private failureText(error: Error): string {
    return (this.options.redact ?? String)(describeError(error));
  }
}

export { destinationWritable };
export { errorNameOf };

/** The ShardClaimLost ApiError inside `error` (it may arrive wrapped by an apply step). */
function shardLostError(error: unknown): ApiError {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    if (e instanceof ApiError && e.error === 'ShardClaimLost') return e;
    e = (e as { cause?: unknown }).cause;
  }
  return new ApiError('ShardClaimLost', String(error));
}
