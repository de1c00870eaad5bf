import { Decimal128, Double, Int32, Long, Timestamp } from 'bson';
import type { Document } from 'bson';
import { bsonTypeOf } from '../bson/compare';
import { applyUpdate, type UpdateOptions } from './update';
import { computeUpdateDescription } from './update-description';

const up = (doc: Document, update: Document | Document[], options?: UpdateOptions) =>
  applyUpdate(doc, update, options);
const err = (fn: () => unknown) => {
  try {
    fn();
  } catch (e: any) {
    return [e.code, e.message];
  }
  return undefined;
};

describe('applyUpdate: field modifiers', () => {
  it('$set creates intermediate documents, appends new fields sorted, never mutates input', () => {
    const doc = { _id: 1, m: 1 };
    const r = up(doc, { $set: { z: 1, 'b.c': 2, a: 3 } });
    expect(Object.keys(r.doc)).toEqual(['_id', 'm', 'a', 'b', 'z']);
    expect(r.doc.b).toEqual({ c: 2 });
    expect(doc).toEqual({ _id: 1, m: 1 });
    expect(r.changed).toBe(true);
  });
  it('$set of an identical value is a no-op, a different type is not', () => {
    expect(up({ _id: 1, a: new Int32(1) }, { $set: { a: new Int32(1) } }).changed).toBe(false);
    expect(up({ _id: 1, a: new Int32(1) }, { $set: { a: new Double(1) } }).changed).toBe(true);
  });
  it('pads arrays with null and processes numeric components numerically', () => {
    const r = up({ _id: 1, a: [0] }, { $set: { 'a.3': 3 } });
    expect(r.doc.a).toEqual([0, null, null, 3]);
    const e = err(() => up({ _id: 1, a: 1 }, { $set: { 'a.b': 1 } }));
    expect(e).toEqual([28, "Cannot create field 'b' in element {a: 1}"]);
  });
  it('$unset removes fields and nulls array elements', () => {
    expect(up({ _id: 1, a: 1, b: 2 }, { $unset: { a: '' } }).doc).toEqual({ _id: 1, b: 2 });
    expect(up({ _id: 1, a: [1, 2] }, { $unset: { 'a.0': 1 } }).doc.a).toEqual([null, 2]);
    expect(up({ _id: 1 }, { $unset: { x: 1 } }).changed).toBe(false);
  });
  it('$inc/$mul keep MongoDB numeric types', () => {
    const t = (a: unknown, op: string, b: unknown) => {
      const v = up({ _id: 1, a }, { [op]: { a: b } }).doc.a;
      return [bsonTypeOf(v), String(v.valueOf?.() ?? v)];
    };
    expect(t(new Int32(1), '$inc', new Int32(2))).toEqual(['int', '3']);
    expect(t(new Int32(2147483647), '$inc', new Int32(1))).toEqual(['long', '2147483648']);
    expect(t(new Int32(1), '$inc', Long.fromNumber(1))).toEqual(['long', '2']);
    expect(t(Long.fromNumber(1), '$inc', new Double(0.5))).toEqual(['double', '1.5']);
    expect(
      bsonTypeOf(
        up({ _id: 1, a: new Int32(1) }, { $inc: { a: Decimal128.fromString('1.5') } }).doc.a,
      ),
    ).toBe('decimal');
    expect(
      String(up({ _id: 1, a: new Int32(1) }, { $inc: { a: Decimal128.fromString('1.5') } }).doc.a),
    ).toBe('2.5');
    expect(t(new Int32(3), '$mul', new Int32(4))).toEqual(['int', '12']);
    expect(bsonTypeOf(up({ _id: 1 }, { $mul: { a: Long.fromNumber(5) } }).doc.a)).toBe('long');
    expect(up({ _id: 1, a: new Int32(1) }, { $inc: { a: new Int32(0) } }).changed).toBe(false);
    expect(up({ _id: 1, a: new Int32(1) }, { $inc: { a: new Double(0) } }).changed).toBe(true);
  });
  it('$inc errors match mongod', () => {
    expect(err(() => up({ _id: 1, a: 'x' }, { $inc: { a: 1 } }))).toEqual([
      14,
      "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type string",
    ]);
    expect(err(() => up({ _id: 1, a: Long.MAX_VALUE }, { $inc: { a: 1 } }))).toEqual([
      2,
      'Failed to apply $inc operations to current value ((NumberLong)9223372036854775807) for document {_id: 1}',
    ]);
    expect(err(() => up({ _id: 1 }, { $inc: { a: 'x' } }))?.[0]).toBe(14);
  });
  it('$min/$max/$currentDate/$bit/$rename/$setOnInsert', () => {
    expect(up({ _id: 1, a: 5 }, { $min: { a: 3 } }).doc.a).toBe(3);
    expect(up({ _id: 1, a: 5 }, { $max: { a: 3 } }).changed).toBe(false);
    const now = new Date(1000);
    const ts = new Timestamp({ t: 1, i: 1 });
    const r = up(
      { _id: 1 },
      { $currentDate: { d: true, t: { $type: 'timestamp' } } },
      { now, timestamp: ts },
    );
    expect(r.doc).toEqual({ _id: 1, d: now, t: ts });
    const b = up({ _id: 1, a: new Int32(12) }, { $bit: { a: { and: new Int32(10) } } }).doc.a;
    expect([bsonTypeOf(b), b.valueOf()]).toEqual(['int', 8]);
    expect(up({ _id: 1, a: 1, b: 2 }, { $rename: { a: 'c' } }).doc).toEqual({ _id: 1, b: 2, c: 1 });
    expect(up({ _id: 1 }, { $setOnInsert: { a: 1 } }).changed).toBe(false);
    expect(up({}, { $setOnInsert: { a: 1 } }, { isUpsert: true }).doc).toEqual({ a: 1 });
  });
});

describe('applyUpdate: arrays', () => {
  it('$push with $each/$position/$sort/$slice', () => {
    expect(up({ _id: 1 }, { $push: { a: 1 } }).doc.a).toEqual([1]);
    const r = up({ _id: 1, a: [5, 1] }, { $push: { a: { $each: [3, 9], $sort: 1, $slice: 3 } } });
    expect(r.doc.a).toEqual([1, 3, 5]);
    expect(up({ _id: 1, a: [1, 2] }, { $push: { a: { $each: [0], $position: 0 } } }).doc.a).toEqual(
      [0, 1, 2],
    );
    const s = up(
      { _id: 1, a: [{ x: 2 }, { x: 1 }] },
      { $push: { a: { $each: [], $sort: { x: 1 } } } },
    );
    expect(s.doc.a).toEqual([{ x: 1 }, { x: 2 }]);
    expect(err(() => up({ _id: 1, a: 1 }, { $push: { a: 1 } }))?.[1]).toBe(
      "The field 'a' must be an array but is of type int in document {_id: 1}",
    );
  });
  it('$addToSet, $pop, $pull, $pullAll', () => {
    expect(up({ _id: 1, a: [1] }, { $addToSet: { a: new Double(1) } }).changed).toBe(false);
    expect(up({ _id: 1, a: [1] }, { $addToSet: { a: { $each: [2, 1, 3] } } }).doc.a).toEqual([
      1, 2, 3,
    ]);
    expect(up({ _id: 1, a: [1, 2, 3] }, { $pop: { a: -1 } }).doc.a).toEqual([2, 3]);
    expect(up({ _id: 1, a: [1, 5, 8] }, { $pull: { a: { $gte: 5 } } }).doc.a).toEqual([1]);
    expect(up({ _id: 1, a: [{ x: 1, y: 1 }, { x: 2 }] }, { $pull: { a: { x: 1 } } }).doc.a).toEqual(
      [{ x: 2 }],
    );
    expect(up({ _id: 1, a: ['ab', 'cd'] }, { $pull: { a: /^a/ } }).doc.a).toEqual(['cd']);
    expect(up({ _id: 1, a: [1, 2, 1] }, { $pullAll: { a: [1] } }).doc.a).toEqual([2]);
  });
  it('positional $, $[] and $[id] with arrayFilters', () => {
    const doc = { _id: 1, a: [{ v: 1 }, { v: 5 }, { v: 7 }] };
    expect(up(doc, { $set: { 'a.$.v': 0 } }, { query: { 'a.v': { $gt: 4 } } }).doc.a[1]).toEqual({
      v: 0,
    });
    expect(up(doc, { $inc: { 'a.$[].v': 1 } }).doc.a.map((e: any) => e.v.valueOf())).toEqual([
      2, 6, 8,
    ]);
    const f = up(doc, { $set: { 'a.$[e].v': 0 } }, { arrayFilters: [{ 'e.v': { $gte: 5 } }] });
    expect(f.doc.a).toEqual([{ v: 1 }, { v: 0 }, { v: 0 }]);
    expect(err(() => up(doc, { $set: { 'a.$[e].v': 0 } }))).toEqual([
      2,
      "No array filter found for identifier 'e' in path 'a.$[e].v'",
    ]);
    expect(err(() => up(doc, { $set: { 'a.$.v': 0 } }, { query: { _id: 1 } }))?.[0]).toBe(2);
  });
});

describe('applyUpdate: errors, replacement, pipeline', () => {
  it('reports conflicts, unknown modifiers and _id changes', () => {
    expect(err(() => up({ _id: 1 }, { $set: { a: 1 }, $inc: { 'a.b': 1 } }))).toEqual([
      40,
      "Updating the path 'a.b' would create a conflict at 'a'",
    ]);
    expect(err(() => up({ _id: 1 }, { $foo: { a: 1 } }))).toEqual([
      9,
      'Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update specified as an array',
    ]);
    expect(err(() => up({ _id: 1 }, { $set: { _id: 2 } }))?.[0]).toBe(66);
    expect(up({ _id: 1 }, { $set: { _id: 1 } }).changed).toBe(false);
  });
  it('replaces documents keeping _id first', () => {
    const r = up({ _id: 1, a: 1 }, { b: 2, _id: 1 });
    expect(Object.keys(r.doc)).toEqual(['_id', 'b']);
    expect(err(() => up({ _id: 1 }, { _id: 2 }))?.[0]).toBe(66);
    expect(up({ _id: 1, a: 1 }, {}).doc).toEqual({ _id: 1 });
    expect(err(() => up({ _id: 1 }, { $set: { a: 1 }, b: 1 }))?.[0]).toBe(9);
  });
  it('delegates pipelines', () => {
    const runPipeline = (d: Document) => ({ ...d, n: 1 });
    expect(up({ _id: 1 }, [{ $set: { n: 1 } }], { runPipeline })).toEqual({
      doc: { _id: 1, n: 1 },
      changed: true,
      description: { updatedFields: { n: 1 }, removedFields: [], truncatedArrays: [] },
    });
  });
  it('a pipeline output with _id elsewhere is stored with _id first, logged as output', () => {
    // mongod: PipelineExecutor diffs the original and the output; UpdateStage then stores it
    // with _id first (ensureIdFieldIsFirst).
    const runPipeline = (d: Document) => ({ status: 'new', ...d });
    const r = up({ _id: 1, n: 2 }, [{ $replaceWith: {} }], { runPipeline });
    expect(Object.keys(r.doc)).toEqual(['_id', 'status', 'n']);
    expect(r.changed).toBe(true);
    expect(r.description?.updatedFields).toEqual(
      computeUpdateDescription(
        { _id: 1, n: 2 },
        {
          status: 'new',
          _id: 1,
          n: 2,
        },
      ).updatedFields,
    );
    // Only _id moved: stored as it was.
    const moved = up({ _id: 1, n: 2 }, [{ $replaceWith: {} }], {
      runPipeline: (d: Document) => ({ n: d.n, _id: d._id }),
    });
    expect(moved.doc).toEqual({ _id: 1, n: 2 });
    expect(Object.keys(moved.doc)).toEqual(['_id', 'n']);
  });
});
