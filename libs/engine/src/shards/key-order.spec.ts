import {
  Binary,
  BSON,
  BSONRegExp,
  BSONSymbol,
  Code,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
} from 'bson';
import { compareKeyDocs, compareKeyValues } from './key-order';

const dec = (s: string) => Decimal128.fromString(s);
const bin = (bytes: number[], sub = 0) => new Binary(Buffer.from(bytes), sub);

/** Groups of equal values, in ascending MongoDB order. */
const ORDERED: unknown[][] = [
  [new MinKey()],
  [undefined],
  [null],
  [Number.NaN, new Double(Number.NaN), dec('NaN')],
  [-Infinity, dec('-Infinity')],
  [Long.MIN_VALUE, dec('-9223372036854775808')],
  [Long.fromString('-9007199254740993')],
  [-(2 ** 53), Long.fromString('-9007199254740992')],
  [-1.5, dec('-1.50')],
  [new Int32(-1), new Double(-1), Long.fromInt(-1), -1, dec('-1')],
  [new Double(-0), 0, new Int32(0), Long.ZERO, dec('0'), dec('-0'), dec('0E-30')],
  [dec('0.1')],
  [0.1, new Double(0.1)],
  [dec('0.1000000000000000055511151231257828')],
  [new Double(0.5), dec('0.5')],
  [new Int32(1), new Double(1), Long.ONE, dec('1.0'), dec('1')],
  [2 ** 53, Long.fromString('9007199254740992'), dec('9007199254740992')],
  [Long.fromString('9007199254740993'), dec('9007199254740993')],
  [2 ** 53 + 2, Long.fromString('9007199254740994')],
  [Long.MAX_VALUE],
  [2 ** 63, dec('9223372036854775808')],
  [dec('1E+30')],
  [Number.MAX_VALUE],
  [dec('1E+6144')],
  [Infinity, dec('Infinity')],
  [''],
  ['A'],
  ['a', new BSONSymbol('a')],
  ['ab'],
  ['b'],
  ['\u00e9'],
  ['\uffff'],
  ['\u{1f600}'],
  [{}],
  [{ a: null }],
  [{ a: 1 }, { a: new Int32(1) }, { a: Long.ONE }],
  [{ a: 1, b: 1 }],
  [{ b: 1 }],
  [{ a: 'x' }],
  [[]],
  [[1]],
  [[1, 2]],
  [[2]],
  [['a']],
  [bin([0xff])],
  [bin([0x00], 5)],
  [bin([0, 0])],
  [new ObjectId('000000000000000000000000')],
  [new ObjectId('0102030405060708090a0b0c')],
  [new ObjectId('ffffffffffffffffffffffff')],
  [false],
  [true],
  [new Date(-1)],
  [new Date(0)],
  [new Date(1)],
  [new Timestamp({ t: 1, i: 5 })],
  [new Timestamp({ t: 2, i: 0 })],
  [new Timestamp({ t: 0xffffffff, i: 0 })],
  [new BSONRegExp('a', 'i')],
  [new BSONRegExp('a', 'm')],
  [new BSONRegExp('b', '')],
  [new Code('x')],
  [new Code('y')],
  [new Code('x', { a: 1 })],
  [new MaxKey()],
];

const flat = ORDERED.flatMap((group, g) => group.map((value) => ({ value, g })));
const sign = (n: number) => Math.sign(n) || 0;

describe('compareKeyValues: MongoDB BSON order', () => {
  it('orders every pair of the table as listed, equal within a group', () => {
    const wrong: string[] = [];
    for (const x of flat)
      for (const y of flat) {
        const got = sign(compareKeyValues(x.value, y.value));
        if (got !== sign(x.g - y.g)) wrong.push(`${show(x.value)} vs ${show(y.value)}: ${got}`);
      }
    expect(wrong).toEqual([]);
  });

  it('compares values decoded without promotion like the originals', () => {
    const doc = { values: flat.filter((e) => e.value !== undefined).map((e) => e.value) };
    const decoded = BSON.deserialize(BSON.serialize(doc), {
      promoteValues: false,
      promoteLongs: false,
      promoteBuffers: false,
      bsonRegExp: true,
    }).values as unknown[];
    const original = doc.values;
    const wrong: string[] = [];
    for (let i = 0; i < original.length; i++)
      for (let j = 0; j < original.length; j++)
        if (
          sign(compareKeyValues(decoded[i], decoded[j])) !==
          sign(compareKeyValues(original[i], original[j]))
        )
          wrong.push(`${show(original[i])} vs ${show(original[j])}`);
    expect(wrong).toEqual([]);
  });

  it('is exact for int64 beyond 2^53 against doubles both ways', () => {
    const big = Long.fromString('9007199254740993'); // 2^53 + 1, not a double
    expect(compareKeyValues(big, 2 ** 53)).toBe(1);
    expect(compareKeyValues(2 ** 53, big)).toBe(-1);
    expect(compareKeyValues(big, 2 ** 53 + 2)).toBe(-1);
    expect(compareKeyValues(Long.MAX_VALUE, 2 ** 63)).toBe(-1);
    expect(compareKeyValues(BigInt('9007199254740993'), big)).toBe(0);
  });
});

describe('compareKeyDocs', () => {
  it('compares shard-key documents value by value, in order', () => {
    expect(compareKeyDocs({ a: 1, b: new MinKey() }, { a: 1, b: 'x' })).toBe(-1);
    expect(compareKeyDocs({ a: 2, b: new MinKey() }, { a: 1, b: new MaxKey() })).toBe(1);
    expect(compareKeyDocs({ a: new Int32(5), b: 'k' }, { a: dec('5'), b: 'k' })).toBe(0);
    expect(compareKeyDocs({ x: 'a' }, { x: 99 })).toBe(1);
  });
});

function show(v: unknown): string {
  if (v === undefined) return 'undefined';
  const tag = (v as { _bsontype?: string } | null)?._bsontype;
  return `${tag ?? typeof v}(${String(v instanceof Object && 'toString' in v ? v.toString() : v)})`;
}
