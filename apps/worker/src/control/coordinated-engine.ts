import { ApiError, type Progress, type ProgressOptions, type SyncState } from '@sync/contracts';
import type { ProgressSnapshot, SyncEngine } from '@sync/engine';

/**
 * The engine as a coordinated worker's own HTTP API sees it: progress as usual, but every
 * state-changing command is refused — it must reach all workers alike, through the coordinator.
 */
export class CoordinatedEngine implements SyncEngine {
  constructor(private readonly inner: SyncEngine) {}

  get state(): SyncState {
    return this.inner.state;
  }

  progress(options?: ProgressOptions): Progress {
    return this.inner.progress(options);
  }

  snapshot(): ProgressSnapshot {
    if (!this.inner.snapshot) throw new ApiError('InternalError');
    return this.inner.snapshot();
  }

  start(): Promise<void> {
    return refuse('start');
  }
  pause(): Promise<void> {
    return refuse('pause');
  }
  resume(): Promise<void> {
    return refuse('resume');
  }
  commit(): Promise<void> {
    return refuse('commit');
  }
  reverse(): Promise<void> {
    return refuse('reverse');
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

function refuse(operation: string): Promise<never> {
  return Promise.reject(
    new ApiError(
      'CommandsThroughCoordinator',
      `This worker is driven by a coordinator (--redis): send ${operation} to the coordinator's /api/v1/${operation}; this API serves progress only.`,
    ),
  );
}
