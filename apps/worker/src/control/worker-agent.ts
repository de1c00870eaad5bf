import {
  ApiError,
  commandQueueName,
  type CommandJobData,
  type CommandJobResult,
  type WorkerReport,
} from '@sync/contracts';
import type { SyncEngine } from '@sync/engine';
import {
  admitCommand,
  createRedis,
  describeRedisError,
  publishHeartbeat,
  standbyRegistryId,
  withdrawRegistration,
  type JsonLogger,
  type RoleRegistration,
} from '@sync/service';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { CommandProcessor } from './command-processor';
import type { EpochRecord } from './epoch-record';

export interface WorkerAgentOptions {
  redisUrl: string;
  /** --id, or UNSHARDED_WORKER_ID for a worker without one. */
  workerId: string;
  shardId: string | null;
  logger: JsonLogger;
  /**
   * This process' wall clock (shifted by CLUSTER_SYNC_TEST_CLOCK_OFFSET_MS in tests). Only
   * informative: Redis stamps every heartbeat with its own TIME, which the coordinator judges.
   */
  wallClock?: () => number;
  /** Where the highest coordinator epoch taken is kept across restarts (cluster1). */
  epochRecord?: EpochRecord;
  /** This process's shard-claim instance (shown in the coordinator's progress). */
  instance?: string;
  /**
   * Started with --standby: registers beside the shard's active worker (its own registry key)
   * until `becomeActive`, and takes no command (no engine is attached before the takeover).
   */
  standby?: boolean;
}

/**
 * A worker's membership of a coordinated sync: it registers in Redis, publishes a report
 * (progress snapshot + timestamp) every heartbeat, and consumes its own command queue. None of
 * this is on the data path: the engine syncs whether Redis is up or not, and the agent picks up
 * again (re-registers, resumes consuming) when Redis comes back.
 */
export class WorkerAgent {
  private engine: SyncEngine | null = null;
  private readonly redis: Redis;
  private readonly processor: CommandProcessor;
  private readonly engineWaiters: Array<() => void> = [];
  private stopConsumer: (() => void) | null = null;
  private resumeConsumer: (() => void) | null = null;
  private consuming = true;
  private url: string | null = null;
  private readonly registeredAt: number;
  private readonly wallClock: () => number;
  private closed = false;
  private standing: boolean;

  constructor(private readonly options: WorkerAgentOptions) {
    this.standing = !!options.standby;
    this.wallClock = options.wallClock ?? (() => Date.now());
    this.registeredAt = this.wallClock();
    this.redis = createRedis(options.redisUrl, 'command', (message) =>
      options.logger.warn(`${message}; the sync goes on, commands wait`),
    );
    this.redis.on('ready', () => options.logger.info('joined the coordinator through Redis'));
    this.processor = new CommandProcessor(
      () => {
        if (!this.engine) throw new ApiError('NotReady');
        return this.engine;
      },
      (data) => admitCommand(this.redis, options.workerId, data),
      options.epochRecord,
      (reason) => this.stopConsuming(reason),
    );
  }

  /**
   * The consumer registers how to stop it (this process is not its shard's live worker) and how
   * to start it again (the engine claimed its shard again after a lapsed lease).
   */
  onStopConsuming(stop: () => void, resume?: () => void): void {
    this.stopConsumer = stop;
    this.resumeConsumer = resume ?? null;
  }

  /** False once this process found it is not its shard's live worker: it takes no commands. */
  get consumes(): boolean {
    return this.consuming;
  }

  private stopConsuming(reason: string): void {
    if (!this.consuming) return;
    this.consuming = false;
    this.options.logger.warn(
      "this process is not its shard's live worker; it stops taking the shard's commands and beating under its id",
      { reason },
    );
    this.stopConsumer?.();
  }

  private resumeConsuming(): void {
    if (this.consuming || this.closed) return;
    this.consuming = true;
    this.options.logger.info(
      "this process holds its shard again; it takes the shard's commands and beats under its id",
    );
    this.resumeConsumer?.();
  }

  /** `standby` until the shard was taken over, `active` after (and for every other worker). */
  get role(): 'active' | 'standby' {
    return this.standing ? 'standby' : 'active';
  }

  /** The key this worker registers under: the worker id, or a standby's own key. */
  private get registryId(): string {
    return this.standing
      ? standbyRegistryId(this.options.workerId, this.options.instance ?? 'unknown')
      : this.options.workerId;
  }

  /**
   * A standby took its shard over: it withdraws its standby registration and, from its next
   * heartbeat on, registers under the shard id (replacing the dead active worker's entry).
   */
  async becomeActive(): Promise<void> {
    if (!this.standing) return;
    const old = this.registryId;
    this.standing = false;
    try {
      if (this.redis.status === 'ready') await withdrawRegistration(this.redis, old);
    } catch (error) {
      this.options.logger.debug('standby registration not withdrawn (it expires)', {
        error: describeRedisError(error),
      });
    }
    await this.heartbeat();
  }

  /** The engine exists: the command consumer starts (never before, so none is taken too early). */
  attach(engine: SyncEngine): void {
    this.engine = engine;
    for (const waiter of this.engineWaiters.splice(0)) waiter();
  }

  /** Runs `start` once the engine exists (at once if it does). */
  whenEngineReady(start: () => void): void {
    if (this.engine) start();
    else this.engineWaiters.push(start);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  setUrl(url: string): void {
    this.url = url;
  }

  /**
   * Register (idempotent: Redis may have restarted empty, or the coordinator expired this
   * registration) and publish this worker's report, stamped with Redis' TIME in one script.
   */
  async heartbeat(): Promise<void> {
    if (this.engine) {
      const notLive = this.processor.notLiveReason();
      if (notLive) this.stopConsuming(notLive);
      else this.resumeConsuming();
    }
    // Not the shard's live worker (a duplicate --id, or its claim lost — say to a standby that
    // took the shard over): it no longer beats under the shard id, which the live worker uses;
    // its own API still answers why.
    if (!this.consuming) return;
    if (this.closed || this.redis.status !== 'ready') return;
    const registration: RoleRegistration = {
      id: this.registryId,
      shardId: this.options.shardId,
      queue: commandQueueName(this.options.workerId),
      url: this.url,
      registeredAt: this.registeredAt,
      role: this.role,
      ...(this.options.instance ? { instance: this.options.instance } : {}),
    };
    try {
      await publishHeartbeat(this.redis, registration, this.report());
    } catch (error) {
      this.options.logger.debug('heartbeat not published', { error: describeRedisError(error) });
    }
  }

  /** The BullMQ consumer (closed by @nestjs/bullmq on shutdown) stops before this. */
  async close(): Promise<void> {
    this.closed = true;
    this.redis.disconnect();
    await (this.options.epochRecord as { close?: () => Promise<void> } | undefined)?.close?.();
  }

  /** One command job from this worker's queue (CommandConsumer, @nestjs/bullmq). */
  async take(job: Job<CommandJobData, CommandJobResult>): Promise<CommandJobResult> {
    const { operation, commandId, epoch, issuedBy, sequence } = job.data;
    // A validate carries its start's command id: logged apart, so "command received" counts each
    // command once.
    this.options.logger.info(
      operation === 'validate' ? 'start validation received' : 'command received',
      {
        operation,
        commandId,
        epoch,
        issuedBy,
        sequence,
        attempt: job.attemptsMade + 1,
      },
    );
    const result = await this.processor.process(job.data);
    if (!result.ok) this.options.logger.warn('command refused', { operation, ...result });
    await this.heartbeat(); // published before the job completes: the coordinator's next read shows it
    return result;
  }

  private report(): WorkerReport {
    const base = { id: this.registryId, at: this.wallClock() };
    const highestEpoch = this.processor.highestEpoch;
    if (this.standing) {
      return {
        ...base,
        snapshot: null,
        progress: null,
        error: {
          error: 'WorkerIsStandby',
          errorDescription: `standby of shard ${this.options.workerId}: it takes the shard over once the active worker's claim is stale`,
        },
        highestEpoch,
      };
    }
    try {
      if (!this.engine) throw new ApiError('NotReady');
      const progress = this.engine.progress();
      const snapshot = this.engine.snapshot?.() ?? null;
      return { ...base, snapshot, progress, error: null, highestEpoch };
    } catch (error) {
      const named = error instanceof ApiError ? error : new ApiError('InternalError');
      return {
        ...base,
        snapshot: null,
        progress: null,
        error: { error: named.error, errorDescription: named.message },
        highestEpoch,
      };
    }
  }
}
