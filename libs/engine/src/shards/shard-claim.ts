import { randomBytes } from 'node:crypto';
import { ApiError } from '@sync/contracts';
import type { Clock } from '../ports/clock';
import type { CoordinationStore } from '../ports/coordination-store';
import type { EngineLogger } from '../ports/engine-logger';

export interface ShardClaimOptions {
  /** Heartbeat period (default 3 s). */
  renewMs?: number;
  /** A claim whose heartbeat is older than this is free to take over (default 10 s). */
  staleMs?: number;
}

/**
 * One process per shard: a worker holds its shard id in the destination's `workers` collection
 * and renews it while it lives. A second worker launched with the same `--id` is refused
 * (`DuplicateShardWorker`) instead of syncing the same shard twice; a worker restarted after a
 * crash takes the claim over once the dead one's heartbeat is stale.
 */
export class ShardClaim {
  readonly instance = randomBytes(8).toString('hex');
  private renewing: AbortController | null = null;

  constructor(
    private readonly worker: string,
    private readonly clock: Clock,
    private readonly logger: EngineLogger,
    private readonly options: ShardClaimOptions = {},
  ) {}

  private get staleMs(): number {
    return this.options.staleMs ?? 10_000;
  }

  /** Claims the shard on `store` (waiting out a crashed predecessor's claim), then renews it. */
  async acquire(store: CoordinationStore, onLost: (error: ApiError) => void): Promise<void> {
    const deadline = this.clock.now() + this.staleMs + 1_000;
    for (;;) {
      const now = this.clock.now();
      const held = await store.claim(
        this.worker,
        this.instance,
        new Date(now),
        new Date(now - this.staleMs),
      );
      if (held.instance === this.instance) break;
      // A restart right after a crash finds its own dead predecessor's fresh claim: give it
      // the time to go stale. A live duplicate keeps renewing and is refused.
      if (this.clock.now() >= deadline) throw this.duplicate(held.heartbeatAt);
      await this.clock.sleep(1_000);
    }
    this.renew(store, onLost);
  }

  stop(): void {
    this.renewing?.abort();
    this.renewing = null;
  }

  private renew(store: CoordinationStore, onLost: (error: ApiError) => void): void {
    this.stop();
    const controller = new AbortController();
    this.renewing = controller;
    void (async () => {
      while (!controller.signal.aborted) {
        await this.clock
          .sleep(this.options.renewMs ?? 3_000, controller.signal)
          .catch(() => undefined);
        if (controller.signal.aborted) return;
        try {
          const now = this.clock.now();
          const held = await store.claim(
            this.worker,
            this.instance,
            new Date(now),
            new Date(now - this.staleMs),
          );
          if (held.instance !== this.instance) {
            controller.abort();
            onLost(this.duplicate(held.heartbeatAt));
            return;
          }
        } catch (error) {
          this.logger.warn('renewing the shard claim failed; retrying', {
            error: error instanceof Error ? error.message : String(error),
          });
        }
      }
    })();
  }

  private duplicate(heartbeatAt: Date): ApiError {
    return new ApiError(
      'DuplicateShardWorker',
      `another worker runs shard ${this.worker} (its heartbeat: ${heartbeatAt.toISOString()}); each source shard needs exactly one worker. Stop the other one, or wait ${Math.round(this.staleMs / 1000)} s after it died.`,
    );
  }
}
