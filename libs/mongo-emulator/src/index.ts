/**
 * Public API of the MongoDB emulator: an in-process replica-set primary that the official
 * `mongodb` driver talks to over TCP.
 */
import { ReplicaSetNode, DEFAULT_HISTORY_SIZE } from './node/replica-set-node';
import type { UserSpec } from './auth/user-registry';
import { NodeCommandExecutor } from './server/dispatcher';
import { WireServer } from './server/wire-server';
import { NodeMaintenance } from './server/maintenance';
import type { ClusterClock } from './clock/cluster-clock';

export interface ReplicaSetOptions {
  /** Replica set name (hello's setName). Default 'rs0'. */
  name?: string;
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Address to bind and to advertise in hello (must match the URI the driver uses). Default 127.0.0.1. */
  host?: string;
  /** Oplog entries kept: the change-stream history window. */
  historySize?: number;
  /** Users on `admin`; any user turns authentication on. */
  users?: UserSpec[];
  /** Periodic no-op oplog write interval. Default 10000 (mongod). */
  noopIntervalMs?: number;
  /** Idle cursor timeout. Default 600000 (mongod's cursorTimeoutMillis). */
  cursorTimeoutMs?: number;
  /** Cluster clock shared with other replica sets (the shards of a sharded cluster). */
  clock?: ClusterClock;
  /** mongod's transactionLifetimeLimitSeconds (default 60). */
  transactionLifetimeLimitSeconds?: number;
  /** mongod's maxNumberOfTransactionOperationsInSingleOplogEntry (default unlimited). */
  maxTransactionOpsPerOplogEntry?: number;
}

export interface EmulatedReplicaSet {
  /** `mongodb://<host>:<port>/?replicaSet=<name>` */
  readonly uri: string;
  readonly port: number;
  readonly host: string;
  readonly name: string;
  readonly node: ReplicaSetNode;
  /** URI with credentials and authSource=admin. */
  uriWithCredentials(user: string, password: string): string;
  /** Closes sockets, cursors and timers. Idempotent. */
  stop(): Promise<void>;
}

export async function startReplicaSet(
  options: ReplicaSetOptions = {},
): Promise<EmulatedReplicaSet> {
  const name = options.name ?? 'rs0';
  const bindHost = options.host ?? '127.0.0.1';
  const noopIntervalMs = options.noopIntervalMs ?? 10_000;
  const node = new ReplicaSetNode({
    setName: name,
    historySize: options.historySize ?? DEFAULT_HISTORY_SIZE,
    users: options.users ?? [],
    noopIntervalMs,
    ...(options.clock ? { clock: options.clock } : {}),
    transactionLifetimeLimitSeconds: options.transactionLifetimeLimitSeconds,
    maxTransactionOpsPerOplogEntry: options.maxTransactionOpsPerOplogEntry,
  });
  const server = new WireServer(new NodeCommandExecutor(node), {
    host: bindHost,
    port: options.port ?? 0,
  });
  const port = await server.listen();
  // hello's `me`/`hosts` must equal the address in the URI, or SDAM drops the member.
  node.host = `${bindHost}:${port}`;
  const maintenance = new NodeMaintenance(node, {
    noopIntervalMs,
    cursorTimeoutMs: options.cursorTimeoutMs ?? 600_000,
    reapIntervalMs: Math.min(60_000, options.cursorTimeoutMs ?? 60_000),
  });
  maintenance.start();

  const base = `${bindHost}:${port}/?replicaSet=${encodeURIComponent(name)}`;
  let stopped: Promise<void> | undefined;
  return {
    uri: `mongodb://${base}`,
    port,
    host: bindHost,
    name,
    node,
    uriWithCredentials(user: string, password: string): string {
      return `mongodb://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${base}&authSource=admin`;
    },
    stop(): Promise<void> {
      stopped ??= (async () => {
        maintenance.stop();
        node.transactions.stop();
        await server.close();
        node.cursors.closeAll();
        node.failPoints.offAll();
      })();
      return stopped;
    },
  };
}

export { ReplicaSetNode } from './node/replica-set-node';
export type { ReplicaSetNodeOptions } from './node/replica-set-node';
export type { UserSpec } from './auth/user-registry';
export { BUILTIN_ROLES } from './auth/roles';
export { CommandError, ErrorCodes } from './errors';
export type {
  CommandDefinition,
  CommandContext,
  ConnectionContext,
  AuthenticatedUser,
} from './commands/types';
export type { CommandExecutor } from './server/executor';
export { NodeCommandExecutor } from './server/dispatcher';
export { WireServer } from './server/wire-server';
export type { OplogEntry } from './oplog/oplog-entry';
export { startShardedCluster } from './sharding/cluster';
export type {
  ShardedClusterOptions,
  EmulatedShardedCluster,
  EmulatedShard,
} from './sharding/cluster';
export { MongosRouter } from './sharding/router';
export { ShardingMetadata } from './sharding/metadata';
