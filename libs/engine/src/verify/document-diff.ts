import { BSON, type Document } from 'bson';
import { pickTopLevelFields } from '../copy/pick-fields';
import { compareKeyValues } from '../shards/key-order';
import type { IdRange, SourceCluster } from '../ports/source-cluster';

/**
 * What a document comparison reads: `_id`-ordered reads of one side, as the server's bytes
 * where the side can (`readRaw`), else decoded.
 */
export type DocumentReader = Pick<SourceCluster, 'read'> & Partial<Pick<SourceCluster, 'readRaw'>>;

/** One document that differs between the two sides. */
export interface DocumentDifference {
  /** The `_id` as canonical Extended JSON (`{"$numberInt":"5"}`). */
  id: string;
  /** The `_id` itself, as decoded (exact types). */
  value: unknown;
  problem: 'differs' | 'missing on destination' | 'only on destination';
}

export interface DocumentDiff {
  /** Documents read from the source side. */
  compared: number;
  differences: DocumentDifference[];
}

export interface DiffOptions {
  range?: IdRange;
  /** Stop after this many differences (default 5). */
  maxDifferences?: number;
  uuid?: string;
  signal?: AbortSignal;
}

/** Two documents are equal when their BSON bytes are: field order and types included. */
export function bytesEqual(a: Document, b: Document): boolean {
  return rawEqual(BSON.serialize(a), BSON.serialize(b));
}

/** The same BSON bytes (documents as the server sent them). */
export function rawEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}

export function idText(id: unknown): string {
  return BSON.EJSON.stringify({ v: id }, { relaxed: false }).slice(5, -1);
}

/**
 * Merges both sides' documents of a range in `_id` order (MongoDB's order, as the servers sort
 * them) and names the documents that differ, are missing or are extra. Memory: one read batch
 * per side.
 */
export async function diffDocuments(
  source: DocumentReader,
  destination: DocumentReader,
  database: string,
  collection: string,
  options: DiffOptions = {},
): Promise<DocumentDiff> {
  const max = options.maxDifferences ?? 5;
  const read = (cluster: DocumentReader, uuid?: string) =>
    documents(cluster, database, collection, options.range ?? {}, uuid, options.signal);
  const a = read(source, options.uuid)[Symbol.asyncIterator]();
  const b = read(destination)[Symbol.asyncIterator]();
  const diff: DocumentDiff = { compared: 0, differences: [] };
  const differ = (doc: SideDocument, problem: DocumentDifference['problem']) =>
    diff.differences.push({ id: idText(doc.id), value: doc.id, problem });
  try {
    let x = await a.next();
    let y = await b.next();
    while ((!x.done || !y.done) && diff.differences.length < max) {
      const order = x.done ? 1 : y.done ? -1 : compareKeyValues(x.value.id, y.value.id);
      if (order < 0) differ(x.value, 'missing on destination');
      else if (order > 0) differ(y.value as SideDocument, 'only on destination');
      else if (!rawEqual(x.value.bytes, (y.value as SideDocument).bytes))
        differ(x.value, 'differs');
      if (order <= 0) {
        diff.compared += 1;
        x = await a.next();
      }
      if (order >= 0) y = await b.next();
    }
    return diff;
  } finally {
    await Promise.all([a.return?.(), b.return?.()]);
  }
}

/** One document of a side: its `_id` (decoded, exact types) and its BSON bytes. */
interface SideDocument {
  id: unknown;
  bytes: Uint8Array;
}

const ID_FIELD = ['_id'] as const;

/** The `_id` of a raw BSON document (exact types), nothing else decoded. */
export function rawId(bytes: Uint8Array): unknown {
  return pickTopLevelFields(bytes, ID_FIELD)._id;
}

/**
 * A side's documents in `_id` order. Read raw where the side can: the bytes are compared as
 * the server sent them and only `_id` is decoded — a full decode and re-encode of both sides
 * was most of the verifier's CPU when a range's digests differed under change load.
 */
async function* documents(
  cluster: DocumentReader,
  database: string,
  collection: string,
  range: IdRange,
  uuid: string | undefined,
  signal: AbortSignal | undefined,
): AsyncIterable<SideDocument> {
  const options = {
    range,
    batchSize: 1000,
    sortById: true,
    ...(uuid !== undefined ? { uuid } : {}),
    ...(signal ? { signal } : {}),
  };
  if (cluster.readRaw) {
    for await (const batch of cluster.readRaw(database, collection, options))
      for (const bytes of batch.documents) yield { id: rawId(bytes), bytes };
    return;
  }
  for await (const batch of cluster.read(database, collection, options))
    for (const doc of batch.documents) yield { id: doc._id, bytes: BSON.serialize(doc) };
}
