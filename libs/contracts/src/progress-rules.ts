import type { Progress } from './progress';

/** While IDLE every field but `state` and `canCommit` is null. */
export const IDLE_PROGRESS: Readonly<Progress> = Object.freeze({
  state: 'IDLE',
  canCommit: false,
  canWrite: null,
  info: null,
  lagTimeSeconds: null,
  totalEventsApplied: null,
  collectionCopy: null,
  directionMapping: null,
  syncID: null,
  coordinatorID: null,
});

/**
 * Extras an IDLE progress keeps (the coordinator's workers, before any sync starts; a standby
 * worker's role).
 */
const IDLE_EXTRAS = new Set(['instances', 'missingInstances', 'role', 'standby']);

/**
 * MongoDB's tool (1.21) offers no commit while the lag is over 30 s: canCommit is false then,
 * whatever else says (an engine may use a smaller limit of its own; a merged view of several
 * workers is held to this one too).
 */
export const CAN_COMMIT_MAX_LAG_SECONDS = 30;

/**
 * The state-dependent shape of a progress snapshot, applied where progress is
 * rendered so no engine detail can break it: IDLE reports only `state` and `canCommit` (false);
 * PAUSED has no lag.
 */
export function applyProgressRules(progress: Progress): Progress {
  if (progress.state === 'IDLE') {
    // Only a coordinator's view of its workers survives: which are registered or missing.
    const extras = Object.entries(progress).filter(([key]) => IDLE_EXTRAS.has(key));
    return { ...IDLE_PROGRESS, ...Object.fromEntries(extras) };
  }
  if (progress.state === 'PAUSED') {
    const paused: Progress = { ...progress, lagTimeSeconds: null };
    if (progress.lag !== undefined)
      paused.lag = { overallLagSeconds: null, crudLagSeconds: null, ddlLagSeconds: null };
    return paused;
  }
  const lag = progress.lag as { overallLagSeconds?: number | null } | undefined;
  const worst = Math.max(progress.lagTimeSeconds ?? 0, lag?.overallLagSeconds ?? 0);
  if (progress.canCommit && worst > CAN_COMMIT_MAX_LAG_SECONDS) {
    return { ...progress, canCommit: false };
  }
  return progress;
}
