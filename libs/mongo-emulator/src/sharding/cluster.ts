import { ClusterClock } from '../clock/cluster-clock';
import type { UserSpec } from '../auth/user-registry';
import { startReplicaSet, type EmulatedReplicaSet } from '../index';
import { NodeCommandExecutor } from '../server/dispatcher';
import { WireServer } from '../server/wire-server';
import { ShardingMetadata, type ShardHandle } from './metadata';
import { MongosRouter } from './router';

export interface ShardedClusterOptions {
  /** Cluster name; shards are named `<name>-shard<i>`. Default 'sharded'. */
  name?: string;
  /** Number of shards (replica sets). Default 2. */
  shards?: number;
  /** Number of mongos routers. Default 1. */
  mongos?: number;
  /** Port of the first mongos; 0 (default) picks free ports. Others always use free ports. */
  port?: number;
  /** Address to bind and advertise. Default 127.0.0.1. */
  host?: string;
  /** Oplog entries kept by each shard. */
  historySize?: number;
  /** Users on `admin`, the same on every router and shard. */
  users?: UserSpec[];
  /**
   * Interval of every shard primary's periodic no-op oplog write (mongod's
   * periodicNoopIntervalSecs; written only when nothing else was written since the last one),
   * so idle shards' change streams and majority optimes keep advancing. Default 10000 (10 s,
   * as mongod). Tests may set it lower.
   */
  noopIntervalMs?: number;
  /** Idle cursor timeout of every shard. Default 600000 (mongod's cursorTimeoutMillis). */
  cursorTimeoutMs?: number;
}

export interface EmulatedShard {
  readonly _id: string;
  /** `mongodb://<host>:<port>/?replicaSet=<shard id>`: connect to the shard directly. */
  readonly uri: string;
  readonly replicaSet: EmulatedReplicaSet;
}

export interface EmulatedShardedCluster {
  /** `mongodb://<mongos1>,<mongos2>/` */
  readonly uri: string;
  readonly name: string;
  readonly shards: EmulatedShard[];
  readonly routers: MongosRouter[];
  readonly metadata: ShardingMetadata;
  /** Router addresses, `host:port`. */
  readonly mongosHosts: string[];
  uriWithCredentials(user: string, password: string): string;
  stop(): Promise<void>;
}

/**
 * Starts a sharded cluster in this process: `shards` replica sets (each with its own listener)
 * sharing one cluster clock, and `mongos` routers in front of them.
 */
export async function startShardedCluster(
  options: ShardedClusterOptions = {},
): Promise<EmulatedShardedCluster> {
  const name = options.name ?? 'sharded';
  const shardCount = options.shards ?? 2;
  const mongosCount = options.mongos ?? 1;
  if (!Number.isInteger(shardCount) || shardCount < 1) throw new Error('shards must be >= 1');
  if (!Number.isInteger(mongosCount) || mongosCount < 1) throw new Error('mongos must be >= 1');
  const host = options.host ?? '127.0.0.1';
  const clock = new ClusterClock();
  const replicaSets: EmulatedReplicaSet[] = [];
  const servers: WireServer[] = [];
  const stopAll = async (): Promise<void> => {
    await Promise.all(servers.map((s) => s.close()));
    await Promise.all(replicaSets.map((rs) => rs.stop()));
  };
  try {
    for (let i = 0; i < shardCount; i++) {
      replicaSets.push(
        await startReplicaSet({
          name: `${name}-shard${i}`,
          host,
          clock,
          ...(options.historySize !== undefined ? { historySize: options.historySize } : {}),
          ...(options.users ? { users: options.users } : {}),
          ...(options.noopIntervalMs !== undefined
            ? { noopIntervalMs: options.noopIntervalMs }
            : {}),
          ...(options.cursorTimeoutMs !== undefined
            ? { cursorTimeoutMs: options.cursorTimeoutMs }
            : {}),
        }),
      );
    }
    const handles: ShardHandle[] = replicaSets.map((rs) => ({
      id: rs.name,
      rs,
      executor: new NodeCommandExecutor(rs.node),
    }));
    const metadata = new ShardingMetadata(handles, clock);
    const routers: MongosRouter[] = [];
    const mongosHosts: string[] = [];
    for (let i = 0; i < mongosCount; i++) {
      const router = new MongosRouter(metadata);
      const server = new WireServer(router, { host, port: i === 0 ? (options.port ?? 0) : 0 });
      servers.push(server);
      const port = await server.listen();
      router.host = `${host}:${port}`;
      routers.push(router);
      mongosHosts.push(router.host);
    }
    const base = `${mongosHosts.join(',')}/`;
    let stopped: Promise<void> | undefined;
    return {
      uri: `mongodb://${base}`,
      name,
      shards: replicaSets.map((rs) => ({ _id: rs.name, uri: rs.uri, replicaSet: rs })),
      routers,
      metadata,
      mongosHosts,
      uriWithCredentials(user: string, password: string): string {
        return `mongodb://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${base}?authSource=admin`;
      },
      stop(): Promise<void> {
        stopped ??= stopAll();
        return stopped;
      },
    };
  } catch (err) {
    await stopAll().catch(() => undefined);
    throw err;
  }
}
