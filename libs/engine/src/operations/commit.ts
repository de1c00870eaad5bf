import type { Timestamp } from 'bson';
import type { SourceWrite } from '../ports/source-cluster';
import { ApiError } from '@sync/contracts';
import type { JobSession } from '../job/job-session';
import { isPermanent, type SyncRunner } from '../job/sync-runner';
import type { Clock } from '../ports/clock';
import type { EngineLogger } from '../ports/engine-logger';
import type { CommitState } from '../ports/job-store';
import { relaxRestoredIndexes, restoreRelaxedIndexes } from '../prepare/index-restorer';
import { retryInPlace } from '../faults/retry-in-place';
import { isShardClaimLost } from '../shards/claim-fence';
import {
  FINAL_COMMIT_STEP,
  announceRollback,
  anotherWorkerCommits,
  balancerModesAtStart,
  shardCommitFor,
  shareCommitPoint,
} from '../shards/shard-commit';
import { restoreBalancers } from './start';

/** Who performs a step once several workers sync one cluster (see the sharded-sync design). */
export type StepScope = 'everyWorker' | 'oncePerSync';

export interface CommitStepContext {
  session: JobSession;
  runner: SyncRunner;
  state: CommitState;
  signal: AbortSignal;
  logger: EngineLogger;
  clock: Clock;
  /** Told what a per-shard commit is waiting for (null when it stops waiting). */
  waiting?: (what: string | null) => void;
}

export interface CommitStep {
  name: string;
  scope: StepScope;
  run(ctx: CommitStepContext): Promise<void>;
  /** What a failure that outlasted the step's retries becomes (default: itself). */
  failure?(error: Error): Error;
}

/** A per-shard sync started reversible: a reverse will read the destination shard by shard. */
const reversiblePerShard = (ctx: CommitStepContext) =>
  !!ctx.session.job.shard && ctx.session.job.request.reversible === true;

const blocking = (ctx: CommitStepContext) =>
  ctx.session.job.request.enableUserWriteBlocking === true;

/**
 * The commit's steps as a table. Each step is persisted once done (`commit.step`), so a crash or a
 * failure resumes at the first step not done; every step is idempotent for that case.
 */
export const COMMIT_STEPS: readonly CommitStep[] = [
  {
    name: 'sourceBlocked',
    scope: 'everyWorker',
    async run(ctx) {
      if (!blocking(ctx)) return;
      ctx.state.sourceBlockedAt ??= new Date(ctx.clock.now());
      await ctx.session.source.setUserWriteBlocking(true);
      ctx.state.sourceBlocked = true;
    },
  },
  {
    // One commit point for the whole sync, taken once every worker has blocked the source: a
    // no-op through the routers, which MongoDB writes on every shard, so that every shard's
    // stream reaches it. Per-shard followers adopt it from the shared record.
    name: 'pointTaken',
    scope: 'oncePerSync',
    async run(ctx) {
      ctx.state.commitPoint = await ctx.session.source.writeNoop('cluster-sync commit point');
      await shareCommitPoint(ctx.session, ctx.state.commitPoint);
    },
  },
  {
    name: 'drained',
    scope: 'everyWorker',
    async run(ctx) {
      await ctx.runner.drainTo(ctx.state.commitPoint as Timestamp, ctx.signal);
      await ctx.runner.stop(); // the applier persists its resume point as it stops
    },
  },
  {
    name: 'indexesRestored',
    scope: 'oncePerSync',
    async run(ctx) {
      await restoreRelaxedIndexes(ctx.session.destination, ctx.session.job.namespaces);
    },
  },
  {
    // The embedded verifier's final pass (verify/verification.ts): after the drain and once
    // unique indexes are restored (so `unique` is compared too), before the destination opens.
    // It reads every namespace's type, options and indexes, and of the documents only what is
    // still dirty (written since its last check) or never checked — everything in mode `full`.
    // A difference fails the step with VerificationFailed, and the commit rolls back. A
    // per-shard sync: every worker checks its own share (what it copied and applied), so the
    // step's time does not grow with the shard count; a difference on any worker rolls every
    // worker back. verification.enabled false: skipped, and progress says so.
    name: 'verified',
    scope: 'everyWorker',
    async run(ctx) {
      try {
        await ctx.runner.verification.finalPass(ctx.session, ctx.signal);
      } catch (error) {
        if (ctx.signal.aborted) throw error;
        // A difference may be a write that bypassed the block after the commit point: name the
        // cause (SourceWritesDuringCommit) rather than its symptom.
        await throwIfSourceWritten(ctx);
        throw error;
      }
    },
    // Reads that kept failing after their retries (in place, then the step's): the check cannot
    // be made, and the application must not wait for someone to act — the commit rolls back.
    // (Not for a worker that lost its shard: it acts no more.)
    failure: (error) =>
      rollsCommitBack(error) || isShardClaimLost(error)
        ? error
        : new VerificationUnavailableError(error),
  },
  {
    // Writes that reached the source after the commit point (a client that bypasses write
    // blocking: with authorization off, every client can): the destination would miss them.
    // Read from the source's change stream up to now, just before the destination opens. The
    // commit is rolled back (the source accepts writes again, the sync returns to RUNNING).
    name: 'sourceQuiet',
    scope: 'oncePerSync',
    async run(ctx) {
      await throwIfSourceWritten(ctx);
    },
  },
  {
    name: 'destinationTimeTaken',
    scope: 'everyWorker',
    async run(ctx) {
      ctx.state.destinationTime = await ctx.session.destination.clusterTime();
      // A reversible per-shard sync: the chunk map a reverse will read the destination by (its
      // balancer is still stopped here, and stays stopped after the commit: see below).
      if (reversiblePerShard(ctx))
        ctx.state.destinationSharding = await ctx.session.destinationReader!.shardingSnapshot();
    },
  },
  {
    name: 'destinationUnblocked',
    scope: 'oncePerSync',
    async run(ctx) {
      if (!blocking(ctx)) return;
      await ctx.session.destination.setUserWriteBlocking(false);
      const since = ctx.state.sourceBlockedAt;
      if (since) {
        ctx.state.cutoverSeconds = Math.round((ctx.clock.now() - since.getTime()) / 10) / 100;
        ctx.logger.info('cutover: the destination accepts writes', {
          downtimeSeconds: ctx.state.cutoverSeconds,
        });
      }
    },
  },
  {
    // Per-shard syncs stop both balancers at start (the chunk map must not move under them).
    name: FINAL_COMMIT_STEP,
    scope: 'oncePerSync',
    async run(ctx) {
      const modes = await balancerModesAtStart(ctx.session);
      if (!modes) return;
      if (reversiblePerShard(ctx)) {
        // A reverse reads the destination shard by shard with this commit's chunk map: its
        // balancer stays stopped until then (or until the reversed sync commits).
        await restoreBalancers(ctx.session.source, ctx.session.destination, {
          source: modes.source,
          destination: null,
        });
        if (modes.destination && modes.destination !== 'off')
          ctx.logger.warn(
            "the destination's balancer stays stopped: a reverse of this per-shard sync needs the chunk map of the commit; run balancerStart on it once no reverse is wanted",
          );
        return;
      }
      await restoreBalancers(ctx.session.source, ctx.session.destination, modes);
    },
  },
];

export const COMMIT_DONE = 'done';

export function commitStepIndex(step: string | undefined): number {
  if (step === COMMIT_DONE) return COMMIT_STEPS.length;
  return COMMIT_STEPS.findIndex((s) => s.name === step);
}

/** canWrite: the destination is final and open to writes. */
export function destinationWritable(state: CommitState | undefined): boolean {
  return commitStepIndex(state?.step) >= commitStepIndex('destinationUnblocked');
}

/**
 * Runs a commit step, retrying transient failures (failover, network, timeouts — as the sync
 * runner classifies them: anything not permanent) in place with jittered exponential backoff
 * (100 ms doubling, 6 tries): every step is idempotent, as a repeated `commit` already relies on.
 */
function runWithRetries(
  ctx: Omit<CommitStepContext, 'state'>,
  name: string,
  run: () => Promise<void>,
): Promise<void> {
  return retryInPlace(
    `commit step ${name}`,
    run,
    {
      attempts: 5,
      baseMs: 100,
      clock: ctx.clock,
      retryable: (error) =>
        !rollsCommitBack(error) &&
        !isPermanent(error instanceof Error ? error : new Error(String(error))),
      onRetry: ({ attempt, delayMs, error }) => {
        const failure = error instanceof Error ? error : new Error(String(error));
        ctx.logger.warn('commit step failed transiently; retrying', {
          step: name,
          error: `${failure.name}: ${failure.message}`,
          attempt,
          retryInMs: delayMs,
        });
      },
    },
    ctx.signal,
  );
}

/**
 * Runs the steps not done yet, persisting each. A failing step is recorded (`commit.failed`)
 * and rethrown: the job stays COMMITTING, progress names the step and the error, and `commit`
 * may be called again to retry from that step.
 */
export async function runCommitSteps(
  ctx: Omit<CommitStepContext, 'state'>,
  afterStep?: (step: string) => Promise<void>,
): Promise<void> {
  const { session } = ctx;
  const state: CommitState = { ...(session.job.commit ?? { step: 'started' }) };
  delete state.failed;
  const shared = shardCommitFor(session, {
    clock: ctx.clock,
    signal: ctx.signal,
    waiting: ctx.waiting,
  });
  if (shared) {
    if (commitStepIndex(state.step) < 0)
      await shared.forgetEarlierCommit(['requested', ...COMMIT_STEPS.map((s) => s.name)]);
    // Steps done before a crash may not have reached the shared record: record them again.
    for (const done of COMMIT_STEPS.slice(0, commitStepIndex(state.step) + 1))
      await shared.after(done.name);
    await shared.requested();
  }
  // A commit resumed past its block (a retry, a restart): the source is blocked again first —
  // a rollback that failed half-way may have unblocked it; writes made meanwhile come after the
  // commit point, where `sourceQuiet` finds them.
  if (
    state.sourceBlocked &&
    commitStepIndex(state.step) >= commitStepIndex('sourceBlocked') &&
    commitStepIndex(state.step) < commitStepIndex('destinationUnblocked')
  ) {
    await runWithRetries(ctx, 'sourceBlocked', () => session.source.setUserWriteBlocking(true));
  }
  for (let i = commitStepIndex(state.step) + 1; i < COMMIT_STEPS.length; i++) {
    const step = COMMIT_STEPS[i]!;
    const began = ctx.clock.now();
    let stepMs = 0;
    try {
      const where = shared
        ? await shared.before(step, COMMIT_STEPS[i - 1]?.name ?? 'requested', state)
        : 'run';
      if (where === 'run') await runWithRetries(ctx, step.name, () => step.run({ ...ctx, state }));
      stepMs = ctx.clock.now() - began;
    } catch (error) {
      const thrown = error instanceof Error ? error : new Error(String(error));
      const failure = step.failure && !ctx.signal.aborted ? step.failure(thrown) : thrown;
      ctx.logger.error('commit step failed; call commit again to retry it', {
        step: step.name,
        error: `${failure.name}: ${failure.message}`,
      });
      await session
        .save(
          (job) => {
            job.commit = {
              ...state,
              failed: { step: step.name, error: failure.name, message: failure.message },
            };
          },
          { catalogUnchanged: true },
        )
        .catch(() => undefined);
      throw failure;
    }
    state.step = step.name;
    await session.save((job) => void (job.commit = { ...state }), { catalogUnchanged: true });
    await shared?.after(step.name);
    ctx.logger.info('commit step done', { step: step.name, ms: stepMs });
    await afterStep?.(step.name);
  }
}

/**
 * canCommit (a progress field): the initial copy done, no collection waiting to be copied (nothing
 * can re-open copying before the commit), no failure, change events applied with small lag, and
 * the embedded verifier caught up (every copied range checked once, no write unchecked for more
 * than a few seconds), so the final pass — inside the write-blocked window — reads little.
 */
export function canCommitNow(
  state: string,
  session: JobSession | null,
  runner: SyncRunner | null,
): boolean {
  if (state !== 'RUNNING' || !session || !runner?.active) return false;
  if (session.job.failure || (runner.failure && !runner.retrying)) return false;
  if (session.job.phase !== 'copied' || session.copiesPending()) return false;
  const status = runner.status();
  // The verifier caught up (as mongosync since 1.17): the final pass, inside the write-blocked
  // window, then reads only the last seconds' writes instead of what the live pass never got to.
  return (
    !status.copying &&
    status.changeApplication?.readyToCommit === true &&
    runner.verification.caughtUp(session.job, session)
  );
}

/**
 * A worker of a per-shard sync joins a commit another worker has already accepted even when its
 * own lag is above the commit limit: the limit keeps the write-blocked window short, not the
 * result correct (the drain waits until this worker has applied every event up to the commit
 * point). Refusing would leave the others committing — the source write-blocked — and this one
 * RUNNING until someone sent commit again. Everything else canCommit asks still holds.
 */
export async function joinsCommitUnderWay(
  state: string,
  session: JobSession | null,
  runner: SyncRunner | null,
): Promise<boolean> {
  if (state !== 'RUNNING' || !session || !runner?.active) return false;
  if (session.job.failure || (runner.failure && !runner.retrying)) return false;
  if (session.job.phase !== 'copied' || session.copiesPending()) return false;
  const status = runner.status();
  if (status.copying || !status.changeApplication) return false;
  return anotherWorkerCommits(session);
}

/** The whole commit: the steps not done yet, then COMMITTED in one job write. */
export async function runCommit(
  ctx: Omit<CommitStepContext, 'state'>,
  afterStep?: (step: string) => Promise<void>,
): Promise<void> {
  await runCommitSteps(ctx, afterStep);
  await ctx.session.save(
    (job) => {
      job.commit = { ...job.commit!, step: COMMIT_DONE };
      job.state = 'COMMITTED';
    },
    { catalogUnchanged: true },
  );
  ctx.logger.info('commit completed', { destination: ctx.session.job.destination.name });
}

/** `commit` is refused with a named error unless the sync can be brought to a commit point. */
export function assertCommitReady(check: {
  hasChangeApplication: boolean;
  ready: boolean;
  failure: string | null;
}): void {
  if (!check.hasChangeApplication) {
    throw new ApiError(
      'InvalidState',
      'commit is not available: this build has no change event application, so the destination cannot be brought to a commit point.',
    );
  }
  if (check.ready) return;
  throw new ApiError(
    'CommitNotReady',
    check.failure
      ? `commit is not possible: the sync failed (${check.failure}).`
      : 'commit needs canCommit: the copy must be done and change events applied with small lag.',
  );
}

/**
 * Writes reached the source after it was write-blocked for the commit (after the commit point):
 * the commit is rolled back, naming where, so that nothing the application wrote is lost.
 */
export class SourceWritesDuringCommitError extends Error {
  constructor(readonly writes: SourceWrite[]) {
    const shown = writes
      .slice(0, 10)
      .map((w) => `${w.operation} on ${w.namespace}${w.id !== undefined ? ` (_id ${w.id})` : ''}`)
      .join('; ');
    super(
      `${writes.length}${writes.length >= 20 ? '+' : ''} write(s) reached the source after it was write-blocked for the commit — ${shown}. A client bypasses write blocking (with authorization off every client can); stop it and call commit again.`,
    );
    this.name = 'SourceWritesDuringCommit';
  }
}

/** Failures of the commit's checks that give the application its source back (rollback). */
export function rollsCommitBack(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return (
    name === 'SourceWritesDuringCommit' ||
    name === 'VerificationFailed' ||
    name === 'VerificationUnavailable' ||
    name === 'CommitRolledBack'
  );
}

/** The final verification could not read a side (its reads failed after their retries). */
export class VerificationUnavailableError extends Error {
  constructor(cause: unknown) {
    const inner = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super(
      `the final verification could not read the clusters (${inner}); the commit is rolled back — call commit again once both clusters answer`,
      { cause },
    );
    this.name = 'VerificationUnavailable';
  }
}

/**
 * Undoes a commit whose checks failed before the destination opened, so that no failure leaves
 * both clusters refusing writes: source writes unblocked (first), unique/TTL/hidden indexes
 * relaxed again when they were restored (the lead worker's part in a per-shard sync; the others
 * are told through the shared record), and the job back to RUNNING with the failure remembered
 * (progress shows it). The caller restarts change application; a later `commit` starts again.
 */
export async function rollBackCommit(
  session: JobSession,
  error: Error,
  logger: EngineLogger,
): Promise<void> {
  const state = session.job.commit;
  const step = state?.failed?.step ?? state?.step ?? 'started';
  const lead = !session.job.shard || session.job.shard.id === session.job.shard.coordinatorID;
  // The application's writes first: the destination may be what failed, and nothing else here
  // must keep the source closed. (Should a later part fail, the job stays COMMITTING: `commit`
  // runs the failed check again, and finds the writes made meanwhile — SourceWritesDuringCommit
  // — so it rolls back again rather than open the destination.)
  if (state?.sourceBlocked || session.job.request.enableUserWriteBlocking) {
    await session.source.setUserWriteBlocking(false);
  }
  if (lead && commitStepIndex(state?.step) >= commitStepIndex('indexesRestored')) {
    await relaxRestoredIndexes(session.destination, session.job.namespaces);
  }
  await announceRollback(session, { step, error: error.name, message: error.message });
  await session.save((job) => {
    job.state = 'RUNNING';
    delete job.commit;
    job.commitRollback = { step, error: error.name, message: error.message, at: new Date() };
  });
  logger.warn('commit rolled back: the source accepts writes again and the sync runs on', {
    step,
    error: `${error.name}: ${error.message}`,
  });
}

/** Throws SourceWritesDuringCommit when writes reached the source after the commit point. */
async function throwIfSourceWritten(ctx: CommitStepContext): Promise<void> {
  const { source } = ctx.session;
  if (!blocking(ctx) || !source.writesAfter || !ctx.state.commitPoint) return;
  const writes = await source.writesAfter(ctx.state.commitPoint as Timestamp, 20);
  if (writes.length > 0) throw new SourceWritesDuringCommitError(writes);
}
