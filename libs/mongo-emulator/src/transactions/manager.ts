import type { Binary, Document, Long } from 'bson';
import { CommandError } from '../errors';
import { encodeKeyString } from '../changes/keystring';
import { uuidKey } from '../changes/images';
import type { NodeServices } from '../node/node-services';
import type { Collection } from '../storage/collection';
import type { CommandDefinition, CommandSession } from '../commands/types';
import { MAX_OPLOG_ENTRY_BYTES, Transaction, type LockTable } from './transaction';
import { TransactionSnapshot } from './snapshot';

/** mongod's transactionLifetimeLimitSeconds default. */
export const DEFAULT_TRANSACTION_LIFETIME_SECONDS = 60;

/**
 * Commands that may run inside a multi-document transaction (mongod 7.0's txnCmdAllowlist,
 * the part the emulator has). Anything else with `autocommit: false` fails with 263.
 */
const ALLOWED_IN_TRANSACTION = new Set([
  'abortTransaction',
  'aggregate',
  'commitTransaction',
  'create',
  'createIndexes',
  'delete',
  'distinct',
  'find',
  'findAndModify',
  'getMore',
  'insert',
  'killCursors',
  'update',
]);

export interface TransactionOptions {
  transactionLifetimeLimitSeconds?: number;
  maxTransactionOpsPerOplogEntry?: number;
}

/**
 * The node's transactions: per session the latest one (open, committed or aborted), the
 * document locks of the open ones, and the lifetime limit.
 */
export class TransactionManager implements LockTable {
  private readonly bySession = new Map<string, Transaction>();
  private readonly lockHolders = new Map<string, Transaction>();
  private timer: NodeJS.Timeout | undefined;
  lifetimeLimitSeconds: number;
  maxOpsPerOplogEntry: number;

  constructor(
    private readonly node: NodeServices,
    options: TransactionOptions = {},
  ) {
    this.lifetimeLimitSeconds =
      options.transactionLifetimeLimitSeconds ?? DEFAULT_TRANSACTION_LIFETIME_SECONDS;
    this.maxOpsPerOplogEntry = options.maxTransactionOpsPerOplogEntry ?? Number.MAX_SAFE_INTEGER;
  }

  // ---- LockTable ---------------------------------------------------------------------

  holder(key: string): Transaction | undefined {
    return this.lockHolders.get(key);
  }

  take(key: string, txn: Transaction): void {
    this.lockHolders.set(key, txn);
  }

  release(txn: Transaction): void {
    for (const key of txn.locks)
      if (this.lockHolders.get(key) === txn) this.lockHolders.delete(key);
  }

  lockKey(uuid: Binary, id: unknown): string {
    // KeyString bytes compare equal values equal (1, 1.0 and NumberLong(1) are one `_id`).
    const { bytes } = encodeKeyString([id]);
    return `${uuidKey(uuid)}:${Buffer.from(bytes).toString('hex')}`;
  }

  /**
   * A write outside any transaction to a document an open transaction wrote. mongod makes it
   * wait until the transaction ends; the emulator fails it with WriteConflict (see README).
   */
  assertNotLocked(coll: Collection, id: unknown): void {
    if (this.lockHolders.size === 0) return;
    if (this.lockHolders.has(this.lockKey(coll.uuid, id))) {
      throw new CommandError(
        'WriteConflict',
        'Write conflict with an open multi-document transaction. :: Please retry your operation.',
      );
    }
  }

  // ---- distributed transactions (a router's participants) ------------------------------

  private readonly reserved = new Map<
    string,
    { txnNumber: Long; snapshot: TransactionSnapshot; at: number }
  >();

  /**
   * A router's transaction read at one cluster time on every shard: the snapshot is taken now
   * (the transaction's first statement) and used if this node joins the transaction later.
   * Reservations of abandoned transactions go after transactionLifetimeLimitSeconds.
   */
  reserveSnapshot(sessionKey: string, txnNumber: Long, now = Date.now()): void {
    const limitMs = this.lifetimeLimitSeconds * 1000;
    for (const [key, r] of this.reserved) if (now - r.at > limitMs) this.reserved.delete(key);
    this.reserved.set(sessionKey, {
      txnNumber,
      snapshot: new TransactionSnapshot(this.node),
      at: now,
    });
  }

  releaseSnapshot(sessionKey: string): void {
    this.reserved.delete(sessionKey);
  }

  // ---- sessions ----------------------------------------------------------------------

  /** Open transaction of a session, if any. */
  current(sessionKey: string): Transaction | undefined {
    return this.bySession.get(sessionKey);
  }

  get openCount(): number {
    let n = 0;
    for (const t of this.bySession.values()) if (t.state === 'inProgress') n++;
    return n;
  }

  /**
   * setUserWriteBlockMode {global: true}: mongod enables the block under the global lock in
   * MODE_X, which waits for every open transaction (a transaction holds its intent locks from
   * its first statement to its commit or abort; an abandoned one until the lifetime limit
   * aborts it). `exempt` (the block was off): those transactions go on writing meanwhile.
   * Resolves true once they all ended, false when `timeoutMs` passed or `signal` aborted first.
   */
  async waitForOpen(timeoutMs: number, exempt: boolean, signal?: AbortSignal): Promise<boolean> {
    const open = [...this.bySession.values()].filter((t) => t.state === 'inProgress');
    if (open.length === 0) return true;
    if (exempt) for (const txn of open) txn.openAtWriteBlock = true;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      return await Promise.race([
        Promise.all(open.map((t) => t.whenEnded())).then(() => true),
        new Promise<boolean>((resolve) => {
          if (Number.isFinite(timeoutMs)) timer = setTimeout(() => resolve(false), timeoutMs);
          onAbort = () => resolve(false);
          if (signal?.aborted) resolve(false);
          signal?.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } finally {
      if (timer) clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
      if (exempt) for (const txn of open) txn.openAtWriteBlock = false;
    }
  }

  /** endSessions / killSessions / session expiry: their open transactions are aborted. */
  endSessions(keys: Iterable<string>): void {
    for (const key of keys) {
      this.bySession.get(key)?.abort();
      this.bySession.delete(key);
    }
  }

  /** A retryable write with a newer txnNumber ends the session's open transaction. */
  retryableWriteStarted(session: CommandSession): void {
    const txn = this.bySession.get(session.key);
    if (!txn || session.txnNumber === undefined) return;
    if (session.txnNumber.greaterThan(txn.txnNumber)) txn.abort();
  }

  /** Aborts open transactions older than transactionLifetimeLimitSeconds (mongod's reaper). */
  abortExpired(now = Date.now()): void {
    const limitMs = this.lifetimeLimitSeconds * 1000;
    for (const txn of this.bySession.values()) {
      if (txn.state === 'inProgress' && now - txn.startedAt > limitMs) {
        txn.expired = true;
        txn.abort();
      }
    }
    if (this.openCount === 0) this.stopTimer();
  }

  stop(): void {
    this.stopTimer();
  }

  private stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private startTimer(): void {
    if (this.timer) return;
    // mongod checks every min(transactionLifetimeLimitSeconds / 2, 1 s) or so; once a second
    // (or faster for a shorter limit) is close enough.
    const every = Math.max(10, Math.min(1000, (this.lifetimeLimitSeconds * 1000) / 2));
    this.timer = setInterval(() => this.abortExpired(), every);
    this.timer.unref();
  }

  /**
   * The transaction a command runs in: validates `autocommit`/`startTransaction`, starts a
   * transaction or finds the open one. Undefined for commands outside transactions.
   */
  forCommand(
    def: CommandDefinition,
    body: Document,
    session: CommandSession | undefined,
  ): Transaction | undefined {
    const autocommit = body.autocommit;
    const start = body.startTransaction;
    if (autocommit === undefined && start === undefined) {
      if (session) this.retryableWriteStarted(session);
      if (def.name === 'commitTransaction' || def.name === 'abortTransaction') {
        throw new CommandError(
          'InvalidOptions',
          "'autocommit' field must be specified for commitTransaction and abortTransaction",
        );
      }
      return undefined;
    }
    if (autocommit === undefined) {
      throw new CommandError(
        'InvalidOptions',
        'must specify autocommit=false when specifying startTransaction',
      );
    }
    if (typeof autocommit !== 'boolean') {
      throw new CommandError(
        'TypeMismatch',
        "BSON field 'OperationSessionInfo.autocommit' is the wrong type, expected type 'bool'",
      );
    }
    if (autocommit) throw new CommandError('InvalidOptions', 'autocommit must be false');
    if (start !== undefined && start !== true)
      throw new CommandError('InvalidOptions', 'startTransaction must be true');
    if (!session || session.txnNumber === undefined) {
      throw new CommandError(
        'InvalidOptions',
        "'autocommit' field requires a transaction number to also be specified",
      );
    }
    if (!ALLOWED_IN_TRANSACTION.has(def.name)) {
      throw new CommandError(
        'OperationNotSupportedInTransaction',
        `Cannot run '${def.name}' in a multi-document transaction.`,
      );
    }
    const txnNumber = session.txnNumber;
    this.abortExpired();
    const latest = this.bySession.get(session.key);
    if (start) {
      if (latest && txnNumber.lessThan(latest.txnNumber)) {
        throw new CommandError(
          'TransactionTooOld',
          `Cannot start transaction ${txnNumber} on session ${session.key} because a newer transaction ${latest.txnNumber} has already started.`,
        );
      }
      if (latest && txnNumber.equals(latest.txnNumber)) {
        throw new CommandError(
          'ConflictingOperationInProgress',
          `Cannot start a transaction at given transaction number ${txnNumber} a transaction with the same number is in state ${stateName(latest)}`,
        );
      }
      if (body.readConcern !== undefined) checkTransactionReadConcern(body.readConcern);
      latest?.abort();
      const reserved = this.reserved.get(session.key);
      this.reserved.delete(session.key);
      const txn = new Transaction(
        this.node,
        session.key,
        session.lsid,
        txnNumber,
        this,
        {
          maxOpsPerOplogEntry: this.maxOpsPerOplogEntry,
          maxBytesPerOplogEntry: MAX_OPLOG_ENTRY_BYTES,
        },
        reserved && reserved.txnNumber.equals(txnNumber) ? reserved.snapshot : undefined,
      );
      const level = (body.readConcern as Document | undefined)?.level;
      if (typeof level === 'string') txn.readConcernLevel = level;
      this.bySession.set(session.key, txn);
      this.startTimer();
      return txn;
    }
    if (!latest || txnNumber.greaterThan(latest.txnNumber)) {
      throw new CommandError(
        'NoSuchTransaction',
        `Given transaction number ${txnNumber} does not match any in-progress transactions. The active transaction number is ${latest ? latest.txnNumber : -1}`,
      );
    }
    if (txnNumber.lessThan(latest.txnNumber)) {
      throw new CommandError(
        'TransactionTooOld',
        `Cannot continue transaction ${txnNumber} on session ${session.key} because a newer transaction ${latest.txnNumber} has already started.`,
      );
    }
    if (latest.state === 'aborted') {
      throw new CommandError(
        'NoSuchTransaction',
        latest.expired
          ? `Transaction ${session.key}:${txnNumber} has been aborted because it exceeded transactionLifetimeLimitSeconds.`
          : `Transaction with { txnNumber: ${txnNumber} } has been aborted.`,
      );
    }
    if (latest.state === 'committed' && def.name !== 'commitTransaction') {
      throw new CommandError(
        'TransactionCommitted',
        `Transaction with { txnNumber: ${txnNumber} } has been committed.`,
      );
    }
    if (body.readConcern !== undefined) {
      throw new CommandError(
        'InvalidOptions',
        'Only the first command in a transaction may specify a readConcern',
      );
    }
    if (
      body.writeConcern !== undefined &&
      def.name !== 'commitTransaction' &&
      def.name !== 'abortTransaction'
    ) {
      throw new CommandError(
        'InvalidOptions',
        'Cannot set write concern after starting a transaction.',
      );
    }
    return latest;
  }
}

function stateName(txn: Transaction): string {
  if (txn.state === 'inProgress') return 'TxnInProgress';
  return txn.state === 'committed' ? 'TxnCommitted' : 'TxnAborted';
}

/** Transactions read at local, majority or snapshot (mongod refuses the other levels). */
function checkTransactionReadConcern(rc: unknown): void {
  if (!rc || typeof rc !== 'object') return;
  const level = (rc as Document).level;
  if (level === undefined || level === 'local' || level === 'majority' || level === 'snapshot')
    return;
  throw new CommandError(
    'InvalidOptions',
    `The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order to run in a transaction`,
  );
}
