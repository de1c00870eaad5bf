import type { Progress } from '@sync/contracts';
import type { Roster } from '../broadcast/worker-roster';
import type { ClusterClients } from './cluster-clients';

/**
 * What the coordinator itself learns from the clusters, every CLUSTER_WATCH_MS: each
 * configured cluster's ping latency (progress `source.pingLatencyMs` / `destination.…`) and,
 * once a sync runs, the source's shard list (a shard no worker serves is a missing instance).
 */
export class ClusterWatch {
  private readonly latencies = new Map<string, number>();
  private shards: readonly string[] | null | undefined = undefined;

  constructor(
    private readonly clients: ClusterClients,
    private readonly names: readonly string[],
  ) {}

  pings(): ReadonlyMap<string, number> {
    return this.latencies;
  }

  /** The source's shards (null: a replica set; undefined: no sync seen yet or not read yet). */
  expectedShards(): readonly string[] | null | undefined {
    return this.shards;
  }

  async look(roster: Roster | null): Promise<void> {
    await Promise.all(
      this.names.map(async (name) => this.latencies.set(name, await this.clients.ping(name))),
    );
    const source = roster ? sourceOf(roster) : undefined;
    if (source === undefined) return;
    try {
      this.shards = await this.clients.shardIds(source);
    } catch {
      // Unreadable now: keep what was known.
    }
  }
}

/** The source cluster's name of a running sync, from a worker's directionMapping. */
export function sourceOf(roster: Pick<Roster, 'reports'>): string | undefined {
  for (const report of roster.reports.values()) {
    const mapping = (report.progress as Progress | null)?.directionMapping?.Source;
    if (mapping) return mapping.split(':')[0];
  }
  return undefined;
}
