import ConnectionString from 'mongodb-connection-string-url';
import type { MongoClient } from 'mongodb';
import { CachingMongoClient } from './caching-client';

/** Options a router's connection string may carry that do not apply to a shard's replica set. */
const ROUTER_ONLY = [
  'directConnection',
  'loadBalanced',
  'replicaSet',
  'srvServiceName',
  'srvMaxHosts',
];

/**
 * The connection string of one shard, from the router's (its credentials, auth and TLS options)
 * and the shard's `host` as listShards reports it (`<replicaSet>/<host1>,<host2>` or a single
 * host). A `mongodb+srv` router implies TLS; the shard gets it explicitly.
 */
export function shardConnectionString(routerUri: string, shardHost: string): string {
  const router = new ConnectionString(routerUri);
  const slash = shardHost.indexOf('/');
  const setName = slash >= 0 ? shardHost.slice(0, slash) : undefined;
  const hosts = (slash >= 0 ? shardHost.slice(slash + 1) : shardHost).split(',').filter(Boolean);
  if (hosts.length === 0)
    throw new Error(`listShards reported a shard without hosts: ${shardHost}`);
  const shard = new ConnectionString(`mongodb://${hosts.join(',')}/`);
  shard.username = router.username;
  shard.password = router.password;
  shard.pathname = router.pathname;
  for (const [key, value] of router.searchParams) {
    if (!ROUTER_ONLY.includes(key)) shard.searchParams.append(key, value);
  }
  if (router.isSRV && !router.searchParams.has('tls') && !router.searchParams.has('ssl')) {
    shard.searchParams.set('tls', 'true');
  }
  if (setName) shard.searchParams.set('replicaSet', setName);
  return shard.toString();
}

/**
 * Clients of a sharded source's shards, opened on first use from the router's connection string
 * and kept until `close()`. For what a router cannot show (each shard's oplog window).
 */
export class ShardConnections {
  private readonly clients = new Map<string, MongoClient>();

  constructor(private readonly routerUri: string) {}

  client(shardHost: string): MongoClient {
    let client = this.clients.get(shardHost);
    if (!client) {
      client = new CachingMongoClient(shardConnectionString(this.routerUri, shardHost), {
        appName: 'cluster-sync',
        readPreference: 'primary',
        readConcern: { level: 'majority' },
        writeConcern: { w: 'majority' },
        retryReads: true,
        serverSelectionTimeoutMS: 10_000,
      });
      this.clients.set(shardHost, client);
    }
    return client;
  }

  async close(): Promise<void> {
    const clients = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  }
}
