import type { Binary, Document, Long, Timestamp } from 'bson';
import { decodeExact } from '../bson/codec';

/** What MongoDB reports in a change event's `updateDescription`. */
export interface UpdateDescription {
  updatedFields: Document;
  removedFields: string[];
  truncatedArrays: Array<{ field: string; newSize: number }>;
  /** Only with showExpandedEvents, for paths that are ambiguous (numeric keys or dots). */
  disambiguatedPaths?: Document;
}

export type OplogOp =
  | 'insert'
  | 'update'
  | 'replace'
  | 'delete'
  | 'create'
  | 'createIndexes'
  | 'dropIndexes'
  | 'modify'
  | 'drop'
  | 'rename'
  | 'dropDatabase'
  | 'shardCollection'
  | 'applyOps'
  | 'commitTransaction'
  | 'abortTransaction'
  | 'noop';

/**
 * One entry of the emulated oplog: the single source of truth for change streams.
 * Writers append entries in commit order; the clock gives each a strictly greater `ts`.
 *
 * Contract for writers (storage/commands):
 * - insert: documentKey `{_id}`, postImage = the inserted document's bytes (the stored record's
 *   own bytes, shared: records are never changed in place).
 * - update: documentKey, updateDescription, postImage = the new record's bytes, preImage = the
 *   replaced record's bytes.
 * - replace: documentKey, postImage = the new record's bytes, preImage.
 * - delete: documentKey, preImage = the deleted record's bytes.
 *
 * Documents are kept as BSON bytes, never as object graphs: the log holds up to a million
 * entries, and a decoded document is dozens of heap objects for the garbage collector to trace.
 * The bytes are the collection's own (a write shares them, it does not copy). Readers decode
 * them on demand with `preImageOf`/`postImageOf` (each call returns a fresh copy).
 * - create: operationDescription `{idIndex?, ...collection options}` (as the `create` event shows).
 * - createIndexes / dropIndexes: operationDescription `{indexes: [spec, ...]}`.
 * - modify: operationDescription `{index: ...}` or the collMod options; stateBeforeChange when known.
 * - drop: one entry per dropped collection (also for each collection of a dropped database,
 *   emitted before that database's `dropDatabase` entry).
 * - rename: to = target namespace; operationDescription `{to: {db, coll}, dropTarget?: uuid}`.
 * - dropDatabase: db only.
 * - noop: periodic no-op or appendOplogNote; `o` holds the message. Never a change event.
 * - applyOps: a committed multi-document transaction (db `admin`), as mongod writes it: the
 *   operations in `applyOps` (insert/update/replace/delete entries without ts), `lsid`,
 *   `txnNumber`, `prevOpTime`; a large transaction is several entries chained by `prevOpTime`,
 *   all but the last with `partialTxn: true`, the last with `count` and `txnPrefix` (the
 *   partial entries, oldest first). Change streams unwind the last one (see changes/).
 * - applyOps with `prepare: true`: a prepared transaction (a participant of a distributed
 *   transaction's two-phase commit): its operations, not applied and not reported yet.
 * - commitTransaction: commits a prepared transaction; `o: {commitTransaction: 1,
 *   commitTimestamp}`, `prevOpTime` the prepare entry's, `txnPrefix` [the prepare entry].
 *   Change streams unwind the prepared operations at this entry's time.
 * - abortTransaction: aborts a prepared transaction, `o: {abortTransaction: 1}`. Never an event.
 */
export interface OplogEntry {
  ts: Timestamp;
  /** Wall-clock time of the write, in ms since the epoch (a Date object per entry costs 96 B). */
  wallMs: number;
  op: OplogOp;
  db: string;
  coll?: string;
  /** The collection's UUID at the time of the operation. */
  uuid?: Binary;
  documentKey?: Document;
  /** insert/update/replace: the document after the write, BSON-encoded. */
  postImage?: Uint8Array;
  /** update/replace/delete: the document before the write, BSON-encoded. */
  preImage?: Uint8Array;
  updateDescription?: UpdateDescription;
  operationDescription?: Document;
  /** Collection state before a `modify` (collMod), when showExpandedEvents asks for it. */
  stateBeforeChange?: Document;
  to?: { db: string; coll: string };
  lsid?: Document;
  txnNumber?: Long;
  /** Set on writes made by internal migrations (chunk moves) so change streams can skip them. */
  fromMigrate?: boolean;
  /** Payload of a noop entry. */
  o?: Document;
  /**
   * insert/update/replace/delete: the record id of the written document, so a read at an older
   * snapshot can put its earlier version back in natural order.
   */
  rid?: number;
  /** applyOps: the transaction's operations held by this entry. */
  applyOps?: NewOplogEntry[];
  /** applyOps: a prepared transaction's entry (two-phase commit participant). */
  prepare?: boolean;
  /** applyOps: set on every entry of a multi-entry transaction but the last. */
  partialTxn?: boolean;
  /** applyOps: on the last entry of a multi-entry transaction, the number of operations. */
  count?: number;
  /** applyOps: the previous entry of the transaction (`{ts: Timestamp(0, 0), t: -1}` for the first). */
  prevOpTime?: { ts: Timestamp; t: Long };
  /** applyOps: on the last entry of a multi-entry transaction, its partial entries in order. */
  txnPrefix?: OplogEntry[];
  /** Set only on the per-operation entries a change stream unwinds from a transaction. */
  txnOpIndex?: number;
}

export type NewOplogEntry = Omit<OplogEntry, 'ts' | 'wallMs'>;

/** The document before an update/replace/delete (decoded copy); undefined for other ops. */
export function preImageOf(entry: Pick<OplogEntry, 'preImage'>): Document | undefined {
  return entry.preImage && decodeExact(entry.preImage);
}

/** The document after an insert/update/replace (decoded copy); undefined for other ops. */
export function postImageOf(entry: OplogEntry): Document | undefined {
  return entry.postImage && decodeExact(entry.postImage);
}
