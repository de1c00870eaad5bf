import { Long, type Document, type ObjectId } from 'bson';
import type { ClusterClock } from '../clock/cluster-clock';
import type { Oplog } from '../oplog/oplog';
import type { CursorManager } from '../cursors/cursor-manager';
import type { Catalog } from '../storage/catalog';
import type { SessionRegistry } from '../server/sessions';
import type { FailPointRegistry } from '../server/fail-points';
import type { UserRegistry, UserSpec } from '../auth/user-registry';
import type { TransactionManager } from '../transactions/manager';

/** The replica set's term: the emulated primary is elected once (hello, oplog `t`). */
export const TERM = Long.fromNumber(1);

/**
 * The node's topologyVersion as it goes on the wire: in `hello`, `serverStatus().repl` and
 * NotPrimary error replies.
 */
export function topologyVersionDoc(node: Pick<NodeServices, 'topologyVersion'>): Document {
  return { processId: node.topologyVersion.processId, counter: node.topologyVersion.counter };
}

export interface ReplicaSetNodeOptions {
  /** Replica set name reported by hello (`setName`). */
  setName: string;
  /** Oplog entries kept (the change-stream history window). */
  historySize?: number;
  /** Users created at launch; when non-empty, authentication is required. */
  users?: UserSpec[];
  /** Interval of the primary's periodic no-op writes (mongod: 10 s). */
  noopIntervalMs?: number;
  /** A clock shared with other nodes (the shards of one emulated cluster share cluster time). */
  clock?: ClusterClock;
  /** mongod's transactionLifetimeLimitSeconds (default 60). */
  transactionLifetimeLimitSeconds?: number;
  /**
   * mongod's maxNumberOfTransactionOperationsInSingleOplogEntry: a committed transaction with
   * more operations is written as a chain of partialTxn applyOps entries (default: unlimited,
   * so only the 16 MiB entry size splits).
   */
  maxTransactionOpsPerOplogEntry?: number;
}

/**
 * What `listCommands` reads of the node's commands. Structural, so that this file needs nothing
 * from commands/ (whose definitions receive a NodeServices).
 */
export interface CommandLookup {
  names(): string[];
  get(name: string): { name: string; access: string; adminOnly?: boolean } | undefined;
}

/**
 * The services of one replica-set member that commands, the storage catalog, transactions and
 * change streams use. `ReplicaSetNode` (node/replica-set-node.ts) implements it; everything
 * below the node depends on this interface only, so the node's module (which builds the
 * command registry) is not part of an import cycle with the commands.
 */
export interface NodeServices {
  readonly options: ReplicaSetNodeOptions;
  readonly clock: ClusterClock;
  readonly oplog: Oplog;
  readonly cursors: CursorManager;
  readonly catalog: Catalog;
  readonly sessions: SessionRegistry;
  readonly failPoints: FailPointRegistry;
  readonly users: UserRegistry;
  readonly transactions: TransactionManager;
  readonly commands: CommandLookup;
  /** `setUserWriteBlockMode {global}` state. */
  userWriteBlocking: boolean;
  /** host:port once the server listens (hello's `me`, `primary`, `hosts`). */
  host: string;
  readonly electionId: ObjectId;
  readonly topologyVersion: { processId: ObjectId; counter: Long };
  readonly startedAt: Date;
  /** True once a user exists (authentication required). */
  readonly authEnabled: boolean;
}
