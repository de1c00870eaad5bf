import { AsyncLocalStorage } from 'node:async_hooks';
import { Long, UUID, type Document, type Timestamp } from 'bson';
import { CommandError } from '../errors';
import type { ConnectionContext } from '../commands/types';
import { lsidKey } from '../server/sessions';
import { asNumber } from '../server/values';
import type { Transaction } from '../transactions/transaction';
import type { Catalog } from '../storage/catalog';
import type { ShardHandle, ShardingMetadata } from './metadata';

type RouterTxnState = 'inProgress' | 'committed' | 'aborted';

/**
 * One distributed transaction as the router tracks it (mongos's TransactionRouter): the
 * participants in the order they joined, the read concern each joining shard gets (snapshot
 * at the global read timestamp chosen at the first statement) and the outcome.
 */
export interface RouterTransaction {
  readonly key: string;
  readonly lsid: Document;
  readonly txnNumber: Long;
  state: RouterTxnState;
  readonly participants: ShardHandle[];
  /** What a shard's first statement carries (`{level: 'snapshot', atClusterTime}` or the client's). */
  readonly readConcern?: Document;
  /** The global read timestamp (readConcern snapshot): every shard reads at it. */
  readonly atClusterTime?: Timestamp;
}

const TRANSIENT = { labels: ['TransientTransactionError'] };

function isDoc(v: unknown): v is Document {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function failed(reply: Document): boolean {
  return (
    asNumber(reply.ok) === 0 ||
    (Array.isArray(reply.writeErrors) && (reply.writeErrors as unknown[]).length > 0)
  );
}

/**
 * Distributed transactions through a router. Statements run on the shards as the shards' own
 * replica-set transactions (transactions/), one per participant; the router adds
 * `startTransaction`, `autocommit: false`, `txnNumber` and the read concern to a shard's first
 * statement. `commitTransaction` commits a single write shard directly (its applyOps entry);
 * with several write shards it runs two-phase commit: every write participant prepares (an
 * applyOps entry with `prepare: true`), the commit timestamp is then chosen after every
 * prepare timestamp, and every participant writes its commitTransaction entry at that time.
 */
export class RouterTransactions {
  private readonly bySession = new Map<string, RouterTransaction>();
  /** The transaction the command being routed runs in (shard sub-commands join it). */
  private readonly context = new AsyncLocalStorage<RouterTransaction>();

  constructor(private readonly metadata: ShardingMetadata) {}

  private get shards(): ShardHandle[] {
    return this.metadata.shards;
  }

  /** endSessions through the router: their transactions are over (the shards abort theirs). */
  endSessions(lsids: unknown[]): void {
    for (const lsid of lsids) {
      if (!isDoc(lsid)) continue;
      let key: string;
      try {
        key = lsidKey(lsid);
      } catch {
        continue; // the shards report the malformed lsid
      }
      const txn = this.bySession.get(key);
      if (!txn) continue;
      if (txn.state === 'inProgress') txn.state = 'aborted';
      this.releaseSnapshots(txn);
      this.bySession.delete(key);
    }
  }

  /** The transaction of the command being routed, if any. */
  current(): RouterTransaction | undefined {
    return this.context.getStore();
  }

  /**
   * `body` as `shard` gets it inside `txn`: the transaction's lsid, txnNumber and
   * `autocommit: false`; on the shard's first statement also `startTransaction: true` and the
   * read concern at the global read timestamp.
   */
  shardBody(txn: RouterTransaction, shard: ShardHandle, body: Document): Document {
    const out: Document = { ...body };
    delete out.startTransaction;
    delete out.readConcern;
    delete out.writeConcern;
    out.lsid = txn.lsid;
    out.txnNumber = txn.txnNumber;
    if (!txn.participants.includes(shard)) {
      txn.participants.push(shard);
      out.startTransaction = true;
      if (txn.readConcern) out.readConcern = txn.readConcern;
    }
    out.autocommit = false;
    return out;
  }

  /**
   * A command with `autocommit` (a statement, commitTransaction or abortTransaction).
   * `route` routes the statement as usual; every shard command it sends joins the transaction.
   */
  async statement(
    name: string,
    body: Document,
    conn: ConnectionContext,
    route: () => Promise<Document>,
  ): Promise<Document> {
    const lsid = body.lsid;
    const txnNumber = body.txnNumber;
    if (
      body.autocommit !== false ||
      !isDoc(lsid) ||
      !(txnNumber instanceof Long) ||
      (body.startTransaction !== undefined && body.startTransaction !== true)
    ) {
      // Malformed transaction fields: a shard answers with mongod's own validation error.
      return this.shards[0].executor.execute(body, conn);
    }
    const key = lsidKey(lsid);
    const latest = this.bySession.get(key);
    if (name === 'commitTransaction') return this.commit(latest, txnNumber, body, conn);
    if (name === 'abortTransaction') return this.abort(latest, txnNumber, conn);
    let txn: RouterTransaction;
    if (body.startTransaction === true) {
      if (latest && txnNumber.lessThan(latest.txnNumber))
        throw new CommandError(
          'TransactionTooOld',
          `Cannot start transaction ${txnNumber} on session ${key} because a newer transaction ${latest.txnNumber} has already started.`,
        );
      if (latest && txnNumber.equals(latest.txnNumber))
        throw new CommandError(
          'ConflictingOperationInProgress',
          `Cannot start a transaction at given transaction number ${txnNumber} a transaction with the same number is in state ${latest.state}`,
        );
      if (latest?.state === 'inProgress') await this.abortParticipants(latest, conn);
      txn = this.begin(key, lsid, txnNumber, body.readConcern);
    } else {
      txn = this.continued(latest, key, txnNumber);
    }
    const reply = await this.context.run(txn, route);
    // A failed statement aborts the transaction on every participant (mongos's implicit abort).
    if (failed(reply) && txn.state === 'inProgress') await this.abortParticipants(txn, conn);
    return reply;
  }

  private begin(key: string, lsid: Document, txnNumber: Long, rc: unknown): RouterTransaction {
    let readConcern: Document | undefined;
    let atClusterTime: Timestamp | undefined;
    if (isDoc(rc) && rc.level === 'snapshot') {
      // mongos picks the global read timestamp at the first statement.
      atClusterTime = (rc.atClusterTime as Timestamp | undefined) ?? this.metadata.clock.current();
      readConcern = { level: 'snapshot', atClusterTime };
      // Shards that join later read the data as of now too.
      for (const shard of this.shards) shard.rs.node.transactions.reserveSnapshot(key, txnNumber);
    } else if (isDoc(rc)) readConcern = rc;
    const txn: RouterTransaction = {
      key,
      lsid,
      txnNumber,
      state: 'inProgress',
      participants: [],
      ...(readConcern ? { readConcern } : {}),
      ...(atClusterTime ? { atClusterTime } : {}),
    };
    this.bySession.set(key, txn);
    return txn;
  }

  private continued(
    latest: RouterTransaction | undefined,
    key: string,
    txnNumber: Long,
  ): RouterTransaction {
    if (latest && txnNumber.lessThan(latest.txnNumber))
      throw new CommandError(
        'TransactionTooOld',
        `Cannot continue transaction ${txnNumber} on session ${key} because a newer transaction ${latest.txnNumber} has already started.`,
      );
    if (!latest || txnNumber.greaterThan(latest.txnNumber))
      throw new CommandError(
        'NoSuchTransaction',
        `Given transaction number ${txnNumber} does not match any in-progress transactions. The active transaction number is ${latest ? latest.txnNumber : -1}`,
        TRANSIENT,
      );
    if (latest.state === 'aborted')
      throw new CommandError(
        'NoSuchTransaction',
        `Transaction with { txnNumber: ${txnNumber} } has been aborted.`,
        TRANSIENT,
      );
    if (latest.state === 'committed')
      throw new CommandError(
        'TransactionCommitted',
        `Transaction with { txnNumber: ${txnNumber} } has been committed.`,
      );
    return latest;
  }

  /**
   * What a router-side check (a shard-key update's) reads on `shard`: inside a transaction the
   * shard already joined, its snapshot with its own writes; otherwise the shard's live data.
   */
  catalogFor(shard: ShardHandle): Catalog {
    const txn = this.current();
    const t = txn && txn.participants.includes(shard) ? this.participantTxn(shard, txn) : undefined;
    return t ? t.node.catalog : shard.rs.node.catalog;
  }

  /** The shard's own transaction for `txn` while it is open. */
  private participantTxn(shard: ShardHandle, txn: RouterTransaction): Transaction | undefined {
    const t = shard.rs.node.transactions.current(txn.key);
    return t && t.txnNumber.equals(txn.txnNumber) && t.state === 'inProgress' ? t : undefined;
  }

  private releaseSnapshots(txn: RouterTransaction): void {
    if (!txn.atClusterTime) return;
    for (const shard of this.shards) shard.rs.node.transactions.releaseSnapshot(txn.key);
  }

  /** abortTransaction on every participant (errors ignored: a shard may have aborted already). */
  async abortParticipants(txn: RouterTransaction, conn: ConnectionContext): Promise<void> {
    txn.state = 'aborted';
    this.releaseSnapshots(txn);
    for (const shard of txn.participants) {
      await shard.executor.execute(
        {
          abortTransaction: 1,
          lsid: txn.lsid,
          txnNumber: txn.txnNumber,
          autocommit: false,
          $db: 'admin',
        },
        conn,
      );
    }
  }

  private async abort(
    latest: RouterTransaction | undefined,
    txnNumber: Long,
    conn: ConnectionContext,
  ): Promise<Document> {
    if (!latest || !txnNumber.equals(latest.txnNumber) || latest.state === 'aborted') {
      throw new CommandError(
        'NoSuchTransaction',
        `Transaction with { txnNumber: ${txnNumber} } has been aborted.`,
        TRANSIENT,
      );
    }
    if (latest.state === 'committed')
      throw new CommandError(
        'TransactionCommitted',
        `Transaction with { txnNumber: ${txnNumber} } has been committed.`,
      );
    await this.abortParticipants(latest, conn);
    return { ok: 1 };
  }

  private async commit(
    latest: RouterTransaction | undefined,
    txnNumber: Long,
    body: Document,
    conn: ConnectionContext,
  ): Promise<Document> {
    if (latest && txnNumber.lessThan(latest.txnNumber))
      throw new CommandError(
        'TransactionTooOld',
        `Cannot commit transaction ${txnNumber} because a newer transaction ${latest.txnNumber} has already started.`,
      );
    if (!latest || txnNumber.greaterThan(latest.txnNumber) || latest.state === 'aborted')
      throw new CommandError(
        'NoSuchTransaction',
        `Transaction with { txnNumber: ${txnNumber} } has been aborted.`,
        TRANSIENT,
      );
    // A retried commit of a committed transaction answers success again.
    if (latest.state === 'committed') return { ok: 1 };
    return this.commitParticipants(
      latest,
      conn,
      isDoc(body.writeConcern) ? body.writeConcern : undefined,
    );
  }

  /** Commits `txn` on its participants: directly with one write shard, else two-phase. */
  async commitParticipants(
    txn: RouterTransaction,
    conn: ConnectionContext,
    writeConcern?: Document,
  ): Promise<Document> {
    this.releaseSnapshots(txn);
    const writers = txn.participants.filter(
      (s) => (this.participantTxn(s, txn)?.ops.length ?? 0) > 0,
    );
    const readers = txn.participants.filter((s) => !writers.includes(s));
    const commitOn = (shard: ShardHandle) =>
      shard.executor.execute(
        {
          commitTransaction: 1,
          lsid: txn.lsid,
          txnNumber: txn.txnNumber,
          autocommit: false,
          ...(writeConcern ? { writeConcern } : {}),
          $db: 'admin',
        },
        conn,
      );
    if (writers.length <= 1) {
      // Read-only participants first, then the one write shard commits on its own (applyOps).
      for (const shard of [...readers, ...writers]) {
        const reply = await commitOn(shard);
        if (asNumber(reply.ok) === 0) {
          await this.abortParticipants(txn, conn);
          return reply;
        }
      }
      txn.state = 'committed';
      return { ok: 1 };
    }
    // Two-phase commit: prepare every write participant, then commit them all at one time
    // later than every prepare timestamp.
    const prepared: Transaction[] = [];
    try {
      for (const shard of writers) {
        const t = this.participantTxn(shard, txn);
        if (!t) throw new CommandError('NoSuchTransaction', 'participant transaction not found');
        t.prepare();
        prepared.push(t);
      }
    } catch (err) {
      for (const t of prepared) t.abort();
      await this.abortParticipants(txn, conn);
      throw new CommandError(
        'NoSuchTransaction',
        `Transaction was aborted :: caused by :: ${err instanceof Error ? err.message : String(err)}`,
        TRANSIENT,
      );
    }
    // Synchronous from here: nothing else is logged between the tick and the commit entries.
    const commitTs = this.metadata.clock.tick();
    for (const t of prepared) t.commitPrepared(commitTs);
    txn.state = 'committed';
    for (const shard of readers) await commitOn(shard);
    return { ok: 1 };
  }

  /**
   * A retryable write that must write on two shards (a shard-key update moving a document):
   * run as an internal distributed transaction of its own session, committed before the reply.
   */
  async internal(
    conn: ConnectionContext,
    work: () => Promise<Document | undefined>,
  ): Promise<Document | undefined> {
    const lsid = { id: new UUID() };
    const txn = this.begin(lsidKey(lsid), lsid, Long.ZERO, undefined);
    const failure = await this.context.run(txn, work);
    if (failure) {
      await this.abortParticipants(txn, conn);
      return failure;
    }
    const reply = await this.commitParticipants(txn, conn);
    this.bySession.delete(txn.key);
    return asNumber(reply.ok) === 0 ? reply : undefined;
  }
}
