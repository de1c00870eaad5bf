import {
  Inject,
  Injectable,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import type { Redis } from 'ioredis';
import type { ClusterWatch } from './clusters/cluster-watch';
import type { Leadership } from './leadership/leadership';
import type { ProgressBoard } from './progress/progress-board';

export const COORDINATOR_PARTS = Symbol('COORDINATOR_PARTS');

export interface CoordinatorParts {
  leadership: Leadership;
  board: ProgressBoard;
  clusters: ClusterWatch;
  redis: Redis;
  leaseTtlMs: number;
}

/** How often the workers' reports are read (progress is at most this old, plus a heartbeat). */
export const REFRESH_MS = 500;
/** The lease's tick is checked this often and runs every ttl/3 (monotonic clock). */
export const LEASE_CHECK_MS = 250;
/** Cluster pings and the source's shard list (MongoDB's tool pings every 30 s). */
export const CLUSTER_WATCH_MS = 10_000;

/**
 * The coordinator's periodic work, declared with @nestjs/schedule's @Interval: the lease tick
 * every ttl/3 (renewal well inside the TTL; checked every LEASE_CHECK_MS since the TTL is a
 * runtime setting), the progress refresh, and the clusters' pings and shard list. On shutdown
 * the lease is released, so another replica leads at once instead of after the TTL.
 */
@Injectable()
export class CoordinatorLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  private lastTick = Number.NEGATIVE_INFINITY;
  private stopped = false;

  constructor(@Inject(COORDINATOR_PARTS) private readonly parts: CoordinatorParts) {}

  onApplicationBootstrap(): void {
    this.refresh();
    this.watchClusters();
  }

  @Interval('leadership', LEASE_CHECK_MS)
  leaseTick(): void {
    const now = performance.now();
    if (this.stopped || now - this.lastTick < Math.floor(this.parts.leaseTtlMs / 3)) return;
    this.lastTick = now;
    void this.parts.leadership.tick().catch(() => undefined);
  }

  @Interval('progress-refresh', REFRESH_MS)
  refresh(): void {
    if (!this.stopped) void this.parts.board.refresh().catch(() => undefined);
  }

  @Interval('cluster-watch', CLUSTER_WATCH_MS)
  watchClusters(): void {
    if (!this.stopped) void this.parts.clusters.look(this.parts.board.lastRoster()).catch(() => undefined);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.parts.leadership.release();
    this.parts.redis.disconnect();
  }
}
