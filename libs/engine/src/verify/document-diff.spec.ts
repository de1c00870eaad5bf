import { BSON, Double, Int32, Long, type Document } from 'bson';
import { compareRange, diffDocuments, type DocumentReader } from './document-diff';
import { EXACT } from '../copy/pick-fields';
import type { ReadOptions } from '../ports/source-cluster';

/**
 * A side holding `docs` (already in `_id` order), read decoded, and raw when `raw`, in batches
 * of `options.batchSize`; `failAt`: the read throws at that batch.
 */
function side(
  docs: Document[],
  raw: boolean,
  failAt = Infinity,
): DocumentReader & { rawReads: number; batchesServed: number; closed: number } {
  const bytes = docs.map((d) => BSON.serialize(d));
  const reader = {
    rawReads: 0,
    batchesServed: 0,
    closed: 0,
    async *raw(options: ReadOptions) {
      try {
        for (let i = 0; i < bytes.length; i += options.batchSize) {
          if (reader.batchesServed === failAt) throw new Error('connection reset');
          reader.batchesServed += 1;
          yield bytes.slice(i, i + options.batchSize);
        }
      } finally {
        reader.closed += 1;
      }
    },
    async *read(_db: string, _coll: string, options: ReadOptions) {
      for await (const batch of reader.raw(options)) {
        const documents = batch.map((b) => BSON.deserialize(b, EXACT));
        yield { documents, sizes: batch.map((b) => b.length), bytes: 0 };
      }
    },
  };
  if (!raw) return reader;
  return Object.assign(reader, {
    async *readRaw(_db: string, _coll: string, options: ReadOptions) {
      reader.rawReads += 1;
      for await (const documents of reader.raw(options)) yield { documents, bytes: 0 };
    },
  });
}

const SOURCE = [
  { _id: new Int32(1), a: 1 },
  { _id: new Int32(2), a: new Int32(5) },
  { _id: new Int32(3), a: 1, b: 2 },
  { _id: new Int32(4), x: 'only on the source' },
  { _id: new Int32(6), a: new Long(7) },
];
const DESTINATION = [
  { _id: new Int32(1), a: 1 },
  // The same value as another BSON type, and the same fields in another order.
  { _id: new Int32(2), a: new Double(5) },
  { _id: new Int32(3), b: 2, a: 1 },
  { _id: new Int32(5), x: 'only on the destination' },
  { _id: new Int32(6), a: new Long(7) },
];

describe('diffDocuments', () => {
  it.each([
    ['as the servers sent them (readRaw)', true],
    ['decoded, where a side cannot read raw', false],
  ])(
    'names documents that differ by type or field order, are missing or extra — %s',
    async (_how, raw) => {
      const source = side(SOURCE, raw);
      const destination = side(DESTINATION, raw);
      const diff = await diffDocuments(source, destination, 'd', 'c', { maxDifferences: 10 });
      expect(diff.compared).toBe(5);
      expect(diff.differences).toEqual([
        { id: '{"$numberInt":"2"}', value: new Int32(2), problem: 'differs' },
        { id: '{"$numberInt":"3"}', value: new Int32(3), problem: 'differs' },
        { id: '{"$numberInt":"4"}', value: new Int32(4), problem: 'missing on destination' },
        { id: '{"$numberInt":"5"}', value: new Int32(5), problem: 'only on destination' },
      ]);
      expect(source.rawReads).toBe(raw ? 1 : 0);
    },
  );

  it('stops at maxDifferences', async () => {
    const diff = await diffDocuments(side(SOURCE, true), side(DESTINATION, true), 'd', 'c', {
      maxDifferences: 1,
    });
    expect(diff.differences.map((d) => d.id)).toEqual(['{"$numberInt":"2"}']);
  });
});

describe('compareRange', () => {
  /** `_id`s 0..n-1, each `{_id, v}` as Int32s. */
  const docs = (n: number, v = 0) =>
    Array.from({ length: n }, (_, i) => ({ _id: new Int32(i), v: new Int32(v) }));

  it.each([
    ['raw', true],
    ['decoded', false],
  ])(
    'reads each side once to the end, counts both, lists the first differences (%s)',
    async (_how, raw) => {
      const source = side(SOURCE, raw);
      const destination = side(DESTINATION, raw);
      const result = await compareRange(source, destination, 'd', 'c', {
        maxDifferences: 2,
        batchSize: 2,
      });
      expect(result).toEqual({
        source: 5,
        destination: 5,
        differences: [
          { id: '{"$numberInt":"2"}', value: new Int32(2), problem: 'differs' },
          { id: '{"$numberInt":"3"}', value: new Int32(3), problem: 'differs' },
        ],
        // Two more differ (4 missing, 5 extra): not all are listed.
        complete: false,
      });
      // Every batch of both sides was read, once.
      expect([source.batchesServed, destination.batchesServed]).toEqual([3, 3]);
      expect([source.rawReads, destination.rawReads]).toEqual(raw ? [1, 1] : [0, 0]);
    },
  );

  it('equal ranges: every document counted, none listed, across batch boundaries', async () => {
    const result = await compareRange(side(docs(1001), true), side(docs(1001), true), 'd', 'c', {
      batchSize: 7,
    });
    expect(result).toEqual({ source: 1001, destination: 1001, differences: [], complete: true });
  });

  it('a side that ends early: the rest of the other side is missing, counted to the end', async () => {
    const result = await compareRange(side(docs(10), true), side(docs(4), true), 'd', 'c', {
      maxDifferences: 100,
      batchSize: 3,
    });
    expect(result.source).toBe(10);
    expect(result.destination).toBe(4);
    expect(result.complete).toBe(true);
    expect(result.differences.map((d) => [d.id, d.problem])).toEqual(
      [4, 5, 6, 7, 8, 9].map((i) => [`{"$numberInt":"${i}"}`, 'missing on destination']),
    );
  });

  it('the same _id value as another BSON type is a changed document, not two', async () => {
    const result = await compareRange(
      side([{ _id: new Int32(1) }], true),
      side([{ _id: new Double(1) }], true),
      'd',
      'c',
      {},
    );
    expect(result.differences.map((d) => d.problem)).toEqual(['differs']);
    expect([result.source, result.destination]).toEqual([1, 1]);
  });

  it('a failed read rejects the comparison and closes both reads', async () => {
    const source = side(docs(10), true);
    const destination = side(docs(10), true, 2);
    await expect(compareRange(source, destination, 'd', 'c', { batchSize: 2 })).rejects.toThrow(
      'connection reset',
    );
    expect([source.closed, destination.closed]).toEqual([1, 1]);
  });
});
