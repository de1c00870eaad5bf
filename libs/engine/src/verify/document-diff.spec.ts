import { BSON, Double, Int32, Long, type Document } from 'bson';
import { diffDocuments, type DocumentReader } from './document-diff';
import { EXACT } from '../copy/pick-fields';
import type { ReadOptions } from '../ports/source-cluster';

/** A side holding `docs` (already in `_id` order), read decoded, and raw when `raw`. */
function side(docs: Document[], raw: boolean): DocumentReader & { rawReads: number } {
  const bytes = docs.map((d) => BSON.serialize(d));
  const reader = {
    rawReads: 0,
    async *read(_db: string, _coll: string, _options: ReadOptions) {
      const documents = bytes.map((b) => BSON.deserialize(b, EXACT));
      yield { documents, sizes: bytes.map((b) => b.length), bytes: 0 };
    },
  };
  if (!raw) return reader;
  return Object.assign(reader, {
    async *readRaw(_db: string, _coll: string, _options: ReadOptions) {
      reader.rawReads += 1;
      yield { documents: bytes, bytes: 0 };
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
