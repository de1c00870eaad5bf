import {
  assertOperationAllowed,
  type CommandOptions,
  type Progress,
  type ProgressOptions,
  type StartRequest,
  type SyncState,
} from '@sync/contracts';
import type { SyncEngine } from '@sync/engine';

/** A SyncEngine with the real state rules and no clusters, recording what it was asked. */
export class FakeSyncEngine implements SyncEngine {
  state: SyncState = 'IDLE';
  canCommit = false;
  started: StartRequest[] = [];
  /** Command ids the operations were called with, in order. */
  commandIds: Array<string | undefined> = [];
  closed = false;
  /** When set, the next operation throws it (the engine refusing, e.g. a topology rule). */
  failNext: Error | null = null;

  async start(request: StartRequest, options?: CommandOptions): Promise<void> {
    this.commandIds.push(options?.commandId);
    this.throwIfAsked();
    assertOperationAllowed('start', this.state);
    this.started.push(request);
    this.state = 'RUNNING';
  }

  /** Options progress was last asked with. */
  progressOptions: ProgressOptions | undefined;

  progress(options?: ProgressOptions): Progress {
    this.progressOptions = options;
    return {
      state: this.state,
      canCommit: this.canCommit,
      canWrite: false,
      info: 'collection copy',
      lagTimeSeconds: 3,
      totalEventsApplied: 0,
      collectionCopy: { estimatedTotalBytes: 1, estimatedCopiedBytes: 0 },
      directionMapping: { Source: 'cluster0: localhost:1', Destination: 'cluster1: localhost:2' },
      syncID: 'worker',
      coordinatorID: 'worker',
    };
  }

  async pause(options?: CommandOptions): Promise<void> {
    this.commandIds.push(options?.commandId);
    this.move('pause', 'PAUSED');
  }

  async resume(options?: CommandOptions): Promise<void> {
    this.commandIds.push(options?.commandId);
    this.move('resume', 'RUNNING');
  }

  async commit(options?: CommandOptions): Promise<void> {
    this.commandIds.push(options?.commandId);
    this.move('commit', 'COMMITTED');
  }

  async reverse(options?: CommandOptions): Promise<void> {
    this.commandIds.push(options?.commandId);
    this.move('reverse', 'RUNNING');
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private move(operation: 'pause' | 'resume' | 'commit' | 'reverse', next: SyncState): void {
    this.throwIfAsked();
    assertOperationAllowed(operation, this.state);
    this.state = next;
  }

  private throwIfAsked(): void {
    const error = this.failNext;
    this.failNext = null;
    if (error) throw error;
  }
}
