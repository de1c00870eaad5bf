import {
  BSON,
  Binary,
  BSONSymbol,
  Code,
  DBRef,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
  type Document,
} from 'bson';
import { decodeExact, detach, encode, encodeOwned } from './codec';
import { decodeFields, FieldSet, filterFields } from './partial';

const EVERY_TYPE: Document = {
  _id: new ObjectId('64b7f0c2a1b2c3d4e5f60718'),
  dbl: new Double(1.5),
  str: 'héllo',
  doc: { a: new Int32(1), nested: { b: [1, 2] } },
  arr: [new Int32(1), 'two', { three: 3 }],
  bin: new Binary(Buffer.from('binary'), 4),
  undef: undefined,
  oid: new ObjectId(),
  bool: true,
  date: new Date(1_700_000_000_000),
  nil: null,
  regex: new BSON.BSONRegExp('^a.b$', 'im'),
  dbref: new DBRef('coll', new ObjectId('64b7f0c2a1b2c3d4e5f60719')),
  code: new Code('function () {}'),
  symbol: new BSONSymbol('sym'),
  scoped: new Code('f()', { k: new Int32(5) }),
  int: new Int32(-7),
  ts: new Timestamp({ t: 10, i: 2 }),
  long: Long.fromString('9007199254740993'),
  dec: Decimal128.fromString('12.50'),
  min: new MinKey(),
  max: new MaxKey(),
  'dotted.name': 1,
  ünï: 'unicode name',
};

describe('decodeFields', () => {
  const bytes = encode(EVERY_TYPE);
  const whole = decodeExact(bytes);

  it('decodes each top-level field exactly as the whole-document decoding does', () => {
    for (const field of Object.keys(EVERY_TYPE)) {
      expect(decodeFields(bytes, new FieldSet([field]))).toEqual({ [field]: whole[field] });
    }
  });

  it('keeps the stored order, leaves out absent fields and reads nothing for no fields', () => {
    const part = decodeFields(bytes, new FieldSet(['max', 'missing', 'str', '_id']));
    expect(Object.keys(part)).toEqual(['_id', 'str', 'max']);
    expect(part).toEqual({ _id: whole._id, str: whole.str, max: whole.max });
    expect(decodeFields(bytes, new FieldSet(['missing']))).toEqual({});
    expect(decodeFields(bytes, new FieldSet([]))).toEqual({});
    expect(decodeFields(encode({}), new FieldSet(['a']))).toEqual({});
  });

  it('does not match a name that is a prefix of another', () => {
    const b = encode({ ab: 1, a: 2, abc: 3 });
    expect(decodeFields(b, new FieldSet(['a']))).toEqual({ a: new Int32(2) });
  });
});

describe('filterFields', () => {
  it('lists the top-level fields a filter reads', () => {
    expect(filterFields({ a: 1, 'b.c': { $gt: 2 }, $comment: 'x' })).toEqual(new Set(['a', 'b']));
    expect(filterFields({ $or: [{ x: 1 }, { $and: [{ 'y.0': 2 }] }], $nor: [{ z: 3 }] })).toEqual(
      new Set(['x', 'y', 'z']),
    );
    expect(filterFields({})).toEqual(new Set());
  });

  it('asks for the whole document when the filter may read any field', () => {
    expect(filterFields({ $expr: { $eq: ['$a', 1] } })).toBeUndefined();
    expect(filterFields({ a: 1, $jsonSchema: { required: ['b'] } })).toBeUndefined();
    expect(filterFields({ $and: [{ $expr: true }] })).toBeUndefined();
    expect(filterFields({ $or: 'not an array' })).toBeUndefined();
  });
});

describe('encodeOwned and detach', () => {
  it('returns bytes that own their memory and equal encode()', () => {
    const doc = { _id: new Int32(1), s: 'x'.repeat(100) };
    const bytes = encodeOwned(doc);
    expect(bytes.byteOffset).toBe(0);
    expect(bytes.buffer.byteLength).toBe(bytes.byteLength);
    expect(Buffer.from(bytes)).toEqual(Buffer.from(encode(doc)));
  });

  it('copies Binary values that are views of a larger buffer, and only those', () => {
    const decoded = decodeExact(encode({ k: { id: new Binary(Buffer.from('0123'), 4) }, n: 1 }));
    const view = (decoded.k as Document).id as Binary;
    expect(view.buffer.buffer.byteLength).toBeGreaterThan(view.position);
    const own = detach(decoded);
    expect(own).not.toBe(decoded);
    expect(own).toEqual(decoded);
    const copied = (own.k as Document).id as Binary;
    expect(copied.buffer.buffer.byteLength).toBe(4);
    expect(copied.sub_type).toBe(4);
    expect(detach(own)).toBe(own);
    const plain = { a: [1, { b: 'x' }], d: new Date(0) };
    expect(detach(plain)).toBe(plain);
  });
});
