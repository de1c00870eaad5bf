import {
  BSON,
  Binary,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
  type Document,
  type MongoClient,
} from 'mongodb';
import { rng } from '../lib/sample-data';

/** What the generator produces: `documents` spread round-robin over `collections`. */
export interface DatasetSpec {
  database: string;
  collections: number;
  /** Total documents at 1×. */
  documents: number;
  /** Approximate serialized size of one document, in bytes. */
  documentBytes: number;
}

export interface LoadResult {
  documents: number;
  bytes: number;
  seconds: number;
}

export const collectionName = (k: number): string => `c${k}`;

/** Collection of document number `i` (round-robin, so every collection grows alike). */
export const collectionOf = (spec: DatasetSpec, i: number): number => i % spec.collections;

const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];
const FIXED_OVERHEAD = 490; // bytes of the fixed fields below, measured once with BSON.serialize

/**
 * Document number `i`: deterministic (same `i` → same BSON bytes, so the raw-write measurement
 * inserts exactly the documents the worker copies), ~`documentBytes` long, with most BSON types:
 * Int32/Int64/Double/Decimal128, ObjectId, Date, Timestamp, Binary (two subtypes), Regex,
 * MinKey/MaxKey, booleans, null, nested documents and arrays. `_id` is an Int64 so ids never
 * collide across collections or with the change load's range.
 */
export function makeDocument(i: number, documentBytes: number): Document {
  const r = rng(i * 2654435761);
  const padLength = Math.max(0, documentBytes - FIXED_OVERHEAD);
  const seconds = 1_600_000_000 + (i % 100_000_000);
  return {
    _id: Long.fromNumber(i),
    seq: new Int32(i % 2_000_000_000),
    ratio: new Double(r()),
    amount: Decimal128.fromString(`${Math.floor(r() * 1e6)}.${String(i % 100).padStart(2, '0')}`),
    owner: ObjectId.createFromTime(seconds),
    createdAt: new Date(seconds * 1000),
    clock: new Timestamp({ t: seconds, i: (i % 1000) + 1 }),
    flags: { active: r() > 0.3, archived: null, level: new Int32(Math.floor(r() * 10)) },
    tags: [WORDS[i % WORDS.length], WORDS[(i * 7) % WORDS.length], new Int32(i % 13)],
    matrix: [
      [new Double(r()), new Double(r())],
      [Long.fromNumber(i * 3), new Int32(i % 7)],
    ],
    address: {
      street: `${i % 997} ${WORDS[(i * 3) % WORDS.length]} street`,
      zip: String(10_000 + (i % 89_999)),
      geo: { lat: new Double(r() * 180 - 90), lng: new Double(r() * 360 - 180) },
    },
    pattern: new BSON.BSONRegExp(`^${WORDS[i % WORDS.length]}\\d+$`, 'i'),
    uuid: new Binary(Buffer.from(uuidBytes(i)), Binary.SUBTYPE_UUID),
    bounds: { low: new MinKey(), high: new MaxKey() },
    blob: new Binary(Buffer.alloc(Math.floor(padLength / 2), i % 251), Binary.SUBTYPE_DEFAULT),
    text: 'x'.repeat(padLength - Math.floor(padLength / 2)),
  };
}

function uuidBytes(i: number): Uint8Array {
  const out = new Uint8Array(16);
  for (let k = 0; k < 16; k++) out[k] = (i * 31 + k * 17) & 0xff;
  return out;
}

/**
 * Batches of documents `[from, to)` for one collection each: documents go in ascending
 * order, grouped per collection, `batchSize` at a time. `exactSizes` adds each batch's
 * serialized size (a second serialization: kept out of timed writes; `BSON.calculateObjectSize`
 * is not used because bson 6 over-counts Int32 values by 12 bytes each).
 */
export function* batchesOf(
  spec: DatasetSpec,
  from: number,
  to: number,
  batchSize: number,
  exactSizes = false,
): Generator<{ collection: string; documents: Document[]; bytes: number }> {
  const pending: Document[][] = Array.from({ length: spec.collections }, () => []);
  const pendingBytes = new Array<number>(spec.collections).fill(0);
  for (let i = from; i < to; i++) {
    const k = collectionOf(spec, i);
    const doc = makeDocument(i, spec.documentBytes);
    pending[k]!.push(doc);
    if (exactSizes) pendingBytes[k]! += BSON.serialize(doc).byteLength;
    if (pending[k]!.length >= batchSize) {
      yield { collection: collectionName(k), documents: pending[k]!, bytes: pendingBytes[k]! };
      pending[k] = [];
      pendingBytes[k] = 0;
    }
  }
  for (let k = 0; k < spec.collections; k++) {
    if (pending[k]!.length > 0) {
      yield { collection: collectionName(k), documents: pending[k]!, bytes: pendingBytes[k]! };
    }
  }
}

/**
 * Inserts documents `[from, to)` into `database` with `concurrency` unordered insertMany calls
 * in flight. Used to load the source and (into a scratch database) to measure raw write speed.
 */
export async function insertRange(
  client: MongoClient,
  database: string,
  spec: DatasetSpec,
  from: number,
  to: number,
  options: { batchSize: number; concurrency: number; exactSizes?: boolean },
): Promise<LoadResult> {
  const db = client.db(database);
  const batches = batchesOf(spec, from, to, options.batchSize, options.exactSizes ?? false);
  let documents = 0;
  let bytes = 0;
  const started = process.hrtime.bigint();
  const lane = async (): Promise<void> => {
    for (;;) {
      const next = batches.next();
      if (next.done) return;
      const { collection, documents: docs, bytes: size } = next.value;
      await db.collection(collection).insertMany(docs, { ordered: false });
      documents += docs.length;
      bytes += size;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, lane));
  return { documents, bytes, seconds: secondsSince(started) };
}

/**
 * Runs `work(0)` … `work(count - 1)` on up to `concurrency` lanes at once, each lane taking the
 * next index as it finishes one (items of uneven size keep every lane busy).
 */
export async function inLanes(
  count: number,
  concurrency: number,
  work: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, count)) }, lane));
}

export function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}
