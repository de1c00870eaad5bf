import type { ProgressInfo, SyncState } from './sync-state';

/** `progress` object of GET /api/v1/progress (see the top-level README's API section). */
export interface Progress {
  state: SyncState;
  canCommit: boolean;
  canWrite: boolean | null;
  info: ProgressInfo | null;
  lagTimeSeconds: number | null;
  totalEventsApplied: number | null;
  collectionCopy: { estimatedTotalBytes: number; estimatedCopiedBytes: number } | null;
  directionMapping: { Source: string; Destination: string } | null;
  syncID: string | null;
  coordinatorID: string | null;
  /** Extra detail beyond the seed fields (never replaces one). */
  [extra: string]: unknown;
}
