import { Long, type Document } from 'bson';
import type { Oplog } from '../../oplog/oplog';
import { decodeExact } from '../../bson/codec';
import type { NewOplogEntry, OplogEntry } from '../../oplog/oplog-entry';
import { TERM } from '../admin/hello';

/**
 * `local.oplog.rs` as a read-only view of the node's oplog, in natural (ts) order — what
 * `rs.printReplicationInfo()` / `db.getReplicationInfo()` read to find the oplog window:
 * `find({}).sort({$natural: 1}).limit(1)` for the first entry, `$natural: -1` for the last.
 *
 * Each entry carries mongod's top-level oplog fields (`op`, `ns`, `ui`, `ts`, `t`, `v`,
 * `wall`); `o` is the noop payload or, for CRUD, the document key (not the full mongod `o`).
 */
export function oplogRsDocuments(oplog: Oplog, sort: Document | undefined): Iterable<Document> {
  const direction = sort && Object.keys(sort).length ? Number(sort.$natural ?? 1) : 1;
  if (direction < 0) {
    const all = [...oplog.entriesAfter(undefined)];
    return mapEntries(all.reverse());
  }
  return mapEntries(oplog.entriesAfter(undefined));
}

function* mapEntries(entries: Iterable<OplogEntry>): Generator<Document> {
  for (const entry of entries) yield toOplogRs(entry);
}

const OP_CODES: Partial<Record<OplogEntry['op'], string>> = {
  insert: 'i',
  update: 'u',
  replace: 'u',
  delete: 'd',
  noop: 'n',
};

function toOplogRs(entry: OplogEntry): Document {
  const op = OP_CODES[entry.op] ?? 'c';
  const doc: Document = {
    op,
    // No-op notes (periodic no-ops, appendOplogNote) have an empty namespace in mongod.
    ns:
      op === 'n' && !entry.db
        ? ''
        : op === 'c' || !entry.coll
          ? `${entry.db}.$cmd`
          : `${entry.db}.${entry.coll}`,
  };
  if (entry.uuid) doc.ui = entry.uuid;
  if (entry.op === 'applyOps') {
    // A transaction: `o: {applyOps: [...], partialTxn?, count?}`, then lsid, txnNumber and the
    // previous entry of the transaction (mongod's MutableOplogEntry for an unprepared commit).
    const o: Document = {
      applyOps: (entry.applyOps ?? []).map((inner) => {
        const innerOp = OP_CODES[inner.op] ?? 'c';
        const ns = innerOp === 'c' ? `${inner.db}.$cmd` : `${inner.db}.${inner.coll}`;
        const d: Document = { op: innerOp, ns };
        if (inner.uuid) d.ui = inner.uuid;
        d.o =
          inner.op === 'insert' && inner.postImage
            ? decodeExact(inner.postImage)
            : innerOp === 'c'
              ? innerCommand(inner)
              : (inner.documentKey ?? {});
        if (innerOp === 'u') d.o2 = inner.documentKey;
        return d;
      }),
    };
    if (entry.partialTxn) o.partialTxn = true;
    if (entry.prepare) o.prepare = true;
    if (entry.count !== undefined) o.count = Long.fromNumber(entry.count);
    doc.o = o;
  } else doc.o = entry.o ?? entry.documentKey ?? {};
  doc.ts = entry.ts;
  doc.t = TERM;
  doc.v = Long.fromNumber(2);
  doc.wall = new Date(entry.wallMs);
  if (entry.fromMigrate) doc.fromMigrate = true;
  if (
    entry.op === 'applyOps' ||
    entry.op === 'commitTransaction' ||
    entry.op === 'abortTransaction'
  ) {
    doc.lsid = entry.lsid;
    doc.txnNumber = entry.txnNumber;
    doc.prevOpTime = entry.prevOpTime;
  }
  return doc;
}

/**
 * A DDL operation of a transaction (a collection it created, an index on it), as mongod logs it
 * inside applyOps: `{create: <coll>, idIndex, ...options}` / `{createIndexes: <coll>, ...spec}`.
 */
function innerCommand(inner: NewOplogEntry): Document {
  const desc = inner.operationDescription ?? {};
  if (inner.op === 'createIndexes') {
    const spec = (desc.indexes as Document[] | undefined)?.[0] ?? {};
    return { createIndexes: inner.coll, ...spec };
  }
  return { [inner.op]: inner.coll, ...desc };
}
