/** States of a sync instance. */
export const SYNC_STATES = [
  'INITIALIZING',
  'IDLE',
  'RUNNING',
  'PAUSED',
  'COMMITTING',
  'COMMITTED',
  'REVERSING',
] as const;

export type SyncState = (typeof SYNC_STATES)[number];

/** Values of `progress.info`. */
export type ProgressInfo =
  | 'collection copy'
  | 'change event application'
  | 'waiting for commit to complete'
  | 'commit completed';
