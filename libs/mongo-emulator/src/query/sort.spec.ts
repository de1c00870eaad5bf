import { Double, Int32, Long } from 'bson';
import type { Document } from 'bson';
import { compileSort, parseSortSpec, sortKey } from './sort';

const order = (docs: Document[], spec: Document, collation?: Document) =>
  [...docs].sort(compileSort(spec, { collation })).map((d) => d._id);

describe('compileSort', () => {
  it('orders numbers of mixed BSON types by value', () => {
    const docs = [
      { _id: 1, a: new Double(2.5) },
      { _id: 2, a: Long.fromNumber(1) },
      { _id: 3, a: new Int32(3) },
    ];
    expect(order(docs, { a: 1 })).toEqual([2, 1, 3]);
    expect(order(docs, { a: -1 })).toEqual([3, 1, 2]);
  });
  it('sorts missing as null and across types by canonical order', () => {
    const docs = [
      { _id: 1, a: 'x' },
      { _id: 2 },
      { _id: 3, a: 5 },
      { _id: 4, a: null },
      { _id: 5, a: {} },
    ];
    expect(order(docs, { a: 1 })).toEqual([2, 4, 3, 1, 5]);
  });
  it('uses the min element ascending and max element descending', () => {
    const docs = [
      { _id: 1, a: [1, 10] },
      { _id: 2, a: [5] },
      { _id: 3, a: 7 },
    ];
    expect(order(docs, { a: 1 })).toEqual([1, 2, 3]);
    expect(order(docs, { a: -1 })).toEqual([1, 3, 2]);
  });
  it('sorts an empty array below null', () => {
    const docs = [
      { _id: 1, a: null },
      { _id: 2, a: [] },
      { _id: 3, a: 0 },
    ];
    expect(order(docs, { a: 1 })).toEqual([2, 1, 3]);
  });
  it('handles compound keys and dotted paths through arrays', () => {
    const docs = [
      { _id: 1, a: 1, b: { c: 2 } },
      { _id: 2, a: 1, b: { c: 1 } },
      { _id: 3, a: 0, b: [{ c: 9 }, { c: 0 }] },
    ];
    expect(order(docs, { a: 1, 'b.c': -1 })).toEqual([3, 1, 2]);
    expect(order(docs, { 'b.c': 1 })).toEqual([3, 2, 1]);
    expect(sortKey(docs[2], { a: 1, 'b.c': -1 })).toEqual([0, 9]);
  });
  it('applies a collation to strings', () => {
    const docs = [
      { _id: 1, s: 'b' },
      { _id: 2, s: 'B' },
      { _id: 3, s: 'a' },
    ];
    expect(order(docs, { s: 1 })).toEqual([2, 3, 1]);
    expect(order(docs, { s: 1 }, { locale: 'en', strength: 2 })).toEqual([3, 1, 2]);
  });
  it('rejects bad specifications', () => {
    expect(() => parseSortSpec({ a: 2 })).toThrow(/must be 1 \(for ascending\) or -1/);
    expect(() => parseSortSpec({ a: 'asc' })).toThrow(expect.objectContaining({ code: 15975 }));
    expect(parseSortSpec({ s: { $meta: 'textScore' } })).toEqual([{ path: 's', direction: 0 }]);
  });
});
