import {
  Inject,
  Injectable,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import type { Redis } from 'ioredis';
import type { Leadership } from './leadership/leadership';
import type { ProgressBoard } from './progress/progress-board';

export const COORDINATOR_PARTS = Symbol('COORDINATOR_PARTS');

export interface CoordinatorParts {
  leadership: Leadership;
  board: ProgressBoard;
  redis: Redis;
  leaseTtlMs: number;
}

/** How often the workers' reports are read (progress is at most this old, plus a heartbeat). */
const REFRESH_MS = 500;

/**
 * The coordinator's periodic work on @nestjs/schedule: the lease tick every ttl/3 (renewal well
 * inside the TTL) and the progress refresh. On shutdown the lease is released, so another
 * replica leads at once instead of after the TTL.
 */
@Injectable()
export class CoordinatorLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    @Inject(COORDINATOR_PARTS) private readonly parts: CoordinatorParts,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  onApplicationBootstrap(): void {
    const { leadership, board, leaseTtlMs } = this.parts;
    const tick = (): void => void leadership.tick().catch(() => undefined);
    const refresh = (): void => void board.refresh().catch(() => undefined);
    this.scheduler.addInterval('leadership', setInterval(tick, Math.floor(leaseTtlMs / 3)));
    this.scheduler.addInterval('progress-refresh', setInterval(refresh, REFRESH_MS));
    refresh();
  }

  async onApplicationShutdown(): Promise<void> {
    for (const name of ['leadership', 'progress-refresh'])
      if (this.scheduler.doesExist('interval', name)) this.scheduler.deleteInterval(name);
    await this.parts.leadership.release();
    this.parts.redis.disconnect();
  }
}
