import {
  ApiError,
  IDLE_PROGRESS,
  type CommandOptions,
  type Progress,
  type ProgressOptions,
  type StartRequest,
  type SyncState,
} from '@sync/contracts';
import {
  systemClock,
  type Clock,
  type CoordinationStore,
  type EngineLogger,
  type ProgressSnapshot,
  type SyncEngine,
  type WorkerClaim,
} from '@sync/engine';
import { ShardClaim } from '@sync/engine/shards/shard-claim';

/** What a standby reads and writes on one cluster (the destination of its shard's sync). */
export interface StandbyCluster {
  name: string;
  store: CoordinationStore;
  /** The state of the shard's job on this cluster (null: none), read without writing. */
  jobState(): Promise<SyncState | null>;
}

export interface StandbyEngineOptions {
  /** The shard id (`--id`). */
  shardId: string;
  /** This process's claim instance: the engine created on takeover claims with it too. */
  instance: string;
  /** Every configured cluster: the shard's claim lives on its sync's destination. */
  clusters: readonly StandbyCluster[];
  logger: EngineLogger;
  claim: { renewMs: number; staleMs: number };
  clock?: Clock;
  /** Creates the real engine once the shard was taken over (it restores from the checkpoint). */
  activate: () => Promise<SyncEngine & { ready?: Promise<void> }>;
  /** Called once the shard was taken over, before `activate`. */
  onTakeover?: (details: { epoch: number; waitedMs: number }) => void;
  /** Closes what the standby opened for watching (its clients). */
  onClose?: () => Promise<void>;
}

/**
 * A worker started with `--standby`: until its shard's claim goes stale (the active worker
 * stopped renewing it, judged by the destination's clock) it is this engine — it answers progress
 * with `role: "standby"` (and the job's state read from the destination), refuses every command
 * with WorkerIsStandby, writes nothing to the destination, opens no change stream and takes no
 * command from the shard's queue (the agent attaches no engine before the takeover). Once it took
 * the shard over (ShardClaim in standby mode: epoch + 1, the older epochs fenced off) it creates
 * the real engine with the same claim instance, which restores the job from its checkpoint
 * exactly as a restarted worker does, and forwards everything to it.
 */
export class StandbyEngine implements SyncEngine {
  private engine: SyncEngine | null = null;
  private readonly clock: Clock;
  private readonly watching = new AbortController();
  private readonly since: number;
  private holder: { cluster: string; claim: WorkerClaim } | null = null;
  private jobState: SyncState | null = null;
  private gate: ShardClaim | null = null;
  private closed = false;
  /** Resolves once the real engine exists (never while standby). */
  readonly activated: Promise<SyncEngine>;

  constructor(private readonly options: StandbyEngineOptions) {
    this.clock = options.clock ?? systemClock;
    this.since = this.clock.now();
    this.activated = this.run();
    this.activated.catch(() => undefined);
  }

  get role(): 'standby' | 'active' {
    return this.engine ? 'active' : 'standby';
  }

  get state(): SyncState {
    return this.engine?.state ?? this.jobState ?? 'IDLE';
  }

  progress(options?: ProgressOptions): Progress {
    if (this.engine) return { ...this.engine.progress(options), role: 'active' };
    const claim = this.holder?.claim;
    return {
      ...IDLE_PROGRESS,
      state: this.jobState ?? 'IDLE',
      syncID: this.options.shardId,
      role: 'standby',
      standby: {
        since: new Date(this.since).toISOString(),
        // Who is active: the claim's instance and epoch, and its last heartbeat by the
        // destination's clock (never compared with this host's clock here).
        activeInstance: claim?.instance ?? null,
        activeEpoch: claim?.epoch ?? null,
        activeHeartbeatAt: claim ? claim.heartbeatAt.toISOString() : null,
        instance: this.options.instance,
        takeoverAfterSeconds: this.options.claim.staleMs / 1000,
        note: claim
          ? `standing by the active worker of shard ${this.options.shardId}: takes it over once its claim is ${this.options.claim.staleMs / 1000} s stale by the destination's clock`
          : `no worker has claimed shard ${this.options.shardId} yet (no sync started): a standby takes over only from an active worker`,
      },
    };
  }

  snapshot(): ProgressSnapshot {
    if (!this.engine) throw standbyError('report a mergeable snapshot');
    if (!this.engine.snapshot) throw new ApiError('InternalError');
    return this.engine.snapshot();
  }

  start(request: StartRequest, options?: CommandOptions): Promise<void> {
    return this.engine
      ? this.engine.start(request, options)
      : Promise.reject(standbyError('start'));
  }
  async validateStart(request: StartRequest, options?: CommandOptions): Promise<void> {
    if (!this.engine) throw standbyError('validate a start');
    if (!this.engine.validateStart) throw new ApiError('InternalError');
    return this.engine.validateStart(request, options);
  }
  pause(options?: CommandOptions): Promise<void> {
    return this.engine ? this.engine.pause(options) : Promise.reject(standbyError('pause'));
  }
  resume(options?: CommandOptions): Promise<void> {
    return this.engine ? this.engine.resume(options) : Promise.reject(standbyError('resume'));
  }
  commit(options?: CommandOptions): Promise<void> {
    return this.engine ? this.engine.commit(options) : Promise.reject(standbyError('commit'));
  }
  reverse(options?: CommandOptions): Promise<void> {
    return this.engine ? this.engine.reverse(options) : Promise.reject(standbyError('reverse'));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.watching.abort();
    this.gate?.stop();
    await this.engine?.close();
    await this.options.onClose?.().catch(() => undefined);
  }

  private async run(): Promise<SyncEngine> {
    const { shardId, logger } = this.options;
    logger.info('standby: watching the claim of shard ' + shardId, {
      instance: this.options.instance,
      staleMs: this.options.claim.staleMs,
    });
    const watch = this.describeLoop();
    const cluster = await this.destination();
    const gate = new ShardClaim(shardId, this.clock, logger, {
      ...this.options.claim,
      instance: this.options.instance,
      standby: true,
    });
    this.gate = gate;
    await gate.acquire(
      cluster.store,
      (error) => {
        // The engine's own claim (same instance) sees the same loss and stops the run.
        logger.warn('standby: the shard claim taken over was lost', {
          error: error.error,
          description: error.message,
        });
      },
      this.watching.signal,
    );
    this.options.onTakeover?.({ epoch: gate.epoch!, waitedMs: this.clock.now() - this.since });
    logger.info('standby: took the shard over; resuming it from its checkpoint', {
      worker: shardId,
      epoch: gate.epoch,
      cluster: cluster.name,
    });
    this.watching.abort();
    await watch;
    if (this.closed) throw new Error('closed while standby');
    const engine = await this.options.activate();
    this.engine = engine;
    // The engine's own claim renews the same instance once its job is restored; the gate keeps
    // renewing until then (an IDLE engine claims only at start, so the gate keeps it).
    void engine.ready?.then(
      () => {
        if (engine.state !== 'IDLE' && engine.state !== 'INITIALIZING') gate.stop();
      },
      () => undefined,
    );
    await this.options.onClose?.().catch(() => undefined);
    return engine;
  }

  /** The cluster holding the shard's claim (the newest, if several): waits until one does. */
  private async destination(): Promise<StandbyCluster> {
    for (;;) {
      if (this.watching.signal.aborted) throw new Error('closed while standby');
      if (this.holder) {
        const found = this.options.clusters.find((c) => c.name === this.holder!.cluster);
        if (found) return found;
      }
      await this.clock.sleep(250, this.watching.signal);
    }
  }

  /** Reads (never writes) the claim and the job's state every second, for progress. */
  private async describeLoop(): Promise<void> {
    while (!this.watching.signal.aborted) {
      let newest: { cluster: string; claim: WorkerClaim } | null = null;
      for (const cluster of this.options.clusters) {
        try {
          const claim = await cluster.store.readClaim(this.options.shardId);
          if (claim && (!newest || claim.heartbeatAt > newest.claim.heartbeatAt))
            newest = { cluster: cluster.name, claim };
        } catch (error) {
          this.options.logger.debug('standby: reading the claim failed', {
            cluster: cluster.name,
            error: error instanceof Error ? error.message : String(error),
          });
        }
      }
      if (newest) {
        this.holder = newest;
        const cluster = this.options.clusters.find((c) => c.name === newest.cluster)!;
        this.jobState = await cluster.jobState().catch(() => this.jobState);
      }
      await this.clock.sleep(1_000, this.watching.signal);
    }
  }
}

function standbyError(operation: string): ApiError {
  return new ApiError(
    'WorkerIsStandby',
    `This worker is a standby (--standby): it cannot ${operation} until it takes its shard over from the active worker. Send commands to the coordinator (or the shard's active worker).`,
  );
}
