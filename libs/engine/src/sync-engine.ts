import type {
  CommandOptions,
  Progress,
  ProgressOptions,
  StartRequest,
  SyncState,
} from '@sync/contracts';
import type { ProgressSnapshot } from './progress/progress-snapshot';

/**
 * What the HTTP layer drives: one sync instance. Every method either succeeds or throws an
 * `ApiError` (from @sync/contracts) with a stable name; state checks live behind this facade.
 */
export interface SyncEngine {
  readonly state: SyncState;
  /** Validates against the clusters, persists the job, moves IDLE → RUNNING. */
  start(request: StartRequest, options?: CommandOptions): Promise<void>;
  /** start's checks without its writes (a coordinator validates on every worker first). */
  validateStart?(request: StartRequest, options?: CommandOptions): Promise<void>;
  /** A snapshot; never throws except NotReady while INITIALIZING. */
  progress(options?: ProgressOptions): Progress;
  /** The raw, mergeable snapshot `progress` renders (what a coordinator merges). */
  snapshot?(): ProgressSnapshot;
  pause(options?: CommandOptions): Promise<void>;
  resume(options?: CommandOptions): Promise<void>;
  commit(options?: CommandOptions): Promise<void>;
  reverse(options?: CommandOptions): Promise<void>;
  /** Stops background work (shutdown); persisted state stays as it is. */
  close(): Promise<void>;
}
