import type {
  ClusterDirectory,
  CoordinationStore,
  DestinationCluster,
  JobStore,
  SourceCluster,
} from '@sync/engine';
import { MongoClient } from 'mongodb';
import { displayHost } from './connection-string';
import { MongoDestinationCluster } from './mongo-destination-cluster';
import { MongoCoordinationStore } from './mongo-coordination-store';
import { MongoJobStore } from './mongo-job-store';
import { MongoSourceCluster } from './mongo-source-cluster';
import { ShardConnections } from './shard-connections';

interface Entry {
  client: MongoClient;
  shards: ShardConnections;
  source: MongoSourceCluster;
  destination: MongoDestinationCluster;
  store: MongoJobStore;
  coordination: MongoCoordinationStore;
}

/**
 * One MongoClient per launched cluster (the driver connects lazily on first use), with the
 * settings a sync needs regardless of the URI: majority reads and writes, primary reads,
 * retryable writes.
 */
export class MongoClusterDirectory implements ClusterDirectory {
  private readonly entries = new Map<string, Entry>();

  constructor(clusters: Record<string, string>, syncID: string) {
    for (const [name, uri] of Object.entries(clusters)) {
      const client = new MongoClient(uri, {
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
        source: new MongoSourceCluster(client, host, shards),
        destination: new MongoDestinationCluster(client, host),
        store: new MongoJobStore(client, syncID),
        coordination: new MongoCoordinationStore(client),
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
