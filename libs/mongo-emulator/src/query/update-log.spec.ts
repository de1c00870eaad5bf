import { Int32, Timestamp } from 'bson';
import type { Document } from 'bson';
import { applyUpdate } from './update';
import { UpdateLog } from './update-log';

const describeUpdate = (doc: Document, update: Document, options = {}) => {
  const r = applyUpdate(doc, update, options);
  return { ...r.description!, changed: r.changed, doc: r.doc };
};
const desc = (doc: Document, update: Document, options = {}) => {
  const { updatedFields, removedFields, truncatedArrays } = describeUpdate(doc, update, options);
  return { updatedFields, removedFields, truncatedArrays };
};
const upd = (updatedFields: Document, removedFields: string[] = []) => ({
  updatedFields,
  removedFields,
  truncatedArrays: [],
});

describe('modifier updateDescription (v2 log builder)', () => {
  describe('$set', () => {
    it('reports the whole value set at the path, not a diff of it', () => {
      expect(desc({ _id: 1, a: { x: 0, y: 2 } }, { $set: { a: { x: 1, y: 2 } } })).toEqual(
        upd({ a: { x: 1, y: 2 } }),
      );
    });
    it('reports dotted paths into existing documents', () => {
      expect(desc({ _id: 1, a: { b: 1, c: 2 } }, { $set: { 'a.b': 5 } })).toEqual(
        upd({ 'a.b': 5 }),
      );
    });
    it('reports nothing for an identical value, but a type change is an update', () => {
      const same = describeUpdate({ _id: 1, a: new Int32(1) }, { $set: { a: new Int32(1) } });
      expect(same.changed).toBe(false);
      expect(same.updatedFields).toEqual({});
      const other = desc({ _id: 1, a: new Int32(1) }, { $set: { a: 1.5 } });
      expect(other.updatedFields).toEqual({ a: 1.5 });
    });
    it('reports created intermediate documents at the first missing component', () => {
      expect(desc({ _id: 1 }, { $set: { 'x.y.z': 1 } })).toEqual(upd({ x: { y: { z: 1 } } }));
      expect(desc({ _id: 1, x: { k: 1 } }, { $set: { 'x.y.z': 1 } })).toEqual(
        upd({ 'x.y': { z: 1 } }),
      );
    });
    it('merges sibling creations under one created document, in apply order', () => {
      const d = desc({ _id: 1 }, { $set: { 'x.y.z': 1, 'x.w': 2 } });
      expect(d.updatedFields).toEqual({ x: { w: 2, y: { z: 1 } } });
      expect(Object.keys(d.updatedFields.x)).toEqual(['w', 'y']);
    });
    it('reports array element updates and creations by index (padding is not reported)', () => {
      expect(desc({ _id: 1, a: [1, 2] }, { $set: { 'a.1': 9 } })).toEqual(upd({ 'a.1': 9 }));
      expect(desc({ _id: 1, a: [0] }, { $set: { 'a.3': 3 } })).toEqual(upd({ 'a.3': 3 }));
      expect(desc({ _id: 1, a: [] }, { $set: { 'a.0.c': 1 } })).toEqual(upd({ 'a.0': { c: 1 } }));
    });
    it('treats numeric field names of documents as fields', () => {
      expect(desc({ _id: 1, a: { '0': 1 } }, { $set: { 'a.0': 2 } })).toEqual(upd({ 'a.0': 2 }));
    });
  });

  describe('field order', () => {
    it('lists updates, then creations, then sub-document changes, each in apply order', () => {
      const d = desc(
        { _id: 1, b: 1, d: { e: 1 }, f: 1 },
        { $set: { z: 1, b: 2, 'd.e': 2, a: 0, f: 2, 'd.n': 1 } },
      );
      expect(Object.keys(d.updatedFields)).toEqual(['b', 'f', 'a', 'z', 'd.e', 'd.n']);
    });
    it('lists removed fields level by level', () => {
      const d = desc({ _id: 1, a: { x: 1 }, b: 1, c: 1 }, { $unset: { c: 1, 'a.x': 1, b: 1 } });
      expect(d.removedFields).toEqual(['b', 'c', 'a.x']);
    });
    it('reports array children by ascending index', () => {
      const d = desc({ _id: 1, a: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] }, {
        $set: { 'a.10': 0, 'a.2': 0 },
      } as Document);
      expect(Object.keys(d.updatedFields)).toEqual(['a.2', 'a.10']);
    });
  });

  describe('$unset', () => {
    it('reports removedFields, nothing for a missing field', () => {
      expect(desc({ _id: 1, a: 1, b: { c: 1 } }, { $unset: { a: '', 'b.c': '' } })).toEqual(
        upd({}, ['a', 'b.c']),
      );
      expect(desc({ _id: 1 }, { $unset: { a: '' } })).toEqual(upd({}));
    });
    it('reports an unset array element as updated to null', () => {
      expect(desc({ _id: 1, a: [1, 2] }, { $unset: { 'a.0': 1 } })).toEqual(upd({ 'a.0': null }));
    });
  });

  describe('arithmetic and comparison', () => {
    it('$inc reports the dotted path with the new value; a zero increment nothing', () => {
      expect(desc({ _id: 1, a: { b: 1 } }, { $inc: { 'a.b': 2 } })).toEqual(
        upd({ 'a.b': new Int32(3) }),
      );
      expect(desc({ _id: 1, a: new Int32(1) }, { $inc: { a: new Int32(0) } })).toEqual(upd({}));
      expect(desc({ _id: 1 }, { $inc: { 'n.c': 1 } })).toEqual(upd({ n: { c: 1 } }));
    });
    it('$mul, $min, $max report only when the value changes', () => {
      expect(desc({ _id: 1, a: 2 }, { $mul: { a: 3 } })).toEqual(upd({ a: new Int32(6) }));
      expect(desc({ _id: 1, a: 2 }, { $min: { a: 5 } })).toEqual(upd({}));
      expect(desc({ _id: 1, a: 2 }, { $max: { a: 5 } })).toEqual(upd({ a: 5 }));
    });
    it('$bit reports the new value', () => {
      expect(desc({ _id: 1, a: new Int32(5) }, { $bit: { a: { and: new Int32(4) } } })).toEqual(
        upd({ a: new Int32(4) }),
      );
    });
    it('$currentDate always reports an update, even with the same clock value', () => {
      const now = new Date(1000);
      const r = describeUpdate({ _id: 1, a: now }, { $currentDate: { a: true } }, { now });
      expect(r.changed).toBe(true);
      expect(r.updatedFields).toEqual({ a: now });
      const ts = new Timestamp({ t: 1, i: 1 });
      expect(
        desc({ _id: 1 }, { $currentDate: { t: { $type: 'timestamp' } } }, { now, timestamp: ts }),
      ).toEqual(upd({ t: ts }));
    });
  });

  describe('$push', () => {
    it('reports appended elements by index', () => {
      expect(desc({ _id: 1, arr: [1, 2] }, { $push: { arr: 3 } })).toEqual(upd({ 'arr.2': 3 }));
      expect(desc({ _id: 1, arr: [1] }, { $push: { arr: { $each: [2, 3] } } })).toEqual(
        upd({ 'arr.1': 2, 'arr.2': 3 }),
      );
      expect(desc({ _id: 1, arr: [1] }, { $push: { arr: { $each: [2], $position: 5 } } })).toEqual(
        upd({ 'arr.1': 2 }),
      );
    });
    it('reports the whole array for an empty array, $position, $sort or a trimming $slice', () => {
      expect(desc({ _id: 1, arr: [] }, { $push: { arr: 1 } })).toEqual(upd({ arr: [1] }));
      expect(desc({ _id: 1, arr: [1] }, { $push: { arr: { $each: [0], $position: 0 } } })).toEqual(
        upd({ arr: [0, 1] }),
      );
      expect(desc({ _id: 1, arr: [1] }, { $push: { arr: { $each: [2], $position: 1 } } })).toEqual(
        upd({ arr: [1, 2] }),
      );
      expect(desc({ _id: 1, arr: [2] }, { $push: { arr: { $each: [1], $sort: 1 } } })).toEqual(
        upd({ arr: [1, 2] }),
      );
      expect(desc({ _id: 1, arr: [1, 2] }, { $push: { arr: { $each: [3], $slice: -2 } } })).toEqual(
        upd({ arr: [2, 3] }),
      );
    });
    it('keeps the append form when $slice does not trim', () => {
      expect(desc({ _id: 1, arr: [1] }, { $push: { arr: { $each: [2], $slice: 5 } } })).toEqual(
        upd({ 'arr.1': 2 }),
      );
    });
    it('$sort counts as an update even when nothing moves; an empty $each alone is a no-op', () => {
      const sorted = describeUpdate(
        { _id: 1, arr: [1, 2] },
        { $push: { arr: { $each: [], $sort: 1 } } },
      );
      expect(sorted.changed).toBe(true);
      expect(sorted.updatedFields).toEqual({ arr: [1, 2] });
      const none = describeUpdate({ _id: 1, arr: [1] }, { $push: { arr: { $each: [] } } });
      expect(none.changed).toBe(false);
      expect(none.updatedFields).toEqual({});
    });
    it('reports a created array whole', () => {
      expect(desc({ _id: 1 }, { $push: { 'n.arr': 1 } })).toEqual(upd({ n: { arr: [1] } }));
    });
  });

  describe('other array operators report the whole array', () => {
    it('$addToSet', () => {
      expect(desc({ _id: 1, s: [1] }, { $addToSet: { s: 2 } })).toEqual(upd({ s: [1, 2] }));
      expect(desc({ _id: 1, s: [1] }, { $addToSet: { s: 1 } })).toEqual(upd({}));
    });
    it('$pop, $pull, $pullAll', () => {
      expect(desc({ _id: 1, a: [1, 2, 3] }, { $pop: { a: 1 } })).toEqual(upd({ a: [1, 2] }));
      expect(desc({ _id: 1, a: [1, 2, 3] }, { $pop: { a: -1 } })).toEqual(upd({ a: [2, 3] }));
      expect(desc({ _id: 1, a: [1, 2, 1] }, { $pull: { a: 1 } })).toEqual(upd({ a: [2] }));
      expect(desc({ _id: 1, a: [1, 2, 3] }, { $pullAll: { a: [1, 3] } })).toEqual(upd({ a: [2] }));
      expect(desc({ _id: 1, a: [1] }, { $pull: { a: 5 } })).toEqual(upd({}));
      expect(desc({ _id: 1, a: [] }, { $pop: { a: 1 } })).toEqual(upd({}));
    });
    it('reports a nested array under its full path', () => {
      expect(desc({ _id: 1, o: { a: [1, 2] } }, { $pull: { 'o.a': 1 } })).toEqual(
        upd({ 'o.a': [2] }),
      );
    });
  });

  describe('$rename', () => {
    it('reports the new path as set and the old one as removed', () => {
      expect(desc({ _id: 1, a: 1 }, { $rename: { a: 'b' } })).toEqual(upd({ b: 1 }, ['a']));
      expect(desc({ _id: 1, a: { x: 1 }, b: 2 }, { $rename: { 'a.x': 'b' } })).toEqual(
        upd({ b: 1 }, ['a.x']),
      );
      expect(desc({ _id: 1, a: 1 }, { $rename: { a: 'n.m' } })).toEqual(
        upd({ n: { m: 1 } }, ['a']),
      );
      expect(desc({ _id: 1 }, { $rename: { a: 'b' } })).toEqual(upd({}));
    });
    it('applies at the destination path, in field order with the other modifiers', () => {
      const r = describeUpdate({ _id: 1, a: 1 }, { $rename: { a: 'z' }, $set: { m: 1 } });
      expect(Object.keys(r.doc)).toEqual(['_id', 'm', 'z']);
      expect(Object.keys(r.updatedFields)).toEqual(['m', 'z']);
    });
  });

  describe('positional updates', () => {
    it('$ reports the matched element path', () => {
      const d = desc(
        {
          _id: 1,
          a: [
            { k: 1, v: 1 },
            { k: 2, v: 1 },
          ],
        },
        { $set: { 'a.$.v': 9 } },
        {
          query: { 'a.k': 2 },
        },
      );
      expect(d).toEqual(upd({ 'a.1.v': 9 }));
    });
    it('$[] and $[id] report each touched element', () => {
      expect(desc({ _id: 1, a: [1, 2, 3] }, { $inc: { 'a.$[]': 1 } })).toEqual(
        upd({ 'a.0': new Int32(2), 'a.1': new Int32(3), 'a.2': new Int32(4) }),
      );
      const d = desc(
        { _id: 1, a: [{ v: 1 }, { v: 5 }] },
        { $set: { 'a.$[e].v': 0 } },
        {
          arrayFilters: [{ 'e.v': { $gt: 2 } }],
        },
      );
      expect(d).toEqual(upd({ 'a.1.v': 0 }));
    });
  });

  it('is empty for a no-op update and present only for modifier updates', () => {
    expect(desc({ _id: 1, a: 1 }, { $set: { a: 1 } })).toEqual(upd({}));
    expect(applyUpdate({ _id: 1, a: 1 }, { a: 2 }).description).toBeUndefined();
  });
});

describe('UpdateLog', () => {
  it('nests sub-diffs under arrays and documents', () => {
    const log = new UpdateLog();
    const f = (name: string) => ({ name, isIndex: false });
    const i = (name: string) => ({ name, isIndex: true });
    log.logUpdated([f('a'), i('1'), f('b')], 1);
    log.logDeleted([f('a'), i('1'), f('c')]);
    log.logCreated([f('n'), f('m')], 0, 2);
    log.logUpdated([f('t')], 3);
    expect(log.toDescription()).toEqual({
      updatedFields: { t: 3, n: { m: 2 }, 'a.1.b': 1 },
      removedFields: ['a.1.c'],
      truncatedArrays: [],
    });
  });
});
