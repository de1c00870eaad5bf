import {
  ApiError,
  isRetryableApiError,
  type CommandJobData,
  type CommandJobResult,
} from '@sync/contracts';
import type { SyncEngine } from '@sync/engine';
import type { EpochRecord } from './epoch-record';

/** Errors of an engine that is not (or no longer) the live worker of its shard. */
const NOT_THE_LIVE_WORKER = new Set(['ShardClaimLost', 'DuplicateShardWorker']);

/**
 * Thrown (never a result) when this process is not its shard's live worker: BullMQ puts the
 * command back and retries it — on the same queue, which the live process consumes too.
 */
export class NotTheLiveWorkerError extends Error {
  constructor(reason: string) {
    super(`this process does not hold its shard (${reason}); the command is left to the live one`);
    this.name = 'NotTheLiveWorker';
  }
}

/**
 * One command job → one engine call. Idempotent by construction: the engine applies a command
 * id once (a re-delivered job answers success again). Fencing: a command from an older
 * leadership epoch than any this worker has accepted is refused, so a coordinator that lost its
 * lease (paused, partitioned) cannot act late. Refusals are results, not failures: the
 * coordinator reports them. Only transient faults (NotReady, a network error) throw, and BullMQ
 * retries the job. `validate` (the dry run of a start, before the coordinator sends `start` to
 * anyone) runs the engine's start checks and changes nothing.
 *
 * The highest epoch is persisted (`record`) before a command of a newer epoch runs and loaded
 * before the first command is taken, so a restarted worker refuses what a deposed coordinator
 * sent. A process that is not its shard's live worker (its claim lost, or a duplicate `--id`)
 * takes no command: it throws NotTheLiveWorkerError and calls `notLive` (the consumer stops).
 */
export class CommandProcessor {
  private highest = 0;
  private loaded: Promise<void> | null = null;

  constructor(
    private readonly engine: () => SyncEngine,
    /**
     * Order and expiry (Redis): null admits the command, a reason refuses it with
     * CommandSuperseded — a worker never runs a command older than one it has taken.
     */
    private readonly admit: (data: CommandJobData) => Promise<string | null> = async () => null,
    private readonly record?: EpochRecord,
    private readonly notLive: (reason: string) => void = () => undefined,
  ) {}

  /** Loads the persisted epoch once (again after a failed attempt). */
  private loadEpoch(): Promise<void> {
    if (!this.record) return Promise.resolve();
    this.loaded ??= this.record.load().then(
      (epoch) => this.observeEpoch(epoch),
      (error: unknown) => {
        this.loaded = null;
        throw error;
      },
    );
    return this.loaded;
  }

  /** Why this process is not its shard's live worker, or null when it is. */
  notLiveReason(): string | null {
    try {
      this.engine().progress();
      return null;
    } catch (error) {
      return error instanceof ApiError && NOT_THE_LIVE_WORKER.has(error.error) ? error.error : null;
    }
  }

  get highestEpoch(): number {
    return this.highest;
  }

  /** Raises the fence without a command (e.g. the epoch seen before a restart). */
  observeEpoch(epoch: number): void {
    this.highest = Math.max(this.highest, epoch);
  }

  async process(data: CommandJobData): Promise<CommandJobResult> {
    const notLive = this.notLiveReason();
    if (notLive) {
      this.notLive(notLive);
      throw new NotTheLiveWorkerError(notLive);
    }
    await this.loadEpoch(); // a transient failure throws: BullMQ retries the job
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
    if (data.epoch > this.highest) await this.record?.raise(data.epoch);
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
