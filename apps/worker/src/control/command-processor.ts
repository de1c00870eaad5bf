import {
  ApiError,
  isRetryableApiError,
  type CommandJobData,
  type CommandJobResult,
} from '@sync/contracts';
import type { SyncEngine } from '@sync/engine';

/**
 * One command job → one engine call. Idempotent by construction: the engine applies a command
 * id once (a re-delivered job answers success again). Fencing: a command from an older
 * leadership epoch than any this worker has accepted is refused, so a coordinator that lost its
 * lease (paused, partitioned) cannot act late. Refusals are results, not failures: the
 * coordinator reports them. Only transient faults (NotReady, a network error) throw, and BullMQ
 * retries the job. `validate` (the dry run of a start, before the coordinator sends `start` to
 * anyone) runs the engine's start checks and changes nothing.
 */
export class CommandProcessor {
  private highest = 0;

  constructor(
    private readonly engine: () => SyncEngine,
    /**
     * Order and expiry (Redis): null admits the command, a reason refuses it with
     * CommandSuperseded — a worker never runs a command older than one it has taken.
     */
    private readonly admit: (data: CommandJobData) => Promise<string | null> = async () => null,
  ) {}

  get highestEpoch(): number {
    return this.highest;
  }

  /** Raises the fence without a command (e.g. the epoch seen before a restart). */
  observeEpoch(epoch: number): void {
    this.highest = Math.max(this.highest, epoch);
  }

  async process(data: CommandJobData): Promise<CommandJobResult> {
    if (data.epoch < this.highest) {
      return {
        ok: false,
        error: 'StaleEpoch',
        errorDescription: `${data.operation} came from ${data.issuedBy} at leadership epoch ${data.epoch}; this worker has already taken commands at epoch ${this.highest}.`,
      };
    }
    const refusal = await this.admit(data);
    if (refusal !== null) {
      return { ok: false, error: 'CommandSuperseded', errorDescription: refusal };
    }
    this.highest = data.epoch;
    try {
      await this.apply(data);
      return { ok: true };
    } catch (error) {
      if (error instanceof ApiError && !isRetryableApiError(error.error)) {
        return { ok: false, error: error.error, errorDescription: error.message };
      }
      throw error;
    }
  }

  private apply(data: CommandJobData): Promise<void> {
    const engine = this.engine();
    const options = { commandId: data.commandId };
    switch (data.operation) {
      case 'validate':
        if (!data.request) throw new ApiError('InvalidRequest', 'validate without a request body');
        if (!engine.validateStart) {
          throw new ApiError('InternalError', 'this worker cannot validate a start (no dry run)');
        }
        return engine.validateStart(data.request, options);
      case 'start':
        if (!data.request) throw new ApiError('InvalidRequest', 'start without a request body');
        return engine.start(data.request, options);
      case 'pause':
        return engine.pause(options);
      case 'resume':
        return engine.resume(options);
      case 'commit':
        return engine.commit(options);
      case 'reverse':
        return engine.reverse(options);
    }
  }
}
