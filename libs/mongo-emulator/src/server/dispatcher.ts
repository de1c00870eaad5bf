import { Binary, Double, Long, type Document, type Timestamp } from 'bson';
import { detach } from '../bson/codec';
import { CommandError, ErrorCodes } from '../errors';
import type {
  CommandContext,
  CommandDefinition,
  CommandSession,
  ConnectionContext,
} from '../commands/types';
import type { ReplicaSetNode } from '../node/replica-set-node';
import { topologyVersionDoc } from '../node/node-services';
import {
  isAuthorized,
  mayBypassWriteBlocking,
  requiredPrivileges,
  targetDatabases,
} from './authorization';
import { CloseConnection, type CommandExecutor } from './executor';
import { serverStatsOf, type ServerStats } from './stats';
import { asNumber, bsonTypeName } from './values';
import {
  gossipInClusterTime,
  parseReadConcern,
  readsCommittedSnapshot,
  waitForReadConcern,
  type ReadConcernArgs,
} from './read-concern';
import { effectiveWriteConcern, waitForWriteConcern } from './write-concern';

/**
 * Error codes for which mongod labels a failed retryable write `RetryableWriteError`
 * (retryable writes spec, "Determining Retryable Errors").
 */
export const RETRYABLE_WRITE_CODES: ReadonlySet<number> = new Set([
  6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436,
]);

/** mongod's NotPrimaryError category (error_codes.yml). */
const NOT_PRIMARY_CODES: ReadonlySet<number> = new Set([
  ErrorCodes.NotWritablePrimary,
  ErrorCodes.NotPrimaryNoSecondaryOk,
  ErrorCodes.NotPrimaryOrSecondary,
  ErrorCodes.PrimarySteppedDown,
  ErrorCodes.InterruptedDueToReplStateChange,
]);

/** Databases that write blocking never applies to (mongod: NamespaceString::isOnInternalDb). */
const INTERNAL_DBS = new Set(['admin', 'config', 'local']);

const ZERO_SIGNATURE_HASH = new Binary(Buffer.alloc(20), 0);

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Short rendering of a command for "not authorized ... to execute command { ... }" messages. */
function describeCommand(cmd: Document): string {
  const parts = Object.entries(cmd)
    .filter(
      ([k]) =>
        k !== 'lsid' &&
        k !== '$clusterTime' &&
        k !== 'documents' &&
        k !== 'updates' &&
        k !== 'deletes',
    )
    .slice(0, 6)
    .map(
      ([k, v]) =>
        `${k}: ${typeof v === 'string' ? JSON.stringify(v) : typeof v === 'object' && v !== null ? '{...}' : String(asNumber(v) ?? v)}`,
    );
  return `{ ${parts.join(', ')} }`;
}

/** What the dispatcher learns about a request while running it. */
interface RunState {
  def?: CommandDefinition;
  session?: CommandSession;
  explicitLabels?: string[];
  readConcern?: ReadConcernArgs;
  /** Newest oplog time when the command body started; a change means the command wrote. */
  baseline?: Timestamp;
  /** The command carried `autocommit` (it is part of a multi-document transaction). */
  inTransaction?: boolean;
  /** Counted in serverStatus `metrics.commands` under this name (its failure is counted too). */
  counted?: string;
}

/** Codes mongod counts as retriable (ErrorCodes::isRetriableError: network, not primary, ...). */
const RETRIABLE_CODES = RETRYABLE_WRITE_CODES;
/** Snapshot errors (SnapshotTooOld, SnapshotUnavailable, StaleChunkHistory, MigrationConflict). */
const SNAPSHOT_CODES = new Set([239, 246, 249]);

function isCommitOrAbort(name: string | undefined): boolean {
  return name === 'commitTransaction' || name === 'abortTransaction';
}

/**
 * mongod's isTransientTransactionError (error_labels.cpp): WriteConflict, LockTimeout,
 * PreparedTransactionInProgress and snapshot errors always; NoSuchTransaction on commit/abort
 * only without a write concern error; on other commands also retriable errors.
 */
function isTransientTransactionError(
  code: number,
  hasWce: boolean,
  commitOrAbort: boolean,
): boolean {
  if (code === 112 || code === 24 || code === 267 || SNAPSHOT_CODES.has(code)) return true;
  if (commitOrAbort) return code === ErrorCodes.NoSuchTransaction && !hasWce;
  return RETRIABLE_CODES.has(code) || code === ErrorCodes.NoSuchTransaction;
}

/** True for `$out`/`$merge` aggregations, which take a write concern. */
function isWritingAggregate(body: Document): boolean {
  const pipeline = body.pipeline;
  return (
    Array.isArray(pipeline) &&
    pipeline.some((s) => s && typeof s === 'object' && ('$out' in s || '$merge' in s))
  );
}

interface FailCommandOutcome {
  /** failCommand's writeConcernError, appended to the reply after the command ran. */
  writeConcernError?: Document;
  /** Explicit errorLabels from the fail point data (suppresses automatic labels). */
  errorLabels?: string[];
}

/** Executes commands against one replica-set member. */
export class NodeCommandExecutor implements CommandExecutor {
  readonly stats: ServerStats;

  constructor(readonly node: ReplicaSetNode) {
    this.stats = serverStatsOf(node);
  }

  async execute(body: Document, conn: ConnectionContext): Promise<Document> {
    const state: RunState = {};
    let reply: Document;
    try {
      reply = await this.run(body, conn, state);
    } catch (err) {
      if (err instanceof CloseConnection) throw err;
      reply = this.errorReply(err, state);
      if (state.counted) this.stats.countFailure(state.counted);
    }
    this.withTopologyVersion(reply);
    return this.withClusterTime(reply, this.operationTime(state));
  }

  /**
   * mongod's computeOperationTime: a command that wrote reports the client's last op (the
   * newest entry); a read reports the time of the data it read, the majority-committed snapshot
   * for majority/snapshot reads and the last applied entry otherwise.
   */
  private operationTime(state: RunState): Timestamp {
    const oplog = this.node.oplog;
    const newest = oplog.newest()?.ts ?? this.node.clock.current();
    const wrote = state.baseline !== undefined && !state.baseline.equals(newest);
    if (!wrote && readsCommittedSnapshot(state.readConcern))
      return oplog.committedTimestamp() ?? newest;
    return newest;
  }

  connectionClosed(conn: ConnectionContext): void {
    conn.sasl.clear();
  }

  private errorReply(err: unknown, state: RunState): Document {
    let reply: Document;
    if (err instanceof CommandError) {
      reply = err.toReply();
    } else {
      // Never let a bug crash the server: report it like mongod reports an internal error.
      const message = err instanceof Error ? err.message : String(err);
      if (process.env.MONGO_EMULATOR_DEBUG) console.error('[mongo-emulator] internal error', err);
      reply = {
        ok: 0,
        errmsg: `internal error: ${message}`,
        code: ErrorCodes.InternalError,
        codeName: 'InternalError',
      };
    }
    if (state.explicitLabels) {
      if (state.explicitLabels.length) reply.errorLabels = [...state.explicitLabels];
      else delete reply.errorLabels;
    } else {
      // mongod's ErrorLabelBuilder::build: TransientTransactionError and RetryableWriteError
      // are exclusive; inside a transaction only commit/abort can be RetryableWriteError.
      const labels = new Set<string>((reply.errorLabels as string[] | undefined) ?? []);
      const code = reply.code as number;
      const commitOrAbort = isCommitOrAbort(state.def?.name);
      if (
        state.inTransaction &&
        isTransientTransactionError(code, reply.writeConcernError !== undefined, commitOrAbort)
      ) {
        labels.add('TransientTransactionError');
      } else if (
        (this.isRetryableWrite(state) || (state.inTransaction && commitOrAbort)) &&
        RETRYABLE_WRITE_CODES.has(code)
      ) {
        labels.add('RetryableWriteError');
      }
      if (labels.size) reply.errorLabels = [...labels];
    }
    return reply;
  }

  /**
   * mongod appends its current topologyVersion to a reply whose error, or write concern error,
   * is a NotPrimaryError (jstests/replsets/notprimary_errors_return_topology_version.js), also
   * when a `failCommand` fail point made it. Drivers compare it with the one their monitor last
   * saw: an error that names no newer topology is stale and leaves the server selectable (SDAM,
   * "topologyVersion"); without it a driver would mark the primary Unknown and wait for its
   * next heartbeat, up to heartbeatFrequencyMS, before it could select it again.
   */
  private withTopologyVersion(reply: Document): void {
    const wce = reply.writeConcernError as Document | undefined;
    const failed = asNumber(reply.ok) === 0 ? asNumber(reply.code) : undefined;
    const codes = [failed, wce ? asNumber(wce.code) : undefined];
    if (!codes.some((c) => c !== undefined && NOT_PRIMARY_CODES.has(c))) return;
    reply.topologyVersion = topologyVersionDoc(this.node);
  }

  /** A retryable write: `txnNumber` without `autocommit` (a transaction's statements are not). */
  private isRetryableWrite(state: RunState): boolean {
    return (
      !!state.def?.retryableWrite && state.session?.txnNumber !== undefined && !state.inTransaction
    );
  }

  /** `$clusterTime` and `operationTime` go on every reply, errors included, like a replica-set member. */
  private withClusterTime(reply: Document, operationTime: Timestamp): Document {
    const now = this.node.clock.current();
    // mongod sends `ok` as a double.
    if (reply.ok === undefined) reply.ok = new Double(1);
    else if (typeof reply.ok === 'number') reply.ok = new Double(reply.ok);
    reply.$clusterTime = {
      clusterTime: now,
      signature: { hash: ZERO_SIGNATURE_HASH, keyId: Long.ZERO },
    };
    reply.operationTime = operationTime;
    return reply;
  }

  private async run(body: Document, conn: ConnectionContext, state: RunState): Promise<Document> {
    const node = this.node;
    const requestedName = Object.keys(body)[0];
    if (requestedName === undefined)
      throw new CommandError('CommandNotFound', "no such command: ''");
    const def = node.commands.get(requestedName);
    if (!def) throw new CommandError('CommandNotFound', `no such command: '${requestedName}'`);
    state.def = def;

    const db = body.$db;
    if (db === undefined)
      throw new CommandError(40571 as number, 'OP_MSG requests require a $db argument');
    if (typeof db !== 'string') {
      throw new CommandError(
        'TypeMismatch',
        `BSON field '$db' is the wrong type '${bsonTypeName(db)}', expected type 'string'`,
      );
    }
    if (db === '' || /[/\\. "$\0]/.test(db))
      throw new CommandError('InvalidNamespace', `Invalid database name: '${db}'`);
    this.stats.countCommand(def.name);
    state.counted = def.name;

    // A client's $clusterTime moves the clock forward; without access control it is trusted.
    if (!node.authEnabled && body.$clusterTime !== undefined)
      gossipInClusterTime(node, body.$clusterTime);

    const session = this.parseSession(body);
    state.session = session;

    // Authentication, then authorization (mongod: checkAuthentication / checkAuthorization).
    if (node.authEnabled && def.access !== 'none') {
      if (conn.users.length === 0) {
        throw new CommandError('Unauthorized', `Command ${def.name} requires authentication`);
      }
      if (!isAuthorized(conn.users, requiredPrivileges(def, db, body))) {
        throw new CommandError(
          'Unauthorized',
          `not authorized on ${db} to execute command ${describeCommand(body)}`,
        );
      }
    }
    if (def.adminOnly && db !== 'admin') {
      throw new CommandError(
        'Unauthorized',
        `${def.name} may only be run against the admin database.`,
      );
    }

    // Multi-document transactions: `autocommit: false` (+ `startTransaction: true` first).
    // Known before failCommand fires: its errors are labelled like the command's own.
    state.inTransaction = body.autocommit !== undefined;
    const failOutcome = await this.evaluateFailCommand(requestedName, def, conn, state);
    const txn = node.transactions.forCommand(def, body, session);

    // Write blocking: mongod refuses user writes unless the client may bypass. With access
    // control disabled every client has all privileges, so every client bypasses.
    // A transaction open when the block was asked for writes on until it ends: mongod turns the
    // block on only once it holds the global lock, after every open transaction ended.
    if (node.userWriteBlocking && def.userWrite && !txn?.openAtWriteBlock) {
      const userDbs = targetDatabases(def, db, body).filter((d) => !INTERNAL_DBS.has(d));
      const bypass = !node.authEnabled || mayBypassWriteBlocking(conn.users);
      if (userDbs.length && !bypass)
        throw new CommandError('UserWritesBlocked', 'User writes blocked');
    }

    const startedAt = Date.now();
    const maxTimeMS = asNumber(body.maxTimeMS);
    let readConcern: ReadConcernArgs | undefined;
    if (txn) {
      // Only the first command carries the transaction's readConcern; afterClusterTime is
      // waited for before the snapshot is taken (on the command's first read or write).
      const rc = body.startTransaction === true ? parseReadConcern(body.readConcern) : undefined;
      if (rc) await waitForReadConcern(node, rc, { maxTimeMS, signal: conn.closed });
    } else if (def.readConcern) {
      readConcern = parseReadConcern(body.readConcern);
      state.readConcern = readConcern;
      if (readConcern)
        await waitForReadConcern(node, readConcern, { maxTimeMS, signal: conn.closed });
    }

    const commitOrAbort = isCommitOrAbort(def.name);
    const ctx: CommandContext = {
      // Inside a transaction the command sees the transaction's snapshot of the catalog.
      node: txn && !commitOrAbort ? txn.node : node,
      conn,
      db,
      cmd: body,
      name: def.name,
      session,
      ...(readConcern ? { readConcern } : {}),
      ...(txn ? { txn } : {}),
    };
    state.baseline = node.oplog.newest()?.ts;
    let reply: Document;
    if (txn) {
      try {
        reply = { ...(await def.run(ctx)) };
      } catch (err) {
        // A failed statement aborts the transaction (later commands get NoSuchTransaction).
        if (!commitOrAbort) txn.abort();
        throw err;
      }
      if (!commitOrAbort && Array.isArray(reply.writeErrors) && reply.writeErrors.length) {
        txn.abort();
        // mongod rethrows a WriteConflict inside a transaction as the command's error (so it
        // gets the TransientTransactionError label), not as a write error.
        const conflict = (reply.writeErrors as Document[]).find((e) => e.code === 112);
        if (conflict) throw new CommandError('WriteConflict', String(conflict.errmsg));
      }
      this.stats.countDocuments(def.name, body, reply);
      // Statements inside a transaction take no write concern: the commit does.
      if (!commitOrAbort) return this.applyWriteConcernFailure(reply, failOutcome, state);
    } else if (def.retryableWrite && session?.txnNumber !== undefined) {
      reply = await this.runRetryable(def, ctx, session);
    } else {
      reply = { ...(await def.run(ctx)) };
      this.stats.countDocuments(def.name, body, reply);
    }
    if (
      asNumber(reply.ok) !== 0 &&
      (def.access === 'write' ||
        commitOrAbort ||
        (def.name === 'aggregate' && isWritingAggregate(body)))
    ) {
      const wce = await waitForWriteConcern(node, effectiveWriteConcern(body), {
        maxTimeMS,
        startedAt,
        signal: conn.closed,
      });
      if (wce) reply.writeConcernError = wce;
    }
    return this.applyWriteConcernFailure(reply, failOutcome, state);
  }

  private async runRetryable(
    def: CommandDefinition,
    ctx: CommandContext,
    session: CommandSession,
  ): Promise<Document> {
    const check = this.node.sessions.checkRetryableWrite(session.key, session.txnNumber!);
    if (check.kind === 'replay') return { ...(await check.reply) };
    let reply: Document;
    try {
      reply = { ...(await def.run(ctx)) };
      this.stats.countDocuments(def.name, ctx.cmd, reply);
    } catch (err) {
      check.abandon();
      throw err;
    }
    if (asNumber(reply.ok) === 0) check.abandon();
    else check.record({ ...reply });
    return reply;
  }

  private parseSession(body: Document): CommandSession | undefined {
    const lsid = body.lsid;
    const txnNumber = body.txnNumber;
    if (txnNumber !== undefined && !(txnNumber instanceof Long)) {
      throw new CommandError(
        'TypeMismatch',
        `BSON field 'OperationSessionInfo.txnNumber' is the wrong type '${bsonTypeName(txnNumber)}', expected type 'long'`,
      );
    }
    if (lsid === undefined) {
      if (txnNumber !== undefined) {
        throw new CommandError(
          'InvalidOptions',
          'Transaction number requires a session ID to also be specified',
        );
      }
      return undefined;
    }
    if (lsid === null || typeof lsid !== 'object' || Array.isArray(lsid)) {
      throw new CommandError(
        'TypeMismatch',
        `BSON field 'OperationSessionInfo.lsid' is the wrong type '${bsonTypeName(lsid)}', expected type 'object'`,
      );
    }
    const key = this.node.sessions.touch(lsid as Document);
    // Oplog entries of retryable writes keep the lsid: use the session's copy, not the decoded
    // command's (whose UUID is a view of the whole message buffer).
    const owned = this.node.sessions.ownLsid(key) ?? detach(lsid as Document);
    return { key, lsid: owned, ...(txnNumber !== undefined ? { txnNumber } : {}) };
  }

  /**
   * mongod's `failCommand` fail point: evaluated before the command runs, for commands named
   * in `failCommands` (and from `appName` when given). Order: blockConnection, closeConnection,
   * errorCode; a writeConcernError lets the command run and is appended to its reply.
   */
  private async evaluateFailCommand(
    requestedName: string,
    def: CommandDefinition,
    conn: ConnectionContext,
    state: { explicitLabels?: string[] },
  ): Promise<FailCommandOutcome> {
    const data = this.node.failPoints.evaluate('failCommand', (d) => {
      const names = Array.isArray(d.failCommands) ? d.failCommands : [];
      if (!names.includes(requestedName) && !names.includes(def.name)) return false;
      if (typeof d.appName === 'string' && d.appName !== conn.appName) return false;
      return true;
    });
    if (!data) return {};
    const explicitLabels = Array.isArray(data.errorLabels)
      ? data.errorLabels.map(String)
      : undefined;
    if (data.blockConnection === true) {
      const ms = asNumber(data.blockTimeMS) ?? 0;
      await sleep(ms, conn.closed);
    }
    if (data.closeConnection === true) throw new CloseConnection('failCommand closeConnection');
    const errorCode = asNumber(data.errorCode);
    if (errorCode !== undefined) {
      state.explicitLabels = explicitLabels;
      throw new CommandError(errorCode, "Failing command via 'failCommand' failpoint");
    }
    if (data.writeConcernError && typeof data.writeConcernError === 'object') {
      return { writeConcernError: data.writeConcernError as Document, errorLabels: explicitLabels };
    }
    return {};
  }

  private applyWriteConcernFailure(
    reply: Document,
    outcome: FailCommandOutcome,
    state: RunState,
  ): Document {
    if (!outcome.writeConcernError || asNumber(reply.ok) === 0) return reply;
    reply.writeConcernError = outcome.writeConcernError;
    const code = asNumber(outcome.writeConcernError.code);
    if (outcome.errorLabels) {
      if (outcome.errorLabels.length) reply.errorLabels = outcome.errorLabels;
    } else if (
      (this.isRetryableWrite(state) || (state.inTransaction && isCommitOrAbort(state.def?.name))) &&
      code !== undefined &&
      RETRYABLE_WRITE_CODES.has(code)
    ) {
      reply.errorLabels = ['RetryableWriteError'];
    }
    return reply;
  }
}
