import { BSON, type Document } from 'bson';
import { pickTopLevelFields } from '../copy/pick-fields';
import { compareKeyValues } from '../shards/key-order';
import type { IdRange, ReadOptions, SourceCluster } from '../ports/source-cluster';

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
 * them) and names the documents that differ, are missing or are extra, stopping at
 * `maxDifferences`. Memory: two read batches per side (see `compareRange`).
 */
export async function diffDocuments(
  source: DocumentReader,
  destination: DocumentReader,
  database: string,
  collection: string,
  options: DiffOptions = {},
): Promise<DocumentDiff> {
  const result = await mergeSides(source, destination, database, collection, {
    ...options,
    maxDifferences: options.maxDifferences ?? 5,
    toEnd: false,
  });
  return { compared: result.source, differences: result.differences };
}

export interface RangeComparison {
  /** Documents of the range on each side. */
  source: number;
  destination: number;
  /** The first `maxDifferences` documents that differ, in `_id` order. */
  differences: DocumentDifference[];
  /** Every differing document is in `differences` (there were no more). */
  complete: boolean;
}

/**
 * The verifier's comparison of one range, in ONE read of each side: both sides' documents
 * merged in `_id` order to the end of the range, counted, and compared byte for byte, listing
 * the first `maxDifferences` that differ. Equal bytes mean the same `_id`, so only a pair that
 * differs is decoded (its `_id`s, to tell a changed document from a missing one). Cheaper than
 * hashing each side (a byte comparison instead of SHA-256 over every document), and a range
 * that differs is not read a second time to name its documents. Memory: two batches per side
 * (the one compared, the next one read meanwhile).
 */
export function compareRange(
  source: DocumentReader,
  destination: DocumentReader,
  database: string,
  collection: string,
  options: DiffOptions & { batchSize?: number },
): Promise<RangeComparison> {
  return mergeSides(source, destination, database, collection, {
    ...options,
    maxDifferences: options.maxDifferences ?? 5,
    toEnd: true,
  });
}

/**
 * One merge of both sides in `_id` order. `toEnd`: read both sides to the end of the range
 * (counting every document, listing the first `maxDifferences`); else stop at the
 * `maxDifferences`-th difference.
 */
async function mergeSides(
  source: DocumentReader,
  destination: DocumentReader,
  database: string,
  collection: string,
  options: DiffOptions & { batchSize?: number; maxDifferences: number; toEnd: boolean },
): Promise<RangeComparison> {
  const max = options.maxDifferences;
  const read = (cluster: DocumentReader, uuid?: string) =>
    new SideCursor(
      batches(cluster, database, collection, options.range ?? {}, {
        batchSize: options.batchSize ?? 1000,
        ...(uuid !== undefined ? { uuid } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      }),
    );
  const a = read(source, options.uuid);
  const b = read(destination);
  const result: RangeComparison = { source: 0, destination: 0, differences: [], complete: true };
  let found = 0;
  const differ = (id: unknown, problem: DocumentDifference['problem']): boolean => {
    found += 1;
    if (result.differences.length < max)
      result.differences.push({ id: idText(id), value: id, problem });
    else result.complete = false;
    return options.toEnd || found < max;
  };
  try {
    await Promise.all([a.fill(), b.fill()]);
    for (;;) {
      const x = a.current();
      const y = b.current();
      if (!x && !y) break;
      let order: number;
      let go = true;
      if (x && y && rawEqual(x, y)) order = 0;
      else {
        const xid = x && rawId(x);
        const yid = y && rawId(y);
        order = !x ? 1 : !y ? -1 : compareKeyValues(xid, yid);
        if (order < 0) go = differ(xid, 'missing on destination');
        else if (order > 0) go = differ(yid, 'only on destination');
        else go = differ(xid, 'differs');
      }
      if (order <= 0) result.source += 1;
      if (order >= 0) result.destination += 1;
      if (!go) break;
      // Awaited only at a batch's end: a promise per document cost more than the comparison.
      const nextA = order <= 0 ? a.advance() : undefined;
      const nextB = order >= 0 ? b.advance() : undefined;
      if (nextA || nextB) await Promise.all([nextA, nextB]);
    }
    // A read stopped by the signal ends early: what it did not read is not a difference.
    if (options.signal?.aborted) throw options.signal.reason ?? new Error('comparison stopped');
    return result;
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}

/**
 * A side's read, a document at a time, the next batch asked for while the current one is
 * compared (both sides' servers then work while the worker compares).
 */
class SideCursor {
  private batch: Uint8Array[] = [];
  private at = 0;
  private next: Promise<IteratorResult<Uint8Array[]>> | null = null;
  private done = false;
  private readonly iterator: AsyncIterator<Uint8Array[]>;

  constructor(source: AsyncIterable<Uint8Array[]>) {
    this.iterator = source[Symbol.asyncIterator]();
  }

  current(): Uint8Array | undefined {
    return this.batch[this.at];
  }

  /** Loads batches until one holds a document (or the read ends). */
  async fill(): Promise<void> {
    while (this.at >= this.batch.length && !this.done) {
      const step = await (this.next ?? this.iterator.next());
      this.next = null;
      if (step.done) {
        this.done = true;
        this.batch = [];
        this.at = 0;
        return;
      }
      this.batch = step.value;
      this.at = 0;
      this.next = this.iterator.next();
      // A rejected prefetch is seen when awaited, not as an unhandled rejection meanwhile.
      this.next.catch(() => undefined);
    }
  }

  advance(): Promise<void> | undefined {
    this.at += 1;
    return this.at < this.batch.length ? undefined : this.fill();
  }

  async close(): Promise<void> {
    const pending = this.next;
    this.next = null;
    if (pending) await pending.catch(() => undefined);
    await this.iterator.return?.();
  }
}

const ID_FIELD = ['_id'] as const;

/** The `_id` of a raw BSON document (exact types), nothing else decoded. */
export function rawId(bytes: Uint8Array): unknown {
  return pickTopLevelFields(bytes, ID_FIELD)._id;
}

/**
 * A side's documents in `_id` order, as BSON bytes a batch at a time. Read raw where the side
 * can: the bytes are compared as the server sent them — a full decode and re-encode of both
 * sides was most of the verifier's CPU when a range's digests differed under change load.
 */
async function* batches(
  cluster: DocumentReader,
  database: string,
  collection: string,
  range: IdRange,
  read: Pick<ReadOptions, 'batchSize' | 'uuid' | 'signal'>,
): AsyncIterable<Uint8Array[]> {
  const options: ReadOptions = { ...read, range, sortById: true };
  if (cluster.readRaw) {
    for await (const batch of cluster.readRaw(database, collection, options))
      if (batch.documents.length > 0) yield batch.documents;
    return;
  }
  for await (const batch of cluster.read(database, collection, options))
    if (batch.documents.length > 0) yield batch.documents.map((doc) => BSON.serialize(doc));
}
