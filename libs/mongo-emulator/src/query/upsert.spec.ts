import { upsertSeed } from './upsert';

describe('upsertSeed', () => {
  it('keeps equality fields, expands dotted paths and puts _id first', () => {
    expect(upsertSeed({ a: 1, 'b.c': 2, 'b.d': 3, _id: 5 })).toEqual({
      _id: 5,
      a: 1,
      b: { c: 2, d: 3 },
    });
    expect(Object.keys(upsertSeed({ a: 1, _id: 5 }))).toEqual(['_id', 'a']);
  });
  it('understands $eq, single $in and $and, and ignores other operators', () => {
    expect(
      upsertSeed({ a: { $eq: 1 }, b: { $in: [2] }, $and: [{ c: 3 }], d: { $gt: 1 }, e: /x/ }),
    ).toEqual({
      a: 1,
      b: 2,
      c: 3,
    });
    expect(upsertSeed({ $or: [{ a: 1 }, { b: 2 }] })).toEqual({});
    expect(upsertSeed({ $or: [{ a: 1 }] })).toEqual({ a: 1 });
    expect(upsertSeed({ a: { x: 1 } })).toEqual({ a: { x: 1 } });
  });
  it('rejects paths matched twice', () => {
    expect(() => upsertSeed({ _id: 1, $and: [{ _id: 2 }] })).toThrow(
      expect.objectContaining({
        code: 54,
        message: "cannot infer query fields to set, path '_id' is matched twice",
      }),
    );
    expect(() => upsertSeed({ a: 1, 'a.b': 2 })).toThrow(expect.objectContaining({ code: 54 }));
  });
});
