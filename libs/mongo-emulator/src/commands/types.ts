import type { Document, Long } from 'bson';
import type { NodeServices } from '../node/node-services';
import type { ReadConcernArgs } from '../server/read-concern';
import type { Transaction } from '../transactions/transaction';

/** A user after authentication: the roles come from the launch configuration. */
export interface AuthenticatedUser {
  user: string;
  db: string;
  roles: Array<{ role: string; db: string }>;
}

/** Per-connection state kept by the wire server. */
export interface ConnectionContext {
  readonly id: number;
  readonly remoteAddress: string;
  appName?: string;
  /** Users authenticated on this connection (MongoDB allows one per database; we keep a list). */
  users: AuthenticatedUser[];
  /** Aborted when the socket closes: long operations (awaitData getMore) stop waiting. */
  readonly closed: AbortSignal;
  /** In-progress SASL conversations by conversationId (owned by auth/). */
  sasl: Map<number, unknown>;
}

/** Logical session attached to a command (`lsid`), plus retryable-write data. */
export interface CommandSession {
  /** Stable string form of the lsid, used for cursor ownership and retry tables. */
  key: string;
  lsid: Document;
  txnNumber?: Long;
}

export interface CommandContext {
  readonly node: NodeServices;
  readonly conn: ConnectionContext;
  /** `$db` of the request. */
  readonly db: string;
  /** The command document, with OP_MSG kind-1 document sequences merged in as arrays. */
  readonly cmd: Document;
  /** Canonical command name (the definition's `name`). */
  readonly name: string;
  readonly session?: CommandSession;
  /** The parsed `readConcern`, for commands defined with `readConcern: true`. */
  readonly readConcern?: ReadConcernArgs;
  /**
   * The multi-document transaction the command runs in (`autocommit: false`). `node` is then
   * the transaction's view of the node: its catalog reads the transaction's snapshot.
   */
  readonly txn?: Transaction;
}

/**
 * How a command is classified for authorization and write blocking.
 * - `none`: allowed before authentication (hello, saslStart, ping, ...)
 * - `read` / `write`: data access on `ctx.db` (write = insert/update/delete/DDL)
 * - `admin`: cluster-level commands (setUserWriteBlockMode, configureFailPoint, listDatabases...)
 */
export type CommandAccess = 'none' | 'authenticated' | 'read' | 'write' | 'admin';

export interface CommandDefinition {
  /** Canonical name as the first key of the command document (case-sensitive in MongoDB). */
  name: string;
  aliases?: string[];
  access: CommandAccess;
  /** Subject to `setUserWriteBlockMode` when it targets a user database. */
  userWrite?: boolean;
  /** Supports retryable writes: a retried (lsid, txnNumber) is answered without re-applying. */
  retryableWrite?: boolean;
  /** Only valid on the admin database (MongoDB replies Unauthorized/IllegalOperation otherwise). */
  adminOnly?: boolean;
  /**
   * Accepts `readConcern` (find, aggregate, count, distinct): the dispatcher parses it, waits
   * for afterClusterTime, and passes it on as `ctx.readConcern`.
   */
  readConcern?: boolean;
  run(ctx: CommandContext): Promise<Document> | Document;
}
