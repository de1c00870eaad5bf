import { ApiError, type Progress, type SyncState } from '@sync/contracts';
import type { Redis } from 'ioredis';
import { readRoster, redisNowOf, type Roster } from '../broadcast/worker-roster';
import { CatchupEstimator } from './catchup-estimator';
import { mergeInstances, type QueuedCommand } from './merge-instances';

export interface ProgressBoardOptions {
  redis: Redis;
  staleMs: number;
  /** A registration whose worker has not beaten for this long is removed (Redis' clock). */
  expireMs: number;
  syncID: string;
  coordinatorID: () => string | null;
  /** Commands waiting in, running from or retrying in a worker's queue (progress `commands`). */
  pending: (worker: string) => Promise<readonly QueuedCommand[]>;
  /** A per-shard sync's source shards, when known (null: a replica set; undefined: unknown). */
  expectedShards?: () => readonly string[] | null | undefined;
  /** The coordinator's last ping of each cluster, by name (ms, -1 when it failed). */
  pings?: () => ReadonlyMap<string, number>;
}

/**
 * The workers' reports, read from Redis every refresh (any replica, leader or not) and merged
 * on demand. Ages are judged by Redis' clock (TIME at the read, advanced by local monotonic
 * time): never by comparing this host's wall clock with a worker's. Progress is answered from
 * the last successful read; when Redis cannot be read the answer is RedisUnavailable (503)
 * rather than figures that silently stop moving.
 */
export class ProgressBoard {
  private roster: Roster | null = null;
  private pending = new Map<string, readonly QueuedCommand[]>();
  private failure: string | null = null;
  private readonly catchup = new CatchupEstimator();
  private estimates = new Map<string, number>();

  constructor(private readonly options: ProgressBoardOptions) {}

  async refresh(): Promise<Roster> {
    try {
      if (this.options.redis.status !== 'ready') throw new Error(this.options.redis.status);
      const roster = await readRoster(
        this.options.redis,
        this.options.expireMs,
        this.options.expectedShards?.() ?? [],
      );
      const pending = new Map<string, readonly QueuedCommand[]>();
      for (const r of roster.registrations) {
        const queued = await this.options.pending(r.id).catch(() => null);
        if (queued) pending.set(r.id, queued);
      }
      this.roster = roster;
      this.pending = pending;
      this.failure = null;
      this.sampleLags(roster);
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
    return this.merge(this.roster, this.estimates);
  }

  /** The workers and reports of the last successful read (null before the first). */
  lastRoster(): Roster | null {
    return this.roster;
  }

  /** Redis' time now as of the last read (for figures judged by the one clock). */
  redisNow(): number | null {
    return this.roster ? redisNowOf(this.roster) : null;
  }

  state(): SyncState {
    try {
      return this.progress().state;
    } catch {
      return 'INITIALIZING';
    }
  }

  private merge(roster: Roster, catchup: ReadonlyMap<string, number>): Progress {
    // Only a per-shard sync expects one worker per shard (a lone worker syncs through routers).
    const perShard =
      roster.registrations.length > 0 && roster.registrations.every((r) => r.shardId !== null);
    const expected = perShard ? this.options.expectedShards?.() : undefined;
    return mergeInstances({
      ...roster,
      pending: this.pending,
      now: redisNowOf(roster),
      staleMs: this.options.staleMs,
      syncID: this.options.syncID,
      coordinatorID: this.options.coordinatorID(),
      ...(expected ? { expectedShards: expected } : {}),
      catchup,
      ...(this.options.pings ? { pings: this.options.pings() } : {}),
    });
  }

  /** Lag samples at Redis' time, per instance and for the whole sync (catch-up estimates). */
  private sampleLags(roster: Roster): void {
    const view = this.merge(roster, new Map());
    const at = roster.redisNow;
    const lagOf = (p: Progress | null | undefined) =>
      p && p.state === 'RUNNING' && p.info === 'change event application' ? p.lagTimeSeconds : null;
    const keep = new Set<string>(['']);
    this.catchup.observe('', at, lagOf(view));
    for (const instance of (view.instances ?? []) as Array<{
      id: string;
      status: string;
      progress: Progress | null;
    }>) {
      keep.add(instance.id);
      this.catchup.observe(
        instance.id,
        at,
        instance.status === 'active' ? lagOf(instance.progress) : null,
      );
    }
    this.catchup.retain(keep);
    this.estimates = new Map(
      [...keep].flatMap((key) => {
        const estimate = this.catchup.estimate(key);
        return estimate === undefined ? [] : [[key, estimate] as const];
      }),
    );
  }
}
