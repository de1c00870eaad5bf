import { IDLE_PROGRESS, type Progress, type ProgressInfo, type SyncState } from '@sync/contracts';
import type { ChangeApplicationStatus } from '../job/phases';

export interface ProgressInputs {
  state: SyncState;
  canCommit: boolean;
  canWrite: boolean;
  copyStarted: boolean;
  copyDone: boolean;
  estimatedTotalBytes: number;
  copiedBytes: number;
  changeApplication: ChangeApplicationStatus | null;
  sourceMapping: string;
  destinationMapping: string;
  syncID: string;
  coordinatorID: string | null;
  failure: string | null;
}

/**
 * Rules for the copy figures:
 * - before the copy starts: copied 0, total 1 (and 0 means "copy not started" to users);
 * - during the copy: total is the planning estimate, raised to the copied figure if the source
 *   grew (collStats is an estimate; copied must never exceed total, while the total may change
 *   during the copy);
 * - when the copy ends: total := copied (100%); an empty selection reports 1/1 so that "copied
 *   > 0" still tells users the copy has begun.
 */
export function copyFigures(
  inputs: Pick<ProgressInputs, 'copyStarted' | 'copyDone' | 'estimatedTotalBytes' | 'copiedBytes'>,
): {
  estimatedTotalBytes: number;
  estimatedCopiedBytes: number;
} {
  if (!inputs.copyStarted) return { estimatedTotalBytes: 1, estimatedCopiedBytes: 0 };
  if (inputs.copyDone) {
    const copied = Math.max(1, inputs.copiedBytes);
    return { estimatedTotalBytes: copied, estimatedCopiedBytes: copied };
  }
  const total = Math.max(1, inputs.estimatedTotalBytes, inputs.copiedBytes);
  return { estimatedTotalBytes: total, estimatedCopiedBytes: Math.min(inputs.copiedBytes, total) };
}

export function buildProgress(inputs: ProgressInputs): Progress {
  if (inputs.state === 'IDLE') return { ...IDLE_PROGRESS };
  const cea = inputs.changeApplication;
  const progress: Progress = {
    state: inputs.state,
    canCommit: inputs.canCommit,
    canWrite: inputs.canWrite,
    info: infoFor(inputs),
    lagTimeSeconds:
      inputs.state === 'PAUSED'
        ? null
        : inputs.state === 'COMMITTED'
          ? 0
          : (cea?.lagTimeSeconds ?? null),
    totalEventsApplied: cea?.totalEventsApplied ?? null,
    collectionCopy: copyFigures(inputs),
    directionMapping: { Source: inputs.sourceMapping, Destination: inputs.destinationMapping },
    syncID: inputs.syncID,
    coordinatorID: inputs.coordinatorID,
  };
  if (inputs.failure) progress.failure = inputs.failure;
  return progress;
}

function infoFor(inputs: ProgressInputs): ProgressInfo {
  if (inputs.state === 'COMMITTED') return 'commit completed';
  if (inputs.state === 'COMMITTING') return 'waiting for commit to complete';
  if (inputs.copyDone && inputs.changeApplication) return 'change event application';
  return 'collection copy';
}
