import BTree from 'sorted-btree';
import type { Document, Timestamp } from 'bson';
import { compareValues } from '../bson/compare';
import type { Oplog } from '../oplog/oplog';
import { preImageOf, type OplogEntry } from '../oplog/oplog-entry';
import { transactionOperations } from '../transactions/transaction';
import type { Collection } from './collection';

interface Touched {
  /** The document as of the snapshot; undefined when it did not exist then. */
  before: Document | undefined;
  /** Record id the snapshot's version had (its natural-order position), when known. */
  rid?: number;
  emitted: boolean;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The collection's documents as of the majority-committed snapshot, or undefined when no
 * write to it is newer than the snapshot (then the live documents are exactly that snapshot).
 *
 * The storage keeps one version of each document, so older versions are rebuilt from the
 * oplog: for every `_id` written after the snapshot, the first such entry tells what the
 * snapshot held (nothing for an insert, the entry's pre-image for an update, replace or
 * delete). Documents keep their natural (record id) order, deleted ones included. Catalog changes after the snapshot (drop, rename, index builds) are not
 * undone, and writes already truncated from the oplog cannot be undone.
 */
export function documentsAtCommittedSnapshot(
  oplog: Oplog,
  coll: Collection,
): Document[] | undefined {
  const at = oplog.committedTimestamp();
  if (!at || !oplog.committedLags) return undefined;
  return documentsAt(oplog, coll, at);
}

export function documentsAt(oplog: Oplog, coll: Collection, at: Timestamp): Document[] | undefined {
  const uuid = coll.uuid.buffer;
  const touched = new BTree<unknown, Touched>(undefined, (a, b) => compareValues(a, b));
  // A committed transaction's operations are in its last applyOps entry.
  const operations = function* (): Generator<
    Pick<OplogEntry, 'op' | 'uuid' | 'documentKey' | 'preImage' | 'rid'>
  > {
    for (const entry of oplog.entriesAfter(at)) {
      if (entry.op === 'applyOps') yield* transactionOperations(entry);
      else yield entry;
    }
  };
  for (const entry of operations()) {
    const op = entry.op;
    if (op !== 'insert' && op !== 'update' && op !== 'replace' && op !== 'delete') continue;
    if (!entry.uuid || !entry.documentKey || !sameBytes(entry.uuid.buffer, uuid)) continue;
    const id = entry.documentKey._id;
    if (touched.has(id)) continue;
    touched.set(id, {
      before: op === 'insert' ? undefined : preImageOf(entry),
      rid: op === 'insert' ? undefined : entry.rid,
      emitted: false,
    });
  }
  if (touched.size === 0) return undefined;
  // Earlier versions go back to their record id's place, even when the record is gone now.
  const placed = [...touched.values()]
    .filter((t) => t.before && t.rid !== undefined)
    .sort((a, b) => (a.rid as number) - (b.rid as number));
  let next = 0;
  const out: Document[] = [];
  const emit = (t: Touched) => {
    if (t.before && !t.emitted) out.push(t.before);
    t.emitted = true;
  };
  for (const rec of coll.naturalRecords(1)) {
    while (next < placed.length && (placed[next].rid as number) <= rec.rid) emit(placed[next++]);
    const doc = rec.doc;
    const t = touched.get(doc._id);
    if (!t) out.push(doc);
    else emit(t); // no-op when already placed; a post-snapshot insert has no earlier version
  }
  while (next < placed.length) emit(placed[next++]);
  for (const t of touched.values()) emit(t);
  return out;
}
