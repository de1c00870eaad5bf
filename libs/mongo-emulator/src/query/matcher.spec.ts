import {
  Binary,
  BSONRegExp,
  BSONSymbol,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
} from 'bson';
import type { Document } from 'bson';
import { compileFilter } from './matcher';

const m = (filter: Document, doc: Document, collation?: Document) =>
  compileFilter(filter, { collation })(doc);
const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (e: any) {
    return [e.code, e.message];
  }
  return undefined;
};

describe('compileFilter: equality and arrays', () => {
  it('matches scalars, whole arrays and array elements', () => {
    expect(m({ a: 1 }, { a: new Int32(1) })).toBe(true);
    expect(m({ a: new Double(1) }, { a: Long.fromNumber(1) })).toBe(true);
    expect(m({ a: Decimal128.fromString('1.0') }, { a: 1 })).toBe(true);
    expect(m({ a: 1 }, { a: [3, 1] })).toBe(true);
    expect(m({ a: [1, 2] }, { a: [1, 2] })).toBe(true);
    expect(m({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(m({ a: [1, 2] }, { a: [[1, 2], 3] })).toBe(true);
    expect(m({ a: 1 }, { a: [[1]] })).toBe(false);
    expect(m({ a: '1' }, { a: 1 })).toBe(false);
  });
  it('null matches missing, null and undefined but not other values', () => {
    expect(m({ a: null }, {})).toBe(true);
    expect(m({ a: null }, { a: null })).toBe(true);
    expect(m({ a: null }, { a: undefined })).toBe(true);
    expect(m({ a: null }, { a: 0 })).toBe(false);
    expect(m({ 'a.b': null }, { a: [{ b: 1 }, {}] })).toBe(true);
    expect(m({ a: { $ne: null } }, {})).toBe(false);
  });
  it('traverses arrays of documents and numeric components', () => {
    const doc = { a: [{ b: 1 }, { b: [2, 3] }] };
    expect(m({ 'a.b': 3 }, doc)).toBe(true);
    expect(m({ 'a.b': [2, 3] }, doc)).toBe(true);
    expect(m({ 'a.1.b': 2 }, doc)).toBe(true);
    expect(m({ 'a.0.b': 2 }, doc)).toBe(false);
    expect(m({ 'a.0': 5 }, { a: [{ '0': 5 }] })).toBe(true);
    expect(m({ 'a.b.c': 1 }, { a: { b: 1 } })).toBe(false);
  });
  it('compares documents field order sensitively', () => {
    expect(m({ a: { x: 1, y: 2 } }, { a: { x: 1, y: 2 } })).toBe(true);
    expect(m({ a: { x: 1, y: 2 } }, { a: { y: 2, x: 1 } })).toBe(false);
  });
});

describe('compileFilter: comparison operators', () => {
  it('brackets by type', () => {
    expect(m({ a: { $gt: 5 } }, { a: 6 })).toBe(true);
    expect(m({ a: { $gt: 5 } }, { a: '6' })).toBe(false);
    expect(m({ a: { $gt: 5 } }, { a: [1, 7] })).toBe(true);
    expect(m({ a: { $lt: 'b' } }, { a: 'a' })).toBe(true);
    expect(m({ a: { $lt: 'b' } }, { a: 1 })).toBe(false);
    expect(m({ a: { $gte: null } }, {})).toBe(true);
    expect(m({ a: { $gt: null } }, { a: 1 })).toBe(false);
    expect(m({ a: { $gt: new MinKey() } }, { a: 'x' })).toBe(true);
    expect(m({ a: { $lt: new MaxKey() } }, { a: { b: 1 } })).toBe(true);
    expect(m({ a: { $gt: 1, $lt: 3 } }, { a: [0, 5] })).toBe(true); // different elements
    expect(m({ a: { $elemMatch: { $gt: 1, $lt: 3 } } }, { a: [0, 5] })).toBe(false);
  });
  it('handles NaN like MongoDB', () => {
    expect(m({ a: { $gt: 0 } }, { a: NaN })).toBe(false);
    expect(m({ a: { $gte: NaN } }, { a: NaN })).toBe(true);
    expect(m({ a: NaN }, { a: new Double(NaN) })).toBe(true);
  });
  it('$in / $nin with regexes and null', () => {
    expect(m({ a: { $in: [1, /^x/] } }, { a: 'xyz' })).toBe(true);
    expect(m({ a: { $in: [null] } }, {})).toBe(true);
    expect(m({ a: { $nin: [1, 2] } }, { a: [3, 2] })).toBe(false);
    expect(m({ a: { $nin: [1, 2] } }, {})).toBe(true);
    expect(code(() => compileFilter({ a: { $in: 1 } }))).toEqual([2, '$in needs an array']);
    expect(code(() => compileFilter({ a: { $in: [{ $gt: 1 }] } }))).toEqual([
      2,
      'cannot nest $ under $in',
    ]);
  });

  it('$in over many strings: exact matches, array elements, symbols, mixed types, collation', () => {
    const many = Array.from({ length: 5000 }, (_, i) => `k${i}`);
    expect(m({ a: { $in: many } }, { a: 'k4999' })).toBe(true);
    expect(m({ a: { $in: many } }, { a: 'K4999' })).toBe(false);
    expect(m({ a: { $in: many } }, { a: ['x', 'k17'] })).toBe(true);
    expect(m({ a: { $in: many } }, { a: new BSONSymbol('k3') })).toBe(true);
    expect(m({ a: { $in: [...many, 7] } }, { a: new Int32(7) })).toBe(true);
    expect(m({ a: { $in: many } }, { a: 7 })).toBe(false);
    expect(m({ a: { $nin: many } }, { a: 'k1' })).toBe(false);
    // A case-insensitive collation compares every value under it.
    expect(m({ a: { $in: many } }, { a: 'K4999' }, { locale: 'en', strength: 2 })).toBe(true);
  });

  it('$in over many values of every type: numeric equality across types, documents, arrays, NaN', () => {
    const ids = Array.from({ length: 3000 }, (_, i) => (i % 2 ? i : Long.fromNumber(i)));
    const list = [
      ...ids,
      { x: 1, y: [2] },
      [1, 2],
      Number.NaN,
      new MinKey(),
      new Binary(Buffer.from('ab')),
      new BSONSymbol('sym'),
    ];
    expect(m({ _id: { $in: list } }, { _id: new Int32(2998) })).toBe(true);
    expect(m({ _id: { $in: list } }, { _id: new Double(1001) })).toBe(true);
    expect(m({ _id: { $in: list } }, { _id: Decimal128.fromString('2.0') })).toBe(true);
    expect(m({ _id: { $in: list } }, { _id: 2.5 })).toBe(false);
    expect(m({ _id: { $in: list } }, { _id: 3000 })).toBe(false);
    expect(m({ _id: { $in: list } }, { _id: { x: new Int32(1), y: [2] } })).toBe(true);
    // Field order counts in a document.
    expect(m({ _id: { $in: list } }, { _id: { y: [2], x: 1 } })).toBe(false);
    expect(m({ a: { $in: list } }, { a: [1, 2] })).toBe(true);
    expect(m({ a: { $in: list } }, { a: [[1, 2]] })).toBe(true);
    expect(m({ a: { $in: list } }, { a: Number.NaN })).toBe(true);
    expect(m({ a: { $in: list } }, { a: new MinKey() })).toBe(true);
    expect(m({ a: { $in: list } }, { a: new MaxKey() })).toBe(false);
    expect(m({ a: { $in: list } }, { a: new Binary(Buffer.from('ab')) })).toBe(true);
    expect(m({ a: { $in: list } }, { a: 'sym' })).toBe(true);
    expect(m({ a: { $in: list } }, {})).toBe(false);
    expect(m({ a: { $in: [...list, null] } }, {})).toBe(true);
    expect(m({ a: { $nin: list } }, { a: 17 })).toBe(false);
    expect(m({ a: { $nin: list } }, { a: -1 })).toBe(true);
  });
});

describe('compileFilter: element, array and evaluation operators', () => {
  it('$exists and $type', () => {
    expect(m({ a: { $exists: true } }, { a: null })).toBe(true);
    expect(m({ a: { $exists: false } }, {})).toBe(true);
    expect(m({ 'a.b': { $exists: true } }, { a: [{ c: 1 }, { b: 1 }] })).toBe(true);
    expect(m({ a: { $type: 'int' } }, { a: new Int32(1) })).toBe(true);
    expect(m({ a: { $type: 'double' } }, { a: new Int32(1) })).toBe(false);
    expect(m({ a: { $type: 1 } }, { a: new Double(1) })).toBe(true);
    expect(m({ a: { $type: 'number' } }, { a: Long.fromNumber(3) })).toBe(true);
    expect(m({ a: { $type: 'array' } }, { a: [] })).toBe(true);
    expect(m({ a: { $type: ['string', 'null'] } }, { a: null })).toBe(true);
    expect(code(() => compileFilter({ a: { $type: 'foo' } }))).toEqual([
      2,
      'Unknown type name alias: foo',
    ]);
  });
  it('$size, $all and $elemMatch', () => {
    expect(m({ a: { $size: 2 } }, { a: [1, 2] })).toBe(true);
    expect(m({ a: { $size: 1 } }, { a: [[1, 2]] })).toBe(true);
    expect(m({ a: { $size: 2 } }, { a: [[1, 2]] })).toBe(false);
    expect(m({ a: { $all: [1, 2] } }, { a: [2, 3, 1] })).toBe(true);
    expect(m({ a: { $all: [] } }, { a: [] })).toBe(false);
    expect(
      m(
        { a: { $all: [{ $elemMatch: { x: 1 } }, { $elemMatch: { y: 2 } }] } },
        { a: [{ x: 1 }, { y: 2 }] },
      ),
    ).toBe(true);
    expect(m({ a: { $elemMatch: { x: 1, y: 2 } } }, { a: [{ x: 1 }, { y: 2 }] })).toBe(false);
    expect(m({ a: { $elemMatch: { x: 1, y: 2 } } }, { a: [{ x: 1, y: 2 }] })).toBe(true);
    expect(m({ a: { $elemMatch: { $or: [{ x: 5 }, { y: 2 }] } } }, { a: [{ y: 2 }] })).toBe(true);
    expect(code(() => compileFilter({ a: { $size: 1.5 } }))).toEqual([
      2,
      '$size must be a whole number',
    ]);
  });
  it('$regex with options and $not', () => {
    expect(m({ a: { $regex: 'AB', $options: 'i' } }, { a: 'xab' })).toBe(true);
    expect(m({ a: new BSONRegExp('^a.c$', 's') }, { a: 'a\nc' })).toBe(true);
    expect(m({ a: { $regex: 'a # comment\n b', $options: 'x' } }, { a: 'ab' })).toBe(true);
    expect(m({ a: { $regex: /^x/m } }, { a: 'y\nx' })).toBe(true);
    expect(m({ a: { $not: /^x/ } }, { a: 'yx' })).toBe(true);
    expect(m({ a: { $not: { $gt: 5 } } }, { a: 'str' })).toBe(true);
    expect(code(() => compileFilter({ a: { $options: 'i' } }))).toEqual([
      2,
      '$options needs a $regex',
    ]);
    expect(code(() => compileFilter({ a: { $regex: 'a', $options: 'q' } }))?.[0]).toBe(51108);
  });
  it('$mod and bit tests', () => {
    expect(m({ a: { $mod: [4, 1] } }, { a: new Double(5.9) })).toBe(true);
    expect(m({ a: { $mod: [2, -1] } }, { a: -5 })).toBe(true);
    expect(code(() => compileFilter({ a: { $mod: [4] } }))).toEqual([
      2,
      'malformed mod, not enough elements',
    ]);
    expect(m({ a: { $bitsAllSet: [0, 2] } }, { a: 5 })).toBe(true);
    expect(m({ a: { $bitsAnyClear: 5 } }, { a: 7 })).toBe(false);
    expect(m({ a: { $bitsAllSet: [70] } }, { a: -1 })).toBe(true);
    expect(m({ a: { $bitsAnySet: 2 } }, { a: new Binary(Buffer.from([2])) })).toBe(true);
    expect(m({ a: { $bitsAllSet: 1 } }, { a: 1.5 })).toBe(false);
  });
});

describe('compileFilter: logical, $expr, errors, collation', () => {
  it('$and/$or/$nor', () => {
    expect(m({ $or: [{ a: 1 }, { b: 2 }] }, { b: 2 })).toBe(true);
    expect(m({ $nor: [{ a: 1 }, { b: 2 }] }, { b: 2 })).toBe(false);
    expect(m({ $and: [{ a: 1 }, { b: 2 }], $comment: 'x' }, { a: 1, b: 2 })).toBe(true);
    expect(code(() => compileFilter({ $or: [] }))).toEqual([
      2,
      '$and/$or/$nor must be a nonempty array',
    ]);
  });
  it('$expr evaluates aggregation expressions against the document', () => {
    expect(m({ $expr: { $gt: ['$a', '$b'] } }, { a: 2, b: 1 })).toBe(true);
    expect(m({ $expr: { $gt: ['$a', '$b'] } }, { a: 1, b: 2 })).toBe(false);
  });
  it('rejects unknown operators with MongoDB messages', () => {
    expect(code(() => compileFilter({ a: { $foo: 1 } }))).toEqual([2, 'unknown operator: $foo']);
    expect(code(() => compileFilter({ $foo: 1 }))?.[1]).toMatch(
      /^unknown top level operator: \$foo/,
    );
    expect(code(() => compileFilter({ $where: 'true' }))?.[0]).toBe(2);
  });
  it('collation strength 1/2 compares case-insensitively', () => {
    expect(m({ a: 'ABC' }, { a: 'abc' })).toBe(false);
    expect(m({ a: 'ABC' }, { a: 'abc' }, { locale: 'en', strength: 2 })).toBe(true);
    expect(m({ a: 'ABC' }, { a: 'ábc' }, { locale: 'en', strength: 2 })).toBe(false);
    expect(m({ a: 'ABC' }, { a: 'ábc' }, { locale: 'en', strength: 1 })).toBe(true);
    expect(m({ a: { $in: ['X'] } }, { a: ['x'] }, { locale: 'en', strength: 2 })).toBe(true);
    expect(m({ a: { $gt: 'B' } }, { a: 'c' }, { locale: 'en', strength: 2 })).toBe(true);
  });
});

describe('compileFilter: $jsonSchema', () => {
  const schema = {
    bsonType: 'object',
    required: ['name'],
    properties: {
      name: { bsonType: 'string', minLength: 2 },
      age: { bsonType: ['int', 'long'], minimum: 0, maximum: 150 },
      tags: { bsonType: 'array', items: { enum: ['a', 'b'] } },
    },
    additionalProperties: { bsonType: 'objectId' },
  };
  const v = (doc: Document) => m({ $jsonSchema: schema }, doc);
  it('validates documents', () => {
    expect(v({ name: 'Al', age: new Int32(3) })).toBe(true);
    expect(v({ age: new Int32(3) })).toBe(false);
    expect(v({ name: 'A' })).toBe(false);
    expect(v({ name: 'Al', age: new Double(3) })).toBe(false);
    expect(v({ name: 'Al', age: new Int32(151) })).toBe(false);
    expect(v({ name: 'Al', tags: ['a', 'c'] })).toBe(false);
    expect(v({ name: 'Al', extra: 1 })).toBe(false);
  });
  it('rejects unknown keywords and integer type', () => {
    expect(code(() => compileFilter({ $jsonSchema: { foo: 1 } }))?.[0]).toBe(9);
    expect(code(() => compileFilter({ $jsonSchema: { type: 'integer' } }))?.[0]).toBe(9);
  });
});
