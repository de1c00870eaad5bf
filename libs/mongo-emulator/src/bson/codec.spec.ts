import {
  BSON,
  Binary,
  Code,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  ObjectId,
  Timestamp,
} from 'bson';
import { bsonSize, decodeExact, encode, encodeAnySize } from './codec';

describe('bsonSize', () => {
  it('equals the serialized length for every value type, including Int32 wrappers', () => {
    const doc = {
      _id: new Int32(1),
      n: [new Int32(2), { deep: new Int32(3), d: new Double(1.5) }],
      l: Long.fromNumber(4),
      dec: Decimal128.fromString('1.5'),
      o: new ObjectId(),
      b: new Binary(Buffer.from('xyz'), 4),
      t: new Timestamp({ t: 1, i: 2 }),
      c: new Code('f()', { k: new Int32(5) }),
      m: new MaxKey(),
      s: 'text',
      date: new Date(0),
      nil: null,
    };
    expect(bsonSize(doc)).toBe(BSON.serialize(doc).byteLength);
  });
});

describe('encodeAnySize', () => {
  it('matches encode for ordinary documents', () => {
    const doc = { _id: new Int32(1), a: [1, { b: 'x' }], d: new Date(0) };
    expect(Buffer.from(encodeAnySize(doc))).toEqual(Buffer.from(encode(doc)));
  });

  it('encodes documents beyond js-bson 17 MB scratch buffer', () => {
    const doc = {
      _id: new Int32(1),
      a: Array.from({ length: 1000 }, (_, i) => ({ i: new Int32(i), s: 'x'.repeat(18 * 1024) })),
      z: 'end',
    };
    expect(() => encode(doc)).toThrow(/out of range/);
    const bytes = encodeAnySize(doc);
    expect(bytes.length).toBe(bsonSize(doc));
    expect(decodeExact(bytes)).toEqual(doc);
  });
});
