import type {
  ClaimGuard,
  ClusterDirectory,
  CoordinationStore,
  DestinationCluster,
  JobStore,
  SourceCluster,
  WatermarkStore,
} from '@sync/engine';
import type { MongoClient } from 'mongodb';
import { CachingMongoClient } from './caching-client';
import { leaseGuarded } from './claim-fencing';
import { faultLabelled } from './fault-labelling';
import { displayHost } from './connection-string';
import { MongoDestinationCluster } from './mongo-destination-cluster';
import { MongoCoordinationStore } from './mongo-coordination-store';
import { MongoJobStore } from './mongo-job-store';
import { MongoSourceCluster } from './mongo-source-cluster';
import { ShardConnections } from './shard-connections';
import { MongoWatermarkStore } from './mongo-watermark-store';

interface Entry {
  client: MongoClient;
  shards: ShardConnections;
  source: SourceCluster;
  destination: MongoDestinationCluster;
  store: MongoJobStore;
  coordination: MongoCoordinationStore;
  watermarks: WatermarkStore;
  /** Per shard id: its direct client and source port, once resolved through listShards. */
  shardSources: Map<string, Promise<{ client: MongoClient; source: MongoSourceCluster }>>;
}

/**
 * One MongoClient per launched cluster (the driver connects lazily on first use), with the
 * settings a sync needs regardless of the URI: majority reads and writes, primary reads,
 * retryable writes.
 *
 * `guard` (a per-shard worker's shard claim) fences every write of the adapters on the
 * destination: the metadata stores carry the claim epoch, the data writes and the watermarks
 * check the claim's lease (as do the source's balancer, write-blocking and no-op writes).
 */
export class MongoClusterDirectory implements ClusterDirectory {
  private readonly entries = new Map<string, Entry>();

  constructor(clusters: Record<string, string>, syncID: string, guard?: ClaimGuard) {
    for (const [name, uri] of Object.entries(clusters)) {
      const client = new CachingMongoClient(uri, {
        appName: 'cluster-sync',
        readConcern: { level: 'majority' },
        writeConcern: { w: 'majority', j: true },
        readPreference: 'primary',
        retryWrites: true,
        retryReads: true,
      });
      const host = displayHost(uri);
      const shards = new ShardConnections(uri);
      this.entries.set(name, {
        client,
        shards,
        // Every adapter through faultLabelled: what it throws reaches the engine labelled.
        source: faultLabelled(
          leaseGuarded<SourceCluster>(new MongoSourceCluster(client, host, shards), guard, [
            'setBalancer',
            'setUserWriteBlocking',
            'writeNoop',
          ]),
        ),
        destination: faultLabelled(new MongoDestinationCluster(client, host, guard)),
        store: faultLabelled(new MongoJobStore(client, syncID, guard)),
        coordination: faultLabelled(new MongoCoordinationStore(client, guard)),
        watermarks: faultLabelled(
          leaseGuarded<WatermarkStore>(new MongoWatermarkStore(client), guard, [
            'publish',
            'announce',
            'markApplied',
            'halt',
            'clear',
          ]),
        ),
        shardSources: new Map(),
      });
    }
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  source(name: string): SourceCluster {
    return this.entry(name).source;
  }

  destination(name: string): DestinationCluster {
    return this.entry(name).destination;
  }

  jobStore(name: string): JobStore {
    return this.entry(name).store;
  }

  coordination(name: string): CoordinationStore {
    return this.entry(name).coordination;
  }

  watermarks(name: string): WatermarkStore {
    return this.entry(name).watermarks;
  }

  async shardSource(name: string, shardId: string): Promise<SourceCluster> {
    return (await this.shard(name, shardId)).source;
  }

  /** The direct client of one shard of a sharded cluster (a per-shard worker's change stream). */
  async shardClient(name: string, shardId: string): Promise<MongoClient> {
    return (await this.shard(name, shardId)).client;
  }

  private shard(
    name: string,
    shardId: string,
  ): Promise<{ client: MongoClient; source: MongoSourceCluster }> {
    const entry = this.entry(name);
    let found = entry.shardSources.get(shardId);
    if (!found) {
      found = (async () => {
        const listed = await entry.client.db('admin').command({ listShards: 1 });
        const shards = (listed.shards as Array<{ _id: unknown; host: unknown }> | undefined) ?? [];
        const shard = shards.find((s) => String(s._id) === shardId);
        if (!shard)
          throw new Error(`the cluster ${name} lists no shard ${JSON.stringify(shardId)}`);
        const host = String(shard.host);
        const client = entry.shards.client(host);
        return {
          client,
          source: faultLabelled(new MongoSourceCluster(client, `${shardId} (${hostsOf(host)})`)),
        };
      })();
      found.catch(() => entry.shardSources.delete(shardId));
      entry.shardSources.set(shardId, found);
    }
    return found;
  }

  /** The driver client of a launched cluster (change application adapters). */
  client(name: string): MongoClient {
    return this.entry(name).client;
  }

  async close(): Promise<void> {
    await Promise.all(
      [...this.entries.values()].flatMap((e) => [e.client.close(), e.shards.close()]),
    );
  }

  private entry(name: string): Entry {
    const entry = this.entries.get(name);
    if (!entry) throw new Error(`cluster ${JSON.stringify(name)} was not configured at launch`);
    return entry;
  }
}

/** `rs0/h1:27018,h2:27018` → `h1:27018,h2:27018` (no credentials are ever in a shard host). */
function hostsOf(shardHost: string): string {
  const slash = shardHost.indexOf('/');
  return slash >= 0 ? shardHost.slice(slash + 1) : shardHost;
}
