import { ApiError, type Progress, type SyncState } from '@sync/contracts';
import type { Redis } from 'ioredis';
import { readRoster, type Roster } from '../broadcast/worker-roster';
import { mergeInstances } from './merge-instances';

export interface ProgressBoardOptions {
  redis: Redis;
  staleMs: number;
  syncID: string;
  coordinatorID: () => string | null;
  pending: (worker: string) => Promise<number>;
}

/**
 * The workers' reports, read from Redis every refresh (any replica, leader or not) and merged
 * on demand. Progress is answered from the last successful read; when Redis cannot be read the
 * answer is RedisUnavailable (503) rather than figures that silently stop moving.
 */
export class ProgressBoard {
  private roster: Roster | null = null;
  private pending = new Map<string, number>();
  private failure: string | null = null;

  constructor(private readonly options: ProgressBoardOptions) {}

  async refresh(): Promise<Roster> {
    try {
      if (this.options.redis.status !== 'ready') throw new Error(this.options.redis.status);
      const roster = await readRoster(this.options.redis);
      const pending = new Map<string, number>();
      for (const r of roster.registrations)
        pending.set(r.id, await this.options.pending(r.id).catch(() => -1));
      this.roster = roster;
      this.pending = new Map([...pending].filter(([, n]) => n >= 0));
      this.failure = null;
      return roster;
    } catch (error) {
      this.failure = error instanceof Error ? error.message : String(error);
      throw new ApiError(
        'RedisUnavailable',
        'The coordinator cannot read the workers from Redis; the workers keep syncing. Retry once Redis is back.',
      );
    }
  }

  progress(): Progress {
    if (this.failure === null && !this.roster) {
      throw new ApiError(
        'NotReady',
        'The coordinator is reading the workers from Redis; retry shortly.',
      );
    }
    if (this.failure !== null || !this.roster) {
      throw new ApiError(
        'RedisUnavailable',
        'The coordinator cannot read the workers from Redis; the workers keep syncing. Retry once Redis is back.',
      );
    }
    return mergeInstances({
      ...this.roster,
      pending: this.pending,
      now: Date.now(),
      staleMs: this.options.staleMs,
      syncID: this.options.syncID,
      coordinatorID: this.options.coordinatorID(),
    });
  }

  /** The workers and reports of the last successful read (null before the first). */
  lastRoster(): Roster | null {
    return this.roster;
  }

  state(): SyncState {
    try {
      return this.progress().state;
    } catch {
      return 'INITIALIZING';
    }
  }
}
