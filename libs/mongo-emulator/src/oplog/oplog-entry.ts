import type { Binary, Document, Long, Timestamp } from 'bson';

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
  | 'noop';

/**
 * One entry of the emulated oplog: the single source of truth for change streams.
 * Writers append entries in commit order; the clock gives each a strictly greater `ts`.
 *
 * Contract for writers (storage/commands):
 * - insert: documentKey `{_id}`, fullDocument = inserted document.
 * - update: documentKey, updateDescription, fullDocument = post-image, preImage = pre-image.
 * - replace: documentKey, fullDocument = new document, preImage.
 * - delete: documentKey, preImage.
 * - create: operationDescription `{idIndex?, ...collection options}` (as the `create` event shows).
 * - createIndexes / dropIndexes: operationDescription `{indexes: [spec, ...]}`.
 * - modify: operationDescription `{index: ...}` or the collMod options; stateBeforeChange when known.
 * - drop: one entry per dropped collection (also for each collection of a dropped database,
 *   emitted before that database's `dropDatabase` entry).
 * - rename: to = target namespace; operationDescription `{to: {db, coll}, dropTarget?: uuid}`.
 * - dropDatabase: db only.
 * - noop: periodic no-op or appendOplogNote; `o` holds the message. Never a change event.
 */
export interface OplogEntry {
  ts: Timestamp;
  wall: Date;
  op: OplogOp;
  db: string;
  coll?: string;
  /** The collection's UUID at the time of the operation. */
  uuid?: Binary;
  documentKey?: Document;
  fullDocument?: Document;
  preImage?: Document;
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
}

export type NewOplogEntry = Omit<OplogEntry, 'ts' | 'wall'>;
