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
 * Commit across the workers of a per-shard sync (SEED-API: commit completes only when every
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

  /** Records that this worker received `commit`; resolves when every worker has. */
  async requested(): Promise<void> {
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
      (r) =>
        (r?.commitSteps?.[step.name] ?? []).includes(this.shard.coordinatorID) ? r! : undefined,
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
      (r) => (r && missingFrom(r, step).length === 0 ? true : undefined),
      this.deps,
      (r) => `${label}: waiting for ${missingFrom(r, step).join(', ') || 'the shared record'}`,
    );
  }
}
