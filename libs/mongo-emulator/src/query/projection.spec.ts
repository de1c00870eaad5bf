import { Int32, type Document } from 'bson';
import { bsonTypeOf } from '../bson/compare';
import { compileProjection } from './projection';

const p = (spec: Document, doc: Document, filter?: Document) =>
  compileProjection(spec, filter)(doc);
const doc = { x: 0, _id: 1, a: 1, b: { c: 2, d: 3 }, arr: [{ c: 1, d: 1 }, 5, { c: 2 }] };

describe('compileProjection', () => {
  it('includes fields in document order with _id by default', () => {
    const r = p({ b: 1, a: 1 }, doc);
    expect(r).toEqual({ _id: 1, a: 1, b: { c: 2, d: 3 } });
    expect(Object.keys(r)).toEqual(['_id', 'a', 'b']);
    expect(p({ a: 1, _id: 0 }, doc)).toEqual({ a: 1 });
  });
  it('projects nested paths through documents and arrays', () => {
    expect(p({ 'b.c': 1, 'arr.c': 1 }, doc)).toEqual({
      _id: 1,
      b: { c: 2 },
      arr: [{ c: 1 }, { c: 2 }],
    });
    expect(p({ 'a.z': 1 }, doc)).toEqual({ _id: 1 });
  });
  it('excludes fields, nested ones included', () => {
    expect(p({ a: 0, 'b.c': 0, 'arr.d': 0 }, doc)).toEqual({
      x: 0,
      _id: 1,
      b: { d: 3 },
      arr: [{ c: 1 }, 5, { c: 2 }],
    });
    expect(p({ _id: 0 }, { _id: 1, a: 1 })).toEqual({ a: 1 });
    // {_id: 1} alone is an inclusion projection.
    expect(p({ _id: 1 }, { _id: 1, a: 1 })).toEqual({ _id: 1 });
  });
  it('rejects mixing inclusion and exclusion', () => {
    expect(() => p({ a: 1, b: 0 }, doc)).toThrow(
      expect.objectContaining({
        code: 31254,
        message: 'Cannot do exclusion on field b in inclusion projection',
      }),
    );
    expect(() => p({ a: 0, b: 1 }, doc)).toThrow(
      expect.objectContaining({
        code: 31253,
        message: 'Cannot do inclusion on field b in exclusion projection',
      }),
    );
    expect(() => p({ a: 1, 'a.b': 1 }, doc)).toThrow(expect.objectContaining({ code: 31250 }));
  });
  it('$slice works in both modes', () => {
    const d = { _id: 1, a: [1, 2, 3, 4], b: 1 };
    expect(p({ a: { $slice: 2 } }, d)).toEqual({ _id: 1, a: [1, 2], b: 1 });
    expect(p({ a: { $slice: -1 }, b: 1 }, d)).toEqual({ _id: 1, a: [4], b: 1 });
    expect(p({ a: { $slice: [1, 2] } }, d)).toEqual({ _id: 1, a: [2, 3], b: 1 });
  });
  it('$elemMatch returns the first match after the other fields', () => {
    const d = { _id: 1, arr: [{ c: 1 }, { c: 2 }, { c: 2, e: 1 }], z: 1 };
    expect(Object.entries(p({ arr: { $elemMatch: { c: 2 } }, z: 1 }, d))).toEqual([
      ['_id', 1],
      ['z', 1],
      ['arr', [{ c: 2 }]],
    ]);
    expect(p({ arr: { $elemMatch: { c: 9 } } }, d)).toEqual({ _id: 1 });
  });
  it('positional $ uses the query', () => {
    const d = { _id: 1, arr: [{ c: 1 }, { c: 2 }] };
    expect(p({ 'arr.$': 1 }, d, { 'arr.c': 2 })).toEqual({ _id: 1, arr: [{ c: 2 }] });
  });
  it('evaluates computed fields with the aggregation evaluator and ignores $meta', () => {
    const r = p(
      { a: 1, n: { $add: ['$a', new Int32(1)] }, s: { $meta: 'textScore' } },
      { _id: 1, a: new Int32(1) },
    );
    expect(Object.keys(r)).toEqual(['_id', 'a', 'n']);
    // int + int stays int in MongoDB's arithmetic.
    expect(bsonTypeOf(r.n)).toBe('int');
    expect(Number(r.n)).toBe(2);
  });
});
