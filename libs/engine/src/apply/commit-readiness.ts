import type { Timestamp } from 'bson';

/**
 * Largest lag at which `canCommit` is offered. Commit write-blocks the source and then drains
 * the backlog, so the lag is roughly the user's write downtime. mongosync allows 30 s; we take
 * 10 s: a noticeably shorter outage, yet above the 10 s periodic no-op interval of an idle
 * replica set, so a quiet but healthy sync never flaps between committable and not.
 */
export const COMMIT_LAG_LIMIT_SECONDS = 10;

/**
 * Seconds between the source's latest cluster time and the applied position (progress
 * `lagTimeSeconds`). The applied position includes the batch high-water mark, so a source that
 * only writes no-ops shows ~0, not a growing number.
 */
export function lagSeconds(sourceLatest: Timestamp, applied: Timestamp | undefined): number | null {
  if (!applied) return null;
  return Math.max(0, sourceLatest.t - applied.t);
}

export interface CommitReadinessInput {
  copyDone: boolean;
  applierRunning: boolean;
  lagSeconds: number | null;
  limitSeconds?: number;
}

/** Progress `canCommit`: copy finished and change events applied with a small lag. */
export function canCommit(input: CommitReadinessInput): boolean {
  const limit = input.limitSeconds ?? COMMIT_LAG_LIMIT_SECONDS;
  return (
    input.copyDone && input.applierRunning && input.lagSeconds !== null && input.lagSeconds <= limit
  );
}
