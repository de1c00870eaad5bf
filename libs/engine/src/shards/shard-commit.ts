import type { Timestamp } from 'bson';
import type { JobSession } from '../job/job-session';
import type { Clock } from '../ports/clock';
import type { CommitState, ShardAssignment } from '../ports/job-store';
import type { CoordinationRecord, CoordinationStore } from '../ports/coordination-store';
import { missingFrom, waitForCoordination } from './shard-sync';

/** The last commit step: once the coordinator has recorded it, the whole sync is committed. */
export const FINAL_COMMIT_STEP = 'balancersRestored';

export function sharedSyncCommitted(record: CoordinationRecord): boolean {
  return (record.commitSteps?.[FINAL_COMMIT_STEP] ?? []).includes(record.coordinatorID);
}

/**
 * Commit across the workers of a per-shard sync (commit completes only when every
 * instance has received it). Each worker records every step it has done in the shared record.
 * A step every worker performs (block the source, take its commit point, drain to it) runs on
 * each; a step performed once for the sync (restore unique indexes, open the destination,
 * restore the balancers) runs on the coordinator only after every worker has done the step
 * before it, and the followers wait until the coordinator has recorded it.
 */
export class ShardCommit {
  constructor(
    private readonly store: CoordinationStore,
    private readonly shard: ShardAssignment,
    private readonly deps: {
      clock: Clock;
      signal: AbortSignal;
      waiting?: (what: string | null) => void;
    },
  ) {}

  private get coordinating(): boolean {
    return this.shard.id === this.shard.coordinatorID;
  }

  /**
   * A commit starting afresh: this worker's marks of an earlier, rolled-back commit (a step it
   * finished after the rollback was announced) must not count for this one. Removed before
   * `requested` is marked, so no worker can wait past a step on a stale mark.
   */
  async forgetEarlierCommit(steps: readonly string[]): Promise<void> {
    await this.store.forgetSteps(steps, this.shard.id);
  }

  /** Records that this worker received `commit`; resolves when every worker has. */
  async requested(): Promise<void> {
    // A new commit: a rollback of an earlier one is history now.
    await this.store.set({ commitRolledBack: null });
    await this.store.markStep('requested', this.shard.id);
    await this.waitAll('requested', 'commit');
  }

  /** Before a step: 'run' it here, or 'skip' (the coordinator did it; its results adopted). */
  async before(
    step: { name: string; scope: 'everyWorker' | 'oncePerSync' },
    previous: string,
    state: CommitState,
  ): Promise<'run' | 'skip'> {
    if (step.scope === 'everyWorker') return 'run';
    if (this.coordinating) {
      await this.waitAll(previous, `commit step ${previous}`);
      return 'run';
    }
    const record = await waitForCoordination(
      this.store,
      (r) => {
        if (r?.commitRolledBack) throw new CommitRolledBackError(r.commitRolledBack);
        return (r?.commitSteps?.[step.name] ?? []).includes(this.shard.coordinatorID)
          ? r!
          : undefined;
      },
      this.deps,
      () => `commit: waiting for the lead worker ${this.shard.coordinatorID} (${step.name})`,
    );
    if (record.destinationTime && !state.destinationTime)
      state.destinationTime = record.destinationTime;
    // The one commit point every worker drains to.
    if (record.commitPoint && !state.commitPoint) state.commitPoint = record.commitPoint;
    return 'skip';
  }

  async after(step: string): Promise<void> {
    await this.store.markStep(step, this.shard.id);
  }

  private async waitAll(step: string, label: string): Promise<void> {
    await waitForCoordination(
      this.store,
      (r) => {
        // Another worker's check failed (its share did not verify): every worker rolls back.
        if (r?.commitRolledBack) throw new CommitRolledBackError(r.commitRolledBack);
        return r && missingFrom(r, step).length === 0 ? true : undefined;
      },
      this.deps,
      (r) => `${label}: waiting for ${missingFrom(r, step).join(', ') || 'the shared record'}`,
    );
  }
}

/** The commit's coordination across workers: a per-shard job's, null for a lone worker. */
export function shardCommitFor(
  session: JobSession,
  deps: { clock: Clock; signal: AbortSignal; waiting?: (what: string | null) => void },
): ShardCommit | null {
  const shard = session.job.shard;
  return shard && session.coordination ? new ShardCommit(session.coordination, shard, deps) : null;
}

/** The lead worker's commit point, for the others to drain to (a lone worker keeps its own). */
export async function shareCommitPoint(session: JobSession, point: Timestamp): Promise<void> {
  if (session.job.shard && session.coordination)
    await session.coordination.set({ commitPoint: point });
}

/**
 * The balancer modes found at start, to restore after commit: the shared record's for a
 * per-shard sync, the job's own for a lone worker (a sharded destination's balancer).
 */
export async function balancerModesAtStart(
  session: JobSession,
): Promise<{ source: string | null; destination: string | null } | null> {
  if (!session.job.shard) return session.job.balancers ?? null;
  return (await session.coordination?.load())?.balancers ?? null;
}

/** A per-shard worker whose sync another worker has already started committing. */
export async function anotherWorkerCommits(session: JobSession): Promise<boolean> {
  const shard = session.job.shard;
  if (!shard || !session.coordination) return false;
  const shared = await session.coordination.load();
  return (shared?.commitSteps?.requested ?? []).some((id) => id !== shard.id);
}

/**
 * A per-shard commit rolled back (its checks failed before the destination opened): every
 * worker waiting on the lead worker hears it (CommitRolledBack) and rolls back too; the steps
 * start afresh with the next `commit`. A lone worker has nothing to tell.
 */
export async function announceRollback(
  session: JobSession,
  failure: { step: string; error: string; message: string },
): Promise<void> {
  if (!session.job.shard || !session.coordination) return;
  await session.coordination.set({ commitSteps: {}, commitRolledBack: failure });
}

/** The lead worker rolled the commit back: this worker's commit ends the same way. */
export class CommitRolledBackError extends Error {
  constructor(failure: { step: string; error: string; message: string }) {
    super(
      `the commit was rolled back at step ${failure.step}: ${failure.error}: ${failure.message}`,
    );
    this.name = 'CommitRolledBack';
  }
}
