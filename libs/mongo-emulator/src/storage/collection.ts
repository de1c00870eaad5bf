import { randomBytes } from 'node:crypto';
import BTree from 'sorted-btree';
import { Binary, ObjectId, type Document, type Long } from 'bson';
import { decodeExact, detach, encodeOwned, ownedBytesOf } from '../bson/codec';
import { bsonTypeOf } from '../bson/compare';
import { CommandError } from '../errors';
import { compileFilter } from '../query/matcher';
import type { NewOplogEntry, UpdateDescription } from '../oplog/oplog-entry';
import type { Catalog } from './catalog';
import { Index, RID_LOW, type IndexKey } from './index';
import { StoredRecord } from './record';

export { StoredRecord, docOf } from './record';

/** Options a write carries into the oplog entry (retryable writes, migrations). */
export interface WriteOptions {
  lsid?: Document;
  txnNumber?: Long;
  fromMigrate?: boolean;
  /** `bypassDocumentValidation: true` on the command. */
  bypassValidation?: boolean;
  /**
   * Inside a multi-document transaction: the entry goes to the transaction (which writes its
   * applyOps at commit) instead of the oplog.
   */
  sink?: (entry: NewOplogEntry) => void;
}

/** Counters that tests and explain use to check a plan touched only what it should. */
export interface ScanMetrics {
  keysExamined: number;
  docsExamined: number;
}

export const ID_INDEX_SPEC: Document = { v: 2, key: { _id: 1 }, name: '_id_' };

/** A random (version 4) UUID as BSON Binary subtype 4, as mongod assigns to collections. */
export function newUuid(): Binary {
  const bytes = new Uint8Array(randomBytes(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  return new Binary(bytes, 4);
}

/**
 * One collection: documents in insertion ("natural") order keyed by a monotonically growing
 * record id, plus its indexes (`_id_` first). Every mutating method maintains the indexes,
 * the byte counts and appends the oplog entry the writer contract asks for.
 */
export class Collection {
  readonly kind = 'collection' as const;
  /** Natural order: record id → record. Record ids only grow, so this is insertion order. */
  readonly records = new BTree<number, StoredRecord>(undefined, (a, b) => a - b);
  readonly indexes: Index[] = [];
  dataSize = 0;
  readonly metrics: ScanMetrics = { keysExamined: 0, docsExamined: 0 };
  private nextRid = 1;
  /**
   * Shard key of a sharded collection (set by the emulated config server): a shard's oplog
   * documentKey then holds the shard-key fields before `_id`, as on a real shard.
   */
  shardKey?: Document;
  private validatorFn?: (doc: Document) => boolean;

  constructor(
    readonly catalog: Catalog,
    public db: string,
    public name: string,
    /** Options exactly as given to create (listed by listCollections). */
    public options: Document,
    /** Replaced on a cross-database rename (mongod copies into a new collection). */
    public uuid: Binary = newUuid(),
  ) {
    this.indexes.push(new Index({ ...ID_INDEX_SPEC }));
    this.compileValidator();
  }

  get ns(): string {
    return `${this.db}.${this.name}`;
  }

  get count(): number {
    return this.records.size;
  }

  get idIndex(): Index {
    return this.indexes[0];
  }

  get capped(): boolean {
    return Boolean(this.options.capped);
  }

  getIndex(name: string): Index | undefined {
    return this.indexes.find((i) => i.name === name);
  }

  compileValidator(): void {
    const validator = this.options.validator as Document | undefined;
    this.validatorFn =
      validator && Object.keys(validator).length
        ? compileFilter(validator, { collation: this.options.collation as Document | undefined })
        : undefined;
  }

  // ---- reads -------------------------------------------------------------------------

  /** The record with this `_id`, through the `_id_` index. */
  recordById(id: unknown): StoredRecord | undefined {
    const idx = this.idIndex;
    const found = idx.tree.getPairOrNextHigher([id, RID_LOW]);
    if (!found || idx.compareValue(found[0][0], id) !== 0) return undefined;
    return this.records.get(found[1]);
  }

  record(rid: number): StoredRecord | undefined {
    return this.records.get(rid);
  }

  /**
   * Natural-order records, streamed in chunks that re-seek after every chunk, so writes
   * between getMores never invalidate the iteration (the B-tree's own iterators are not
   * stable under modification).
   */
  *naturalRecords(direction: 1 | -1 = 1): Generator<StoredRecord> {
    const CHUNK = 256;
    let last: number | undefined;
    for (;;) {
      const chunk: StoredRecord[] = [];
      if (direction === 1) {
        const start = last === undefined ? undefined : last + 0.5;
        for (const [rid, rec] of this.records.entries(start)) {
          chunk.push(rec);
          last = rid;
          if (chunk.length >= CHUNK) break;
        }
      } else {
        const start = last === undefined ? undefined : last - 0.5;
        for (const [rid, rec] of this.records.entriesReversed(start)) {
          chunk.push(rec);
          last = rid;
          if (chunk.length >= CHUNK) break;
        }
      }
      if (chunk.length === 0) return;
      for (const rec of chunk) {
        // Re-read: the record may have been updated or deleted since the chunk was taken.
        const current = this.records.get(rec.rid);
        if (!current) continue;
        this.metrics.docsExamined++;
        yield current;
      }
      if (chunk.length < CHUNK) return;
    }
  }

  // ---- validation --------------------------------------------------------------------

  /** Applies the validator (121 DocumentValidationFailure) according to level/action. */
  validate(doc: Document, before: Document | undefined, opts: WriteOptions): void {
    if (!this.validatorFn || opts.bypassValidation) return;
    const level = (this.options.validationLevel as string | undefined) ?? 'strict';
    if (level === 'off') return;
    if (this.validatorFn(doc)) return;
    // moderate: updates to documents that already failed validation are allowed.
    if (level === 'moderate' && before !== undefined && !this.validatorFn(before)) return;
    if (((this.options.validationAction as string | undefined) ?? 'error') === 'warn') return;
    throw new CommandError('DocumentValidationFailure', 'Document failed validation', {
      extra: {
        errInfo: {
          failingDocumentId: doc._id,
          details: {
            operatorName: '$and',
            specifiedAs: this.options.validator,
            reason: 'expression did not match',
          },
        },
      },
    });
  }

  // ---- writes ------------------------------------------------------------------------

  /** Keys per index for a document, or throws (parallel arrays, hashed arrays). */
  private keysFor(doc: Document): IndexKey[][] {
    return this.indexes.map((idx) => idx.keysOf(doc));
  }

  /**
   * Rejects keys another record already holds in a unique index, or in one being prepared
   * for conversion (`prepareUnique`). A prepared index tolerates the duplicates it already
   * has, so only keys the write adds (not in `oldKeys`) are checked there.
   */
  private checkUnique(keys: IndexKey[][], rid: number, oldKeys?: IndexKey[][]): void {
    for (let i = 0; i < this.indexes.length; i++) {
      const idx = this.indexes[i];
      const enforced = idx.unique || idx.isIdIndex;
      if (!enforced && !idx.spec.prepareUnique) continue;
      // Entries the record already holds unchanged cannot add a duplicate.
      if (oldKeys && sameKeys(oldKeys[i], keys[i])) continue;
      for (const k of keys[i]) {
        if (!enforced && oldKeys?.[i].some((o) => idx.sameValues(o, k))) continue;
        if (idx.findDuplicate(k, rid) !== undefined) throw idx.duplicateKeyError(this.ns, k);
      }
    }
  }

  /**
   * Inserts a document whose `_id` is already in place (see prepareInsert). Appends the
   * insert entry, then evicts from a capped collection.
   */
  insert(doc: Document, opts: WriteOptions = {}): StoredRecord {
    if (!opts.sink) this.catalog.node.transactions.assertNotLocked(this, doc._id);
    this.validate(doc, undefined, opts);
    const rid = this.nextRid;
    const keys = this.keysFor(doc);
    this.checkUnique(keys, rid);
    // The record keeps the document's bytes only (the caller keeps its object); the oplog entry
    // shares them as the insert's document.
    const rec = new StoredRecord(rid, ownedBytesOf(doc));
    this.nextRid++;
    this.records.set(rid, rec);
    for (let i = 0; i < this.indexes.length; i++) this.indexes[i].add(rid, keys[i]);
    this.dataSize += rec.size;
    this.log({ op: 'insert', documentKey: { _id: doc._id }, postImage: rec.bytes, rid }, opts, doc);
    if (this.capped) this.evictCapped(opts);
    return rec;
  }

  /**
   * Replaces a record's document (update or replacement). `_id` must be unchanged (callers
   * check ImmutableField). Appends an update or replace entry with pre- and post-images.
   */
  replace(
    rec: StoredRecord,
    after: Document,
    kind: 'update' | 'replace',
    updateDescription: UpdateDescription | undefined,
    opts: WriteOptions = {},
  ): StoredRecord {
    const before = rec.doc;
    if (!opts.sink) this.catalog.node.transactions.assertNotLocked(this, before._id);
    this.validate(after, before, opts);
    const oldKeys = this.keysFor(before);
    const newKeys = this.keysFor(after);
    this.checkUnique(newKeys, rec.rid, oldKeys);
    // The post-image is encoded once: it is the new record's bytes and the oplog entry's
    // post-image, and becomes the pre-image of the record's next update or delete. The old
    // record's bytes are this entry's pre-image (shared, not copied).
    const postImage = encodeOwned(after);
    const preImage = rec.bytes;
    for (let i = 0; i < this.indexes.length; i++) {
      if (sameKeys(oldKeys[i], newKeys[i])) continue; // e.g. `_id_` on every update
      this.indexes[i].remove(rec.rid, oldKeys[i]);
      this.indexes[i].add(rec.rid, newKeys[i]);
    }
    const next = new StoredRecord(rec.rid, postImage);
    this.dataSize += next.size - rec.size;
    this.records.set(rec.rid, next);
    const entry: Omit<NewOplogEntry, 'db'> =
      kind === 'update'
        ? {
            op: 'update',
            documentKey: { _id: after._id },
            updateDescription,
            postImage,
            preImage,
            rid: rec.rid,
          }
        : { op: 'replace', documentKey: { _id: after._id }, postImage, preImage, rid: rec.rid };
    this.log(entry, opts, after);
    return next;
  }

  delete(rec: StoredRecord, opts: WriteOptions = {}): void {
    const current = this.records.get(rec.rid);
    if (!current) return;
    const doc = current.doc;
    if (!opts.sink) this.catalog.node.transactions.assertNotLocked(this, doc._id);
    const keys = this.keysFor(doc);
    for (let i = 0; i < this.indexes.length; i++) this.indexes[i].remove(rec.rid, keys[i]);
    this.records.delete(rec.rid);
    this.dataSize -= current.size;
    this.log(
      { op: 'delete', documentKey: { _id: doc._id }, preImage: current.bytes, rid: current.rid },
      opts,
      doc,
    );
  }

  private evictCapped(opts: WriteOptions): void {
    const maxSize = this.options.size !== undefined ? Number(this.options.size) : Infinity;
    const maxDocs =
      this.options.max !== undefined && Number(this.options.max) > 0
        ? Number(this.options.max)
        : Infinity;
    while (this.records.size > 1 && (this.dataSize > maxSize || this.records.size > maxDocs)) {
      const oldest = this.records.minKey();
      if (oldest === undefined) break;
      // Capped deletes are replicated as ordinary deletes (explicit oplog entries since 6.0).
      this.delete(this.records.get(oldest)!, { fromMigrate: opts.fromMigrate });
    }
  }

  /** Removes every document without logging (used by drop/rename bookkeeping). */
  truncate(): void {
    this.records.clear();
    for (const idx of this.indexes) idx.clear();
    this.dataSize = 0;
  }

  /**
   * Builds a new index over existing documents. Fails without side effects on a duplicate
   * (11000) or an unindexable document.
   */
  buildIndex(idx: Index): void {
    const built: Array<[number, IndexKey[]]> = [];
    for (const rec of this.records.values()) {
      const keys = idx.keysOf(decodeExact(rec.bytes));
      built.push([rec.rid, keys]);
    }
    try {
      for (const [rid, keys] of built) {
        if (idx.unique) {
          for (const k of keys)
            if (idx.findDuplicate(k, rid) !== undefined) throw idx.duplicateKeyError(this.ns, k);
        }
        idx.add(rid, keys);
      }
    } catch (err) {
      idx.clear();
      throw err;
    }
    this.indexes.push(idx);
  }

  /** Total key bytes over all indexes (estimated: keys are not stored as BSON). */
  get totalIndexSize(): number {
    return this.indexes.reduce((s, i) => s + this.indexSize(i), 0);
  }

  indexSize(idx: Index): number {
    return Math.max(4096, idx.bytes + idx.tree.size * 8);
  }

  /** `doc` is the written document (the post-image, or the deleted one) for a shard key. */
  private log(entry: Omit<NewOplogEntry, 'db'>, opts: WriteOptions, doc?: Document): void {
    // Mutate rather than spread: this runs once per written document on the bulk-load path.
    const full = entry as NewOplogEntry;
    full.db = this.db;
    full.coll = this.name;
    full.uuid = this.uuid;
    if (opts.lsid) full.lsid = opts.lsid;
    if (opts.txnNumber) full.txnNumber = opts.txnNumber;
    if (opts.fromMigrate) full.fromMigrate = true;
    if (this.shardKey && full.documentKey) full.documentKey = this.shardDocumentKey(full, doc);
    // The entry outlives the command: values taken from the decoded command (an `_id`, a `$set`
    // value) must not be views of its message buffer.
    if (full.documentKey) full.documentKey = detach(full.documentKey);
    if (full.updateDescription) full.updateDescription = detach(full.updateDescription);
    if (opts.sink) opts.sink(full);
    else this.catalog.node.oplog.append(full);
  }

  /** `{<shard key fields>..., _id}` from the written document (missing fields are left out). */
  private shardDocumentKey(entry: NewOplogEntry, written?: Document): Document {
    const image = entry.postImage ?? entry.preImage;
    const doc: Document | undefined = written ?? (image && decodeExact(image));
    const key: Document = {};
    for (const field of Object.keys(this.shardKey!)) {
      if (field === '_id') continue;
      let cur: unknown = doc;
      for (const part of field.split('.')) {
        cur = cur && typeof cur === 'object' ? (cur as Document)[part] : undefined;
      }
      if (cur !== undefined) key[field] = cur;
    }
    key._id = entry.documentKey!._id;
    return key;
  }
}

/**
 * Puts `_id` first (generating an ObjectId when missing), as mongod stores inserted
 * documents, and rejects `_id` values MongoDB refuses.
 */
export function prepareInsert(doc: Document): Document {
  let out = doc;
  if (!('_id' in doc)) {
    out = { _id: new ObjectId(), ...doc };
  } else if (Object.keys(doc)[0] !== '_id') {
    const { _id, ...rest } = doc;
    out = { _id, ...rest };
  }
  checkIdValue(out._id);
  return out;
}

export function checkIdValue(id: unknown): void {
  // Fast path for the common _id types.
  if (typeof id === 'string' || typeof id === 'number') return;
  if ((id as { _bsontype?: string } | null)?._bsontype === 'ObjectId') return;
  const t = bsonTypeOf(id);
  if (t === 'array')
    throw new CommandError('InvalidIdField', `The '_id' value cannot be of type array`);
  if (t === 'regex')
    throw new CommandError('InvalidIdField', `The '_id' value cannot be of type regex`);
  if (t === 'undefined')
    throw new CommandError('InvalidIdField', `The '_id' value cannot be of type undefined`);
}

/**
 * True when two key lists hold the very same values (same references or equal primitives), so
 * the index entries would be removed and re-added unchanged. Values that merely compare equal
 * (1 and 1.0) do not count: the stored key keeps its own type.
 */
function sameKeys(a: IndexKey[], b: IndexKey[]): boolean {
  if (a.length !== b.length) return false;
  for (let j = 0; j < a.length; j++) {
    const x = a[j];
    const y = b[j];
    if (x.length !== y.length) return false;
    for (let k = 0; k < x.length; k++) if (!sameKeyValue(x[k], y[k])) return false;
  }
  return true;
}

/**
 * The same value of the same BSON type: the same reference or primitive, or two decodings of
 * one stored value (documents are decoded afresh from their bytes, so an unchanged `_id` of the
 * old and the new version are different ObjectId/Long objects).
 */
function sameKeyValue(x: unknown, y: unknown): boolean {
  if (Object.is(x, y)) return true;
  if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
  if (x instanceof Date) return y instanceof Date && Object.is(x.getTime(), y.getTime());
  const tag = (x as { _bsontype?: string })._bsontype;
  if (tag === undefined || tag !== (y as { _bsontype?: string })._bsontype) return false;
  switch (tag) {
    case 'ObjectId':
      return (x as ObjectId).equals(y as ObjectId);
    case 'Long': {
      const a = x as Long;
      const b = y as Long;
      return a.high === b.high && a.low === b.low && a.unsigned === b.unsigned;
    }
    case 'Int32':
    case 'Double':
      return Object.is((x as { value: number }).value, (y as { value: number }).value);
    default:
      return false;
  }
}
