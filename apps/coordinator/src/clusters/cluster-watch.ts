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
    if (!roster) return;
    try {
      const shards = await workerShardIds(this.clients, roster);
      if (shards !== undefined) this.shards = shards;
    } catch {
      // Unreadable now: keep what was known.
    }
  }
}

/**
 * The shard ids a running sync's per-shard workers are named after (one worker each): the
 * source's — or, after a reverse, the destination's, since the workers keep the ids of the
 * shards the sync started from (each reads a paired shard of the new source). Chosen by the
 * registered workers' ids, so one missing worker does not tip it. Null: a replica-set source;
 * undefined: no sync seen yet.
 */
export async function workerShardIds(
  clients: Pick<ClusterClients, 'shardIds'>,
  roster: Pick<Roster, 'reports' | 'registrations'>,
): Promise<readonly string[] | null | undefined> {
  const source = directionOf(roster, 'Source');
  if (source === undefined) return undefined;
  const shards = await clients.shardIds(source);
  const destination = directionOf(roster, 'Destination');
  const ids = roster.registrations.map((r) => r.id);
  const named = (list: readonly string[] | null) => !!list && ids.some((id) => list.includes(id));
  if (shards && destination && !named(shards)) {
    const started = await clients.shardIds(destination);
    if (named(started)) return started;
  }
  return shards;
}

/** A running sync's source or destination cluster name, from a worker's directionMapping. */
function directionOf(
  roster: Pick<Roster, 'reports'>,
  role: 'Source' | 'Destination',
): string | undefined {
  for (const report of roster.reports.values()) {
    const mapping = (report.progress as Progress | null)?.directionMapping?.[role];
    if (mapping) return mapping.split(':')[0];
  }
  return undefined;
}
