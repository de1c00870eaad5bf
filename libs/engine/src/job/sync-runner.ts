import type { Timestamp } from 'bson';
import { ApplyError } from '../apply/errors';
import { worthRunningAgain } from '../faults/transient';
import { RetryCounter, type InPlaceRetryOptions } from '../faults/retry-in-place';
import { isSyncedNamespace } from '../apply/namespace-rules';
import { CatalogEventRouter } from '../catalog/event-router';
import { CopyRunner } from '../copy/copy-runner';
import { switchOnSets } from '../copy/partition-planner';
import type { CopierOptions } from '../copy/copier';
import type { PartitioningOptions } from '../copy/partition-planner';
import { NamespaceFilter } from '../namespaces/namespace-filter';
import type { Clock } from '../ports/clock';
import type { EngineLogger } from '../ports/engine-logger';
import { prepareDestination } from '../prepare/destination-preparer';
import { presplitRangeKey } from '../prepare/presplit';
import { topologyOf, type SyncTopology } from '../shards/topology';
import { HistoryGuard, type HistoryGuardOptions } from './history-guard';
import { BalancerWatch } from '../shards/balancer-watch';
import type { JobSession } from './job-session';
import type { ChangeApplication, ChangeApplicationStatus } from './phases';
import {
  Verification,
  verificationEnabled,
  type VerificationOptions,
} from '../verify/verification';

export interface SyncRunnerOptions {
  syncID: string;
  logger: EngineLogger;
  clock: Clock;
  copier?: Partial<CopierOptions>;
  partitioning?: Partial<PartitioningOptions>;
  changeApplication?: () => ChangeApplication;
  /** Transient failures retried in a row before the sync stops (default 8, ~2 min of backoff). */
  maxTransientRetries?: number;
  /**
   * First backoff between retries (default 500 ms, doubling, at most 30 s), with jitter: each
   * wait is drawn uniformly from [½, 1] × that figure, so workers hit by one failover do not
   * retry in lockstep.
   */
  retryBaseMs?: number;
  /** Random source for the jitter (tests); `Math.random` by default. */
  random?: () => number;
  /**
   * Retries in place of single operations (a bulk of changes, a lookup, a checkpoint, a stream
   * read, a copy batch) before a transient failure restarts the run: tries after the first
   * (default 5) and the first backoff (default 100 ms, doubling up to 2 s, with jitter).
   */
  inPlaceRetries?: number;
  inPlaceRetryBaseMs?: number;
  /** Oplog window guard: how often it looks, when it warns. */
  historyGuard?: HistoryGuardOptions;
  /** How often a per-shard coordinator checks that the balancers stay off (default 10 s). */
  balancerWatchMs?: number;
  /** Embedded verifier tuning (parallel ranges, live re-check pause). */
  verification?: Pick<
    VerificationOptions,
    'concurrency' | 'recheckMs' | 'caughtUpMs' | 'settleMs' | 'limits' | 'retry'
  >;
}

export interface RunnerHooks {
  /** The current session (a retry reloads it from the store first). */
  session(): JobSession;
  /** Throws the in-memory job away and loads it again from the store. */
  reload(): Promise<JobSession>;
  /** A failure the sync cannot continue past: persist and show it. */
  onPermanentFailure(error: Error): Promise<void>;
}

/**
 * The background work of a RUNNING (or draining COMMITTING) job: prepare the destination, copy
 * every collection, then apply change events from T0 — in that order, so the destination's
 * namespaces are exactly the listing's when events start and every DDL event is applied once,
 * in stream order, with no second pass. A collection that enters the sync later (renamed into
 * the filter) is copied while the stream waits, behind the DDL barrier.
 *
 * Transient failures (network, failover) restart the run from the persisted state after a
 * backoff; anything else — or transient failures that do not stop — ends it, and the job shows
 * the named error and where it happened. The process never exits because of it.
 */
export class SyncRunner {
  private controller: AbortController | null = null;
  private running: Promise<void> = Promise.resolve();
  private cea: ChangeApplication | null = null;
  private eventsBefore = 0;
  private copying = false;
  private livePass: Promise<void> = Promise.resolve();
  /** The last failure: permanent (the run ended) or transient (being retried). */
  failure: Error | null = null;
  /** What this worker of a per-shard sync is waiting for on the others (progress). */
  waitingFor: string | null = null;
  retrying = false;
  /** Transient failures retried since this process started (progress `retries`). */
  retries = 0;
  /** Single operations retried in place since this process started (`retriedOperations`). */
  readonly retriedOperations = new RetryCounter();
  /** How operations are retried in place; each retry is counted and logged at debug level. */
  readonly inPlaceRetry: InPlaceRetryOptions;
  /** The embedded verifier: a live pass while change events are applied, the commit's final one. */
  readonly verification: Verification;
  /** Compares the source's oplog window with what the sync still needs of it (progress `warnings`). */
  readonly historyGuard: HistoryGuard;
  /** Per-shard coordinator: warns while a balancer runs again (progress `warnings`). */
  readonly balancers: BalancerWatch;

  constructor(
    private readonly options: SyncRunnerOptions,
    private readonly hooks: RunnerHooks,
  ) {
    this.verification = new Verification({
      logger: options.logger,
      clock: options.clock,
      ...options.verification,
    });
    this.historyGuard = new HistoryGuard({
      logger: options.logger,
      clock: options.clock,
      ...options.historyGuard,
    });
    this.balancers = new BalancerWatch(options.clock, options.logger, options.balancerWatchMs);
    this.inPlaceRetry = {
      attempts: options.inPlaceRetries ?? 5,
      baseMs: options.inPlaceRetryBaseMs ?? 100,
      clock: options.clock,
      ...(options.random ? { random: options.random } : {}),
      onRetry: (event) => {
        this.retriedOperations.record(event, options.clock.now());
        const error = event.error instanceof Error ? event.error : new Error(String(event.error));
        options.logger.debug('retrying an operation in place after a transient failure', {
          operation: event.what,
          attempt: event.attempt,
          retryInMs: event.delayMs,
          error: `${error.name}: ${error.message}`,
        });
      },
    };
  }

  get active(): boolean {
    return this.controller !== null && !this.controller.signal.aborted;
  }

  start(): void {
    if (this.active) return;
    const controller = new AbortController();
    this.controller = controller;
    this.failure = null;
    this.retrying = false;
    this.running = this.loop(controller.signal);
  }

  /** Resolves when the current run ends (stopped, failed, or — without change application — copied). */
  settled(): Promise<void> {
    return this.running;
  }

  async stop(): Promise<void> {
    this.controller?.abort();
    await this.running;
    await this.livePass;
    this.controller = null;
  }

  /**
   * Resolves once change application is at most a second behind the source (or stops): what
   * the live verification waits for before each range it reads.
   */
  private async untilChangesCaughtUp(signal: AbortSignal): Promise<void> {
    for (;;) {
      const lag = this.cea?.status().lagTimeSeconds ?? null;
      if (signal.aborted || lag === null || lag <= 1) return;
      await this.options.clock.sleep(500, signal);
    }
  }

  /** Grows whenever the sync advances: bytes copied, events applied, a phase reached. */
  private progressMark(): string {
    const session = this.hooks.session();
    const applied = this.status().changeApplication?.totalEventsApplied ?? 0;
    return `${session.job.phase}|${session.tally.copiedBytes}|${applied}`;
  }

  /** Copy running or change application status, for progress. */
  status(): { copying: boolean; changeApplication: ChangeApplicationStatus | null } {
    const cea = this.cea?.status() ?? null;
    return {
      copying: this.copying,
      changeApplication: cea && {
        ...cea,
        totalEventsApplied: this.eventsBefore + (cea.totalEventsApplied ?? 0),
      },
    };
  }

  /**
   * Commit support: resolves once no copy is pending and every event up to `point` is applied
   * and checkpointed. Survives retries of the run (waits for the next change application).
   */
  async drainTo(point: Timestamp, signal: AbortSignal): Promise<void> {
    for (;;) {
      if (signal.aborted) throw new Error('the commit was interrupted');
      if (this.failure && !this.retrying) throw this.failure;
      if (!this.active) throw new ApplyError('the sync is not running', true);
      const cea = this.cea;
      const session = this.hooks.session();
      if (cea && !this.copying && !session.copiesPending()) {
        try {
          await cea.waitUntilApplied(point, signal);
          if (cea === this.cea && !session.copiesPending()) return;
        } catch (error) {
          // The run decides what a failed change application means: a transient fault is
          // retried (keep waiting for the next pass), a permanent one becomes `failure` (thrown
          // above). Only a permanent error the run has not recorded yet ends the drain here —
          // a transient one (e.g. a pool cleared by a failover) raced the run's retry flag.
          if (cea === this.cea && !this.retrying && error instanceof Error && isPermanent(error))
            throw error;
        }
      }
      await this.options.clock.sleep(50, signal).catch(() => undefined);
    }
  }

  private async loop(signal: AbortSignal): Promise<void> {
    const limit = this.options.maxTransientRetries ?? 8;
    let attempt = 0;
    while (!signal.aborted) {
      const began = this.options.clock.now();
      const progressBefore = this.progressMark();
      // The guard runs beside the run; T0 gone from the source's history ends the run at once.
      const run = new AbortController();
      const runSignal = AbortSignal.any([signal, run.signal]);
      let lost: Error | null = null;
      const session = this.hooks.session();
      const guard = this.historyGuard.watch(
        session,
        runSignal,
        () => {
          const cea = this.cea?.status() ?? null;
          // Once the copy is done the change application's checkpoint, not T0, must survive.
          return {
            applying: this.hooks.session().job.phase === 'copied' || cea !== null,
            lagTimeSeconds: cea?.lagTimeSeconds ?? null,
          };
        },
        (error) => {
          lost = error;
          run.abort();
        },
      );
      const balancers = this.balancers.watch(session, runSignal);
      try {
        await this.runOnce(session, runSignal);
        if (lost) throw lost;
        return;
      } catch (error) {
        if (signal.aborted) return;
        const failure = lost ?? (error instanceof Error ? error : new Error(String(error)));
        // The budget counts failures in a row that let nothing move: a run that copied or
        // applied anything (or lasted a minute) before failing starts the count again, so a
        // steady trickle of faults never stops a sync that keeps advancing, and a fault that
        // persists stops it after `maxTransientRetries` runs.
        if (this.options.clock.now() - began > 60_000 || this.progressMark() !== progressBefore)
          attempt = 0;
        if (isPermanent(failure) || attempt >= limit) {
          const final = isPermanent(failure)
            ? failure
            : new TransientFaultBudgetExhaustedError(attempt + 1, failure);
          this.failure = final;
          this.retrying = false;
          this.controller?.abort();
          await this.hooks.onPermanentFailure(final);
          return;
        }
        this.failure = failure;
        this.retrying = true;
        this.retries += 1;
        const ceiling = Math.min(30_000, (this.options.retryBaseMs ?? 500) * 2 ** attempt++);
        const delay = Math.round(ceiling * (0.5 + 0.5 * (this.options.random ?? Math.random)()));
        this.options.logger.warn('sync step failed; retrying from the persisted state', {
          error: `${failure.name}: ${failure.message}`,
          retryInMs: delay,
          attempt,
          retries: this.retries,
        });
        await this.options.clock.sleep(delay, signal).catch(() => undefined);
        if (signal.aborted) return;
        await this.hooks.reload().catch(() => undefined);
      } finally {
        run.abort();
        await guard;
        await balancers;
      }
    }
  }

  private async runOnce(session: JobSession, signal: AbortSignal): Promise<void> {
    session.retry = this.inPlaceRetry; // job writes are retried in place, and counted
    const { job } = session;
    const topology = topologyOf(session, {
      clock: this.options.clock,
      logger: this.options.logger,
      waiting: (what) => void (this.waitingFor = what),
    });
    if (job.phase === 'joining' && !(await topology.beforeCopy(session, signal))) return;
    const copy = new CopyRunner(session, topology, {
      syncID: this.options.syncID,
      copier: { ...this.options.copier, retry: this.inPlaceRetry },
      partitioning: this.options.partitioning,
      logger: this.options.logger,
    });
    if (job.phase === 'planned') {
      const began = this.options.clock.now();
      const prepared = await prepareDestination(
        session.destination,
        job.request,
        job.namespaces,
        this.options.logger,
        (ns, key) =>
          presplitRangeKey(session.source, session.destination, ns, key, this.options.logger),
      );
      // A lone worker's start planned the partitions that need no source read (its first job
      // write named them); any left are planned now and switched on by this write (a per-shard
      // worker knows its share only after `beforeCopy`).
      const ahead = job.shard ? null : await copy.planAhead(prepared);
      if (signal.aborted) return;
      await session.save((j) => {
        j.namespaces = prepared;
        j.phase = 'prepared';
        if (ahead) switchOnSets(j, ahead);
      });
      if (ahead) copy.adopt(ahead);
      this.options.logger.info('destination prepared', {
        collections: prepared.filter((ns) => ns.type === 'collection').length,
        ms: Math.round(this.options.clock.now() - began),
      });
    }
    if (job.phase !== 'planned' && !(await topology.beforeCopy(session, signal))) return;
    if (signal.aborted) return;
    if (job.phase === 'prepared') {
      // Ranges are verified as their partitions are copied, not after the whole copy.
      this.startLivePass(session, topology, signal);
      this.copying = true;
      try {
        if ((await copy.copyPending(signal)) === 'aborted') return;
      } finally {
        this.copying = false;
      }
      await session.save((j) => void (j.phase = 'copied'));
      this.options.logger.info('collection copy done', { copiedBytes: session.tally.copiedBytes });
    }
    if (signal.aborted) return;
    // Collections that entered the sync before a crash are finished before any later event.
    if (session.copiesPending()) {
      this.copying = true;
      try {
        if ((await copy.copyPending(signal)) === 'aborted') return;
      } finally {
        this.copying = false;
      }
    }
    this.retrying = false;
    this.failure = null;
    await this.applyChanges(session, copy, topology, signal);
  }

  /**
   * The embedded verifier's live pass (once per run; a no-op when it runs already): every worker
   * verifies its own share (a per-shard worker: what it copied and applies).
   */
  private startLivePass(session: JobSession, topology: SyncTopology, signal: AbortSignal): void {
    if (!topology.verifiesLive || !verificationEnabled(session.job)) return;
    const previous = this.livePass;
    const started = this.verification.runLive(
      session,
      signal,
      () => this.untilChangesCaughtUp(signal),
      () => this.hooks.session(),
    );
    this.livePass = Promise.all([previous, started]).then(() => undefined);
  }

  private async applyChanges(
    session: JobSession,
    copy: CopyRunner,
    topology: SyncTopology,
    signal: AbortSignal,
  ): Promise<void> {
    const factory = this.options.changeApplication;
    if (!factory) return; // a copy-only build: the run ends with the copy

    if (this.cea) this.eventsBefore += this.cea.status().totalEventsApplied ?? 0;
    const cea = factory();
    this.cea = cea;
    const { job } = session;
    const filter = new NamespaceFilter(
      job.request.includeNamespaces,
      job.request.excludeNamespaces,
    );
    const selected = (db: string, coll: string) => filter.collectionSelected(db, coll);
    this.startLivePass(session, topology, signal);
    const router = new CatalogEventRouter({
      session,
      destination: session.destination,
      source: session.source,
      selected: (db, coll) => isSyncedNamespace(db, coll, selected),
      buildIndexes: job.request.buildIndexes ?? 'beforeDataCopy',
      logger: this.options.logger,
      copyIn: async (record) => {
        this.copying = true;
        try {
          const outcome = await copy.copyIn(
            record,
            job.request.buildIndexes ?? 'beforeDataCopy',
            signal,
          );
          if (outcome === 'aborted')
            throw new ApplyError('stopped while copying a collection', true);
        } finally {
          this.copying = false;
        }
      },
    });
    const gate = await topology.orderChanges(session, router, signal);
    try {
      await cea.run({
        job,
        startAt: job.t0,
        checkpointKey: `${this.options.syncID}|r${job.reversals ?? 0}`,
        retry: this.inPlaceRetry,
        router,
        ...(gate ? { gate } : {}),
        // The incremental verifier keeps checked ranges verified from what is written.
        ...(topology.verifiesLive && verificationEnabled(job)
          ? { appliedWrites: this.verification.appliedWrites }
          : {}),
        source: session.source,
        destination: session.destination,
        logger: this.options.logger,
        signal,
      });
    } finally {
      await gate?.stop();
    }
  }
}

/**
 * Transient failures kept coming (`maxTransientRetries` in a row, none of the runs lasting a
 * minute): the sync stops instead of spinning forever. Persisted and shown in progress as
 * `TransientFaultBudgetExhausted`, with the last underlying error (and where it happened) in
 * the message; `resume`/a restart tries again.
 */
export class TransientFaultBudgetExhaustedError extends Error {
  readonly namespace?: string;
  readonly eventTime?: Timestamp;

  constructor(
    readonly attempts: number,
    readonly last: Error,
  ) {
    super(
      `${attempts} transient failures in a row outlasted the retry budget; the last: ${last.message.startsWith(last.name) ? '' : `${last.name}: `}${last.message}`,
      { cause: last },
    );
    this.name = 'TransientFaultBudgetExhausted';
    const located = last as Error & { namespace?: string; eventTime?: Timestamp };
    if (located.namespace) this.namespace = located.namespace;
    if (located.eventTime) this.eventTime = located.eventTime;
  }
}

/**
 * Errors a retry cannot fix: the sync stops and shows them. By label only (fault-labels.ts):
 * `permanent` (the engine's named stops, an API error, a programming error), or a server's
 * refusal with a code that is not transient (e.g. a refused shardCollection repeats on every
 * retry).
 */
export function isPermanent(error: Error): boolean {
  return !worthRunningAgain(error);
}
