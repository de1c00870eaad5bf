import { Long, Timestamp, type Document } from 'bson';
import { decodeExact } from '../bson/codec';
import { CommandError } from '../errors';
import type { NewOplogEntry, OplogEntry } from '../oplog/oplog-entry';
import { TERM, type NodeServices } from '../node/node-services';
import type { StoredRecord, WriteOptions } from '../storage/collection';
import { Index } from '../storage/index';
import { TransactionSnapshot } from './snapshot';

export type TransactionState = 'inProgress' | 'committed' | 'aborted';

/** mongod's BSONObjMaxUserSize: an applyOps entry larger than this is split (partialTxn). */
export const MAX_OPLOG_ENTRY_BYTES = 16 * 1024 * 1024;

/** Where a transaction takes and gives back its document locks. */
export interface LockTable {
  /** The transaction holding the document, if any. */
  holder(key: string): Transaction | undefined;
  take(key: string, txn: Transaction): void;
  release(txn: Transaction): void;
  lockKey(uuid: NonNullable<NewOplogEntry['uuid']>, id: unknown): string;
}

export interface TransactionLimits {
  /** mongod's maxNumberOfTransactionOperationsInSingleOplogEntry (default: unlimited). */
  maxOpsPerOplogEntry: number;
  /** Bytes of operations per applyOps entry (mongod: 16 MiB). */
  maxBytesPerOplogEntry: number;
}

function writeConflict(): CommandError {
  // mongod 7.0's WriteConflictException text.
  return new CommandError(
    'WriteConflict',
    'Write conflict during plan execution and yielding is disabled. :: Please retry your operation or multi-document transaction.',
  );
}

/** Rough BSON size of an operation inside applyOps (the images dominate). */
function opBytes(op: NewOplogEntry): number {
  return 64 + (op.postImage?.length ?? 0) + (op.op === 'delete' ? 32 : 0);
}

/**
 * One multi-document transaction of a session (mongod's TransactionParticipant, for a replica
 * set). Its commands run against a snapshot taken at its first command; its writes go to that
 * snapshot's private copies and are recorded here; each document it writes is locked, and a
 * document that someone else changed since the snapshot (or another open transaction wrote)
 * fails with WriteConflict. The commit applies the recorded operations to the live collections
 * and writes them as one applyOps oplog entry (or a partialTxn chain when large).
 */
export class Transaction {
  state: TransactionState = 'inProgress';
  readonly startedAt = Date.now();
  readonly ops: NewOplogEntry[] = [];
  /** The reply to a successful commitTransaction (a retried commit gets it again). */
  commitReply?: Document;
  /** Set when the transaction was aborted for going past transactionLifetimeLimitSeconds. */
  expired = false;
  /**
   * Open when setUserWriteBlockMode arrived: its statements still write until it ends (the
   * block waits for it, see TransactionManager.waitForOpen).
   */
  openAtWriteBlock = false;
  /** `readConcern.level` of the first command (undefined: the default, local). */
  readConcernLevel?: string;
  /**
   * Set once the transaction is prepared (a participant of a distributed transaction's
   * two-phase commit): its prepare oplog entry. It then holds its locks until
   * commitPrepared/abort; no statement runs in it any more.
   */
  prepared?: OplogEntry;
  private endWaiters: Array<() => void> = [];
  readonly locks = new Set<string>();
  readonly sink = (entry: NewOplogEntry): void => this.record(entry);

  constructor(
    readonly liveNode: NodeServices,
    readonly sessionKey: string,
    readonly lsid: Document,
    readonly txnNumber: Long,
    private readonly lockTable: LockTable,
    private readonly limits: TransactionLimits,
    /** A snapshot taken earlier (a distributed transaction's global read timestamp). */
    private snapshot?: TransactionSnapshot,
  ) {}

  /** The node as the transaction sees it (the snapshot is taken on first use). */
  get node(): NodeServices {
    this.snapshot ??= new TransactionSnapshot(this.liveNode);
    return this.snapshot.node;
  }

  /** Called by the working copies for every write the transaction makes. */
  private record(entry: NewOplogEntry): void {
    const snap = this.snapshot;
    if (entry.op === 'create' || entry.op === 'createIndexes') {
      // DDL on a collection the transaction created: nobody else sees it, nothing to lock.
      this.ops.push(entry);
      return;
    }
    if (!snap || !entry.uuid || !entry.documentKey)
      throw new Error('transaction write outside its snapshot');
    const id = entry.documentKey._id;
    const key = this.lockTable.lockKey(entry.uuid, id);
    if (!this.locks.has(key)) {
      const holder = this.lockTable.holder(key);
      if (holder && holder !== this) throw writeConflict();
      const e = snap.byCollectionUuid(entry.uuid);
      if (!e) throw writeConflict();
      // Records are never changed in place: a different record object (or one present on
      // one side only) means a write committed after the snapshot.
      const now: StoredRecord | undefined = e.live.recordById(id);
      const then: StoredRecord | undefined = e.base.recordById(id);
      if (now !== then) throw writeConflict();
      this.lockTable.take(key, this);
      this.locks.add(key);
    }
    this.ops.push(entry);
  }

  abort(): void {
    if (this.state !== 'inProgress') return;
    this.state = 'aborted';
    // A prepared transaction's abort is logged (mongod's abortTransaction oplog entry).
    if (this.prepared) {
      this.liveNode.oplog.append({
        op: 'abortTransaction',
        db: 'admin',
        lsid: this.lsid,
        txnNumber: this.txnNumber,
        o: { abortTransaction: 1 },
        prevOpTime: { ts: this.prepared.ts, t: TERM },
      });
    }
    this.finish();
  }

  /**
   * prepareTransaction (two-phase commit, first phase): writes the operations as one applyOps
   * entry with `prepare: true`; nothing is applied or reported yet, the locks stay held.
   * Returns the prepare timestamp.
   */
  prepare(): Timestamp {
    if (this.state !== 'inProgress') throw new Error('prepare of a finished transaction');
    this.prepared ??= this.liveNode.oplog.append({
      op: 'applyOps',
      db: 'admin',
      lsid: this.lsid,
      txnNumber: this.txnNumber,
      applyOps: [...this.ops],
      prepare: true,
      prevOpTime: { ts: new Timestamp({ t: 0, i: 0 }), t: Long.fromNumber(-1) },
    });
    return this.prepared.ts;
  }

  /**
   * commitTransaction of a prepared transaction (second phase): applies the operations and
   * writes `{commitTransaction: 1, commitTimestamp}` at `commitTs`, the time the coordinator
   * chose (later than every participant's prepare; the same entry time on every participant).
   */
  commitPrepared(commitTs: Timestamp): void {
    const prepared = this.prepared;
    if (this.state !== 'inProgress' || !prepared) return;
    this.applyToLive(() => undefined);
    this.state = 'committed';
    this.liveNode.oplog.appendAt(
      {
        op: 'commitTransaction',
        db: 'admin',
        lsid: this.lsid,
        txnNumber: this.txnNumber,
        o: { commitTransaction: 1, commitTimestamp: commitTs },
        prevOpTime: { ts: prepared.ts, t: TERM },
        txnPrefix: [prepared],
      },
      commitTs,
    );
    this.finish();
  }

  private finish(): void {
    this.lockTable.release(this);
    this.locks.clear();
    this.snapshot = undefined;
    const waiters = this.endWaiters;
    this.endWaiters = [];
    for (const w of waiters) w();
  }

  /** Resolves once the transaction is committed or aborted. */
  whenEnded(): Promise<void> {
    if (this.state !== 'inProgress') return Promise.resolve();
    return new Promise((resolve) => this.endWaiters.push(resolve));
  }

  /**
   * Applies the operations to the live collections and writes the oplog entries. All or
   * nothing: an operation that fails (a unique index violated by a write committed since the
   * snapshot) undoes the ones before it, and the transaction is aborted.
   */
  commit(): void {
    if (this.state !== 'inProgress') return;
    const logged: NewOplogEntry[] = [];
    this.applyToLive((e) => logged.push(e));
    this.state = 'committed';
    this.writeOplog(logged);
    this.finish();
  }

  /** Applies the operations to the live collections, all or nothing (see commit). */
  private applyToLive(sink: (e: NewOplogEntry) => void): void {
    const snap = this.snapshot;
    const undo: Array<() => void> = [];
    const quiet: WriteOptions = { sink: () => undefined, bypassValidation: true };
    const opts: WriteOptions = { sink, bypassValidation: true };
    try {
      for (const op of this.ops) {
        const e = op.uuid && snap?.byCollectionUuid(op.uuid);
        const live = e && e.live;
        if (op.op === 'create' && e && live) {
          // The transaction's new collection appears now; someone who created the namespace
          // meanwhile wins (mongod: WriteConflict on the transaction).
          const catalog = this.liveNode.catalog;
          if (catalog.lookup(live.db, live.name)) throw writeConflict();
          undo.push(catalog.attachCollection(live));
          sink(op);
          continue;
        }
        if (op.op === 'createIndexes' && e && live) {
          const spec = (op.operationDescription?.indexes as Document[] | undefined)?.[0];
          if (spec) live.buildIndex(new Index(spec));
          sink(op);
          continue;
        }
        if (!live || live.catalog.getCollection(live.db, live.name) !== live) throw writeConflict();
        const id = op.documentKey?._id;
        if (op.op === 'insert') {
          const rec = live.insert(decodeExact(op.postImage!), opts);
          undo.push(() => live.delete(rec, quiet));
        } else if (op.op === 'update' || op.op === 'replace') {
          const rec = live.recordById(id);
          if (!rec) throw writeConflict();
          const before = rec.doc;
          const next = live.replace(
            rec,
            decodeExact(op.postImage!),
            op.op,
            op.updateDescription,
            opts,
          );
          undo.push(() => live.replace(next, before, 'replace', undefined, quiet));
        } else if (op.op === 'delete') {
          const rec = live.recordById(id);
          if (!rec) throw writeConflict();
          const before = rec.doc;
          live.delete(rec, opts);
          undo.push(() => live.insert(before, quiet));
        }
      }
    } catch (err) {
      for (let i = undo.length - 1; i >= 0; i--) undo[i]();
      this.abort();
      throw err;
    }
  }

  /** mongod's unprepared commit: one applyOps entry, or a partialTxn chain when too large. */
  private writeOplog(ops: NewOplogEntry[]): void {
    if (ops.length === 0) return; // a read-only transaction writes nothing
    const chunks: NewOplogEntry[][] = [];
    let chunk: NewOplogEntry[] = [];
    let bytes = 0;
    for (const op of ops) {
      const size = opBytes(op);
      if (
        chunk.length > 0 &&
        (chunk.length >= this.limits.maxOpsPerOplogEntry ||
          bytes + size > this.limits.maxBytesPerOplogEntry)
      ) {
        chunks.push(chunk);
        chunk = [];
        bytes = 0;
      }
      chunk.push(op);
      bytes += size;
    }
    chunks.push(chunk);
    const oplog = this.liveNode.oplog;
    const prefix: OplogEntry[] = [];
    let prevOpTime = { ts: new Timestamp({ t: 0, i: 0 }), t: Long.fromNumber(-1) };
    chunks.forEach((applyOps, i) => {
      const last = i === chunks.length - 1;
      const entry: NewOplogEntry = {
        op: 'applyOps',
        db: 'admin',
        lsid: this.lsid,
        txnNumber: this.txnNumber,
        applyOps,
        prevOpTime,
      };
      if (!last) entry.partialTxn = true;
      else if (chunks.length > 1) {
        entry.count = ops.length;
        entry.txnPrefix = prefix;
      }
      const written = oplog.append(entry);
      if (!last) prefix.push(written);
      prevOpTime = { ts: written.ts, t: TERM };
    });
  }
}

/** Every operation of a committed transaction, from its last applyOps entry. */
export function transactionOperations(entry: OplogEntry): NewOplogEntry[] {
  // A prepared transaction's operations are reported at its commitTransaction entry.
  if (entry.op === 'commitTransaction') return [...(entry.txnPrefix?.[0]?.applyOps ?? [])];
  if (entry.op !== 'applyOps' || entry.partialTxn || entry.prepare) return [];
  const out: NewOplogEntry[] = [];
  for (const p of entry.txnPrefix ?? []) out.push(...(p.applyOps ?? []));
  out.push(...(entry.applyOps ?? []));
  return out;
}
