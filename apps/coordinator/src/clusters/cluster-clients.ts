import { ApiError, redactSecrets } from '@sync/contracts';
import { MongoClient } from 'mongodb';

/**
 * Driver clients of the configured clusters, opened on first use. The coordinator reads little:
 * the source's shard list (which workers a start needs) and the fencing epoch on cluster1.
 */
export class ClusterClients {
  private readonly clients = new Map<string, Promise<MongoClient>>();

  constructor(private readonly uris: Record<string, string>) {}

  client(name: string): Promise<MongoClient> {
    let client = this.clients.get(name);
    if (!client) {
      client = MongoClient.connect(this.uris[name], { serverSelectionTimeoutMS: 10_000 });
      client.catch(() => this.clients.delete(name));
      this.clients.set(name, client);
    }
    return client;
  }

  /** Shard ids of a cluster (`listShards`), or null for a replica set. */
  async shardIds(name: string): Promise<string[] | null> {
    try {
      const admin = (await this.client(name)).db('admin');
      const hello = await admin.command({ hello: 1 });
      if (hello.msg !== 'isdbgrid') return null;
      const listed = await admin.command({ listShards: 1 });
      return ((listed.shards as Array<{ _id: unknown }>) ?? []).map((s) => String(s._id)).sort();
    } catch (error) {
      throw new ApiError(
        'NotReady',
        `cannot list the shards of ${name}: ${redactSecrets(error instanceof Error ? error.message : String(error))}; retry shortly.`,
      );
    }
  }

  /** One `ping` round trip to a cluster, in milliseconds; -1 when it failed. */
  async ping(name: string): Promise<number> {
    try {
      const client = await this.client(name);
      const started = performance.now();
      await client.db('admin').command({ ping: 1 });
      return performance.now() - started;
    } catch {
      return -1;
    }
  }

  async close(): Promise<void> {
    const all = [...this.clients.values()];
    this.clients.clear();
    await Promise.allSettled(all.map(async (c) => (await c).close()));
  }
}
