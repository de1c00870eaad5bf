import { ApiError } from '@sync/contracts';
import type { SyncEngine } from '@sync/engine';

/**
 * The engine as the HTTP layer sees it. The API listens before the engine has connected and
 * restored its job, so progress can answer NotReady (503, "retry is safe") instead of the
 * port staying closed for minutes.
 */
export class EngineHolder {
  private engine: SyncEngine | null = null;
  private failure: unknown = null;
  private pending: Promise<SyncEngine> | null = null;

  /** Starts creating the engine once; failures are kept and reported by `current()`. */
  initialize(create: () => Promise<SyncEngine>): Promise<SyncEngine> {
    this.pending ??= create().then(
      (engine) => (this.engine = engine),
      (error: unknown) => {
        this.failure = error;
        throw error;
      },
    );
    return this.pending;
  }

  /** The engine, or the error every operation answers while there is none. */
  current(): SyncEngine {
    if (this.engine) return this.engine;
    if (this.failure instanceof ApiError) throw this.failure;
    if (this.failure)
      throw new ApiError('InternalError', 'The sync engine failed to start; see the log.');
    throw new ApiError(
      'NotReady',
      'The instance is still INITIALIZING (connecting and restoring its state); retry shortly.',
    );
  }

  /** Waits for a creation in flight, so a shutdown during boot still closes what was opened. */
  async close(): Promise<void> {
    const engine = this.engine ?? (await this.pending?.catch(() => null)) ?? null;
    await engine?.close();
  }
}
