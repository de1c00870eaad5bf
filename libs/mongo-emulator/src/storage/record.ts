import type { Document } from 'bson';
import { decodeExact, RawDocument, rememberStoredBytes } from '../bson/codec';

/**
 * A stored document: its BSON bytes are the source of truth. A record is never changed in
 * place: a write swaps in a new record (same `rid`, new bytes), so a reader holding the old one
 * (a cursor, a snapshot read, a change-stream image) keeps seeing the version it read, and the
 * oplog can share the very bytes as its insert document or pre-/post-image.
 *
 * `doc` decodes the bytes with the exact codec (Int32/Double/Int64/Decimal128, BSONRegExp and
 * Binary keep their BSON types). Decoded documents are shared through a small cache keyed by
 * record identity, so a read path that decodes once to match and once more to return gets the
 * same object back; like the stored object the emulator used to keep, it must not be mutated.
 */
export class StoredRecord extends RawDocument {
  constructor(
    readonly rid: number,
    bytes: Uint8Array,
  ) {
    super(bytes);
  }

  /** Serialized size in bytes. */
  get size(): number {
    return this.bytes.byteLength;
  }

  /** The decoded document (shared: never mutate it). */
  get doc(): Document {
    return docOf(this);
  }
}

/**
 * Direct-mapped cache of recently decoded records: slot `rid mod CACHE_SIZE`. A read path
 * decodes a record and hands it on at once (filter → cursor, sort → cursor, update → replace),
 * so a few hundred slots are enough for the second `doc` to find the first one's decoding. A
 * slot is only valid for that very record object, so a write (new record) or another
 * collection's record with the same rid never reads a stale document. Documents over
 * LARGE_BYTES share one slot of their own, which bounds what the cache keeps alive to a few MB.
 */
const CACHE_SIZE = 256;
const LARGE_BYTES = 16 * 1024;
const cachedRecords: Array<StoredRecord | undefined> = new Array(CACHE_SIZE).fill(undefined);
const cachedDocs: Array<Document | undefined> = new Array(CACHE_SIZE).fill(undefined);
let largeRecord: StoredRecord | undefined;
let largeDoc: Document | undefined;

/** The record's document, decoded exactly (or the cached decoding of this very record). */
export function docOf(rec: StoredRecord): Document {
  if (rec.bytes.byteLength > LARGE_BYTES) {
    if (largeRecord !== rec) {
      largeDoc = decodeExact(rec.bytes);
      rememberStoredBytes(largeDoc, rec.bytes);
      largeRecord = rec;
    }
    return largeDoc!;
  }
  const slot = rec.rid & (CACHE_SIZE - 1);
  if (cachedRecords[slot] === rec) return cachedDocs[slot]!;
  const doc = decodeExact(rec.bytes);
  rememberStoredBytes(doc, rec.bytes);
  cachedRecords[slot] = rec;
  cachedDocs[slot] = doc;
  return doc;
}

/**
 * Tells the cache that `doc` is the decoding of `rec` (a sort decoded every record up front and
 * hands them out in order), so the next `docOf(rec)` does not decode again.
 */
export function rememberDoc(rec: StoredRecord, doc: Document): void {
  rememberStoredBytes(doc, rec.bytes);
  if (rec.bytes.byteLength > LARGE_BYTES) {
    largeRecord = rec;
    largeDoc = doc;
    return;
  }
  const slot = rec.rid & (CACHE_SIZE - 1);
  cachedRecords[slot] = rec;
  cachedDocs[slot] = doc;
}
