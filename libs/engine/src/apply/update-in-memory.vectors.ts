import { DBRef, Double, Int32, Long, ObjectId, type Document } from 'bson';

/**
 * Cases of applyUpdateInMemory (update-in-memory.ts): a document, an update as translateUpdate
 * builds it, and the document in memory after it — or null where the update must stay an
 * operation. The engine's spec checks them; libs/mongo's spec applies the same updates on the
 * emulator (the engine may not import it) and compares the bytes of every non-null result.
 */
export interface InMemoryUpdateCase {
  name: string;
  doc: Document;
  update: Document;
  expected: Document | null;
}

export const IN_MEMORY_UPDATE_CASES: InMemoryUpdateCase[] = [
  {
    name: 'an existing field keeps its position and takes the new value and type',
    doc: { _id: 1, a: new Double(1), b: 'x', c: new Int32(3) },
    update: { $set: { a: new Int32(5) } },
    expected: { _id: 1, a: new Int32(5), b: 'x', c: new Int32(3) },
  },
  {
    name: 'new top-level fields are appended in field-name order',
    doc: { _id: 1, z: 1 },
    update: { $set: { b: new Int32(1), a: new Int32(2), B: new Int32(3) } },
    expected: { _id: 1, z: 1, B: new Int32(3), a: new Int32(2), b: new Int32(1) },
  },
  {
    name: 'a dotted path into an embedded document is set in place',
    doc: { _id: 1, flags: { level: new Int32(1), on: true }, x: 1 },
    update: { $set: { ratio: new Double(0.5), 'flags.level': new Int32(7) } },
    expected: { _id: 1, flags: { level: new Int32(7), on: true }, x: 1, ratio: new Double(0.5) },
  },
  {
    name: 'dotted paths create missing embedded documents, children in field-name order',
    doc: { _id: 1, a: 1 },
    update: { $set: { 'p.q': new Int32(1), 'p.b': new Int32(2), 'p.r.s': 'deep' } },
    expected: { _id: 1, a: 1, p: { b: new Int32(2), q: new Int32(1), r: { s: 'deep' } } },
  },
  {
    name: '$unset removes existing fields and keeps the order of the rest',
    doc: { _id: 1, a: 1, b: 2, c: { d: 1, e: 2 }, f: 3 },
    update: { $unset: { b: '', 'c.d': '' } },
    expected: { _id: 1, a: 1, c: { e: 2 }, f: 3 },
  },
  {
    name: '$unset of a missing field or below a missing field is a no-op',
    doc: { _id: 1, a: 1 },
    update: { $unset: { z: '', 'x.y': '' } },
    expected: { _id: 1, a: 1 },
  },
  {
    name: '$set and $unset together',
    doc: { _id: 1, a: { b: 1, c: 2 }, s: 'x' },
    update: { $set: { 'a.c': new Long(9), t: 'new' }, $unset: { 'a.b': '', s: '' } },
    expected: { _id: 1, a: { c: new Long(9) }, t: 'new' },
  },
  {
    // Decoded, a JS object enumerates "7" first whatever its place in BSON was.
    name: 'a document holding a field named like an array index (stays an operation)',
    doc: { _id: 1, m: { '7': 1, k: 2 } },
    update: { $set: { 'm.7': new Int32(8) } },
    expected: null,
  },
  {
    name: 'an embedded document value replaces a scalar',
    doc: { _id: 1, a: 1, b: 2 },
    update: { $set: { a: { x: [1, 2], y: new ObjectId('64b000000000000000000001') } } },
    expected: { _id: 1, a: { x: [1, 2], y: new ObjectId('64b000000000000000000001') }, b: 2 },
  },
  {
    name: 'array element (stays an operation)',
    doc: { _id: 1, arr: [1, 2, 3] },
    update: { $set: { 'arr.1': 5 } },
    expected: null,
  },
  {
    name: 'a field inside an array element (stays an operation)',
    doc: { _id: 1, arr: [{ a: 1 }] },
    update: { $unset: { 'arr.0.a': '' } },
    expected: null,
  },
  {
    name: 'a whole array is set (no path into it): reproduced',
    doc: { _id: 1, arr: [1, 2, 3], z: 0 },
    update: { $set: { arr: [4] } },
    expected: { _id: 1, arr: [4], z: 0 },
  },
  {
    name: 'a truncation ($push $each [] $slice) stays an operation',
    doc: { _id: 1, arr: [1, 2, 3] },
    update: { $push: { arr: { $each: [], $slice: 2 } } },
    expected: null,
  },
  {
    name: 'a path through a scalar (the destination refuses it) stays an operation',
    doc: { _id: 1, a: 1 },
    update: { $set: { 'a.b': 1 } },
    expected: null,
  },
  {
    name: 'a path through null stays an operation',
    doc: { _id: 1, a: null },
    update: { $set: { 'a.b': 1 } },
    expected: null,
  },
  {
    name: 'a path through a DBRef stays an operation',
    doc: { _id: 1, r: new DBRef('c', new ObjectId('64b000000000000000000002')) },
    update: { $set: { 'r.x': 1 } },
    expected: null,
  },
  {
    name: 'creating a field whose name is all digits stays an operation',
    doc: { _id: 1, a: { k: 1 } },
    update: { $set: { 'a.0': 1 } },
    expected: null,
  },
  {
    name: '_id stays an operation',
    doc: { _id: 1, a: 1 },
    update: { $set: { _id: 1 } },
    expected: null,
  },
  {
    name: 'overlapping paths stay an operation',
    doc: { _id: 1, a: { b: 1 } },
    update: { $set: { a: 1 }, $unset: { 'a.b': '' } },
    expected: null,
  },
];
