import { Double, Int32 } from 'bson';
import { computeUpdateDescription } from './update-description';

const big = 'x'.repeat(100);

describe('computeUpdateDescription', () => {
  it('reports changed, added and removed top-level fields', () => {
    const d = computeUpdateDescription({ _id: 1, a: 1, b: 2, c: 3 }, { _id: 1, a: 5, c: 3, d: 4 });
    expect(d).toEqual({ updatedFields: { a: 5, d: 4 }, removedFields: ['b'], truncatedArrays: [] });
  });
  it('treats a type change of an equal number as an update', () => {
    const d = computeUpdateDescription({ _id: 1, a: new Int32(1) }, { _id: 1, a: new Double(1) });
    expect(Object.keys(d.updatedFields)).toEqual(['a']);
  });
  it('uses dotted paths inside subdocuments when the sub-diff is smaller', () => {
    const d = computeUpdateDescription(
      { _id: 1, s: { keep: big, x: 1, gone: 1 } },
      { _id: 1, s: { keep: big, x: 2 } },
    );
    expect(d).toEqual({
      updatedFields: { 's.x': 2 },
      removedFields: ['s.gone'],
      truncatedArrays: [],
    });
  });
  it('reports a small subdocument whole when its diff would not be smaller', () => {
    const d = computeUpdateDescription({ _id: 1, s: { x: 1 } }, { _id: 1, s: { y: 2 } });
    expect(d.updatedFields).toEqual({ s: { y: 2 } });
  });
  it('reports appended and changed array elements by index', () => {
    const d = computeUpdateDescription(
      { _id: 1, arr: [big, 1, 2] },
      { _id: 1, arr: [big, 1, 9, 3] },
    );
    expect(d).toEqual({
      updatedFields: { 'arr.2': 9, 'arr.3': 3 },
      removedFields: [],
      truncatedArrays: [],
    });
  });
  it('reports an array shrink as truncatedArrays plus element updates', () => {
    const d = computeUpdateDescription({ _id: 1, arr: [big, 1, 2, 3] }, { _id: 1, arr: [big, 5] });
    expect(d).toEqual({
      updatedFields: { 'arr.1': 5 },
      removedFields: [],
      truncatedArrays: [{ field: 'arr', newSize: 2 }],
    });
  });
  it('recurses into documents inside arrays', () => {
    const d = computeUpdateDescription(
      { _id: 1, arr: [{ k: big, v: 1 }] },
      { _id: 1, arr: [{ k: big, v: 2 }] },
    );
    expect(d.updatedFields).toEqual({ 'arr.0.v': 2 });
  });
  it('reports a moved field as updated', () => {
    const d = computeUpdateDescription({ _id: 1, a: 1, b: 2 }, { _id: 1, b: 2, a: 1 });
    expect(d).toEqual({ updatedFields: { a: 1 }, removedFields: [], truncatedArrays: [] });
  });
});
