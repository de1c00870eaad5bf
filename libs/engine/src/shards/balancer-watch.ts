import type { Clock } from '../ports/clock';
import type { EngineLogger } from '../ports/engine-logger';
import type { JobSession } from '../job/job-session';

/**
 * A per-shard sync stops both balancers at start and restores them after commit. Someone may
 * turn one back on meanwhile: that cannot break the sync (work is assigned by `_id`, reads go
 * through the routers), but chunk migrations load the clusters and MongoDB's own tool forbids
 * them — so the coordinator looks every `intervalMs` and shows a progress warning (and logs
 * once) while a balancer runs.
 */
export class BalancerWatch {
  warnings: string[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly logger: EngineLogger,
    private readonly intervalMs = 30_000,
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
      } catch {
        // A failed look is not a finding; the next one tries again.
      }
      await this.clock.sleep(this.intervalMs, signal).catch(() => undefined);
    }
  }
}
