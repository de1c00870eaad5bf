import type { Clock } from '../ports/clock';
import type { EngineLogger } from '../ports/engine-logger';
import type { JobSession } from '../job/job-session';
import { EJSON } from 'bson';
import { firstChunkMove, type ChunkMove } from './ownership';

/**
 * A per-shard sync stops both balancers at start and restores them after commit, because each
 * worker reads only the chunks its shard owned at T0 and only its shard's change stream: a
 * range that moves to another shard would have its later writes applied by another worker,
 * possibly before the donor's earlier ones. The lead worker looks every `intervalMs`:
 * - a balancer turned back on is a progress warning (logged once);
 * - a chunk migration (a balancer round, or moveChunk/moveRange by hand) or a movePrimary since
 *   T0 stops the whole sync with `ChunkMigrationDuringSync`, naming the collection, the range
 *   and the shards: the destination can no longer be trusted to converge, so the sync must be
 *   started again (MongoDB's own tool forbids migrations during a sync for the same reason).
 */
export class BalancerWatch {
  warnings: string[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly logger: EngineLogger,
    private readonly intervalMs = 10_000,
  ) {}

  async watch(session: JobSession, signal: AbortSignal): Promise<void> {
    const shard = session.job.shard;
    if (!shard || shard.id !== shard.coordinatorID) return;
    while (!signal.aborted) {
      try {
        const modes = {
          source: await session.source.balancerMode(),
          destination: await session.destination.balancerMode(),
        };
        const running = (['source', 'destination'] as const).filter((s) => modes[s] === 'full');
        const next = running.map(
          (side) =>
            `BalancerRunning: the ${side} cluster's balancer was turned back on during the sync; chunk migrations slow it down (the sync stays exact). Stop it: sh.stopBalancer() — the sync restores it after commit.`,
        );
        if (next.length > 0 && this.warnings.length === 0) {
          this.logger.warn('a balancer was turned back on during the sync', { clusters: running });
        }
        this.warnings = next;
        const t0 = shard.sharding;
        const moved = t0 ? firstChunkMove(t0, await session.source.shardingSnapshot()) : null;
        if (moved && session.watermarks) {
          const message = describeMove(moved);
          this.logger.error('a chunk migration ran during the sync; stopping it', {
            namespace: moved.ns,
            from: moved.from,
            to: moved.to,
          });
          await session.watermarks.halt({
            worker: shard.id,
            name: 'ChunkMigrationDuringSync',
            message,
          });
          return;
        }
      } catch {
        // A failed look is not a finding; the next one tries again.
      }
      await this.clock.sleep(this.intervalMs, signal).catch(() => undefined);
    }
  }
}

function describeMove(move: ChunkMove): string {
  const where = move.range
    ? `the range [${EJSON.stringify(move.range.min)}, ${EJSON.stringify(move.range.max)}) of ${move.ns}`
    : `the database ${move.ns} (movePrimary)`;
  return `${where} moved from shard ${move.from} to ${move.to} during the sync (a chunk migration: the balancer, moveChunk or moveRange); each worker reads only the chunks its shard owned at the start, so the sync cannot stay exact. Keep the balancer off and start the sync again.`;
}
