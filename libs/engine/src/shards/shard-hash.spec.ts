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
import { hashShardKeyValue } from './shard-hash';

const dec = (s: string) => Decimal128.fromString(s);

/** Values both implementations must hash identically. */
const VALUES: unknown[] = [
  0,
  1,
  -1,
  42,
  42.123,
  -42.9,
  new Int32(7),
  new Double(7),
  new Double(-0),
  Long.fromInt(7),
  Long.MAX_VALUE,
  Long.MIN_VALUE,
  Long.fromString('9007199254740993'),
  Long.fromString('-123456789012345678'),
  BigInt('123456789012345678'),
  Number.NaN,
  Infinity,
  -Infinity,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
  2 ** 63,
  -(2 ** 63),
  2 ** 62 + 0.5,
  dec('12'),
  dec('-12'),
  dec('2.5'),
  dec('3.5'),
  dec('-3.5'),
  dec('2.7'),
  dec('1E+3'),
  dec('NaN'),
  dec('Infinity'),
  dec('-Infinity'),
  dec('1E+30'),
  '',
  'abc',
  '\u00e9\u{1f600}',
  new BSONSymbol('abc'),
  new ObjectId('010203040506070809101112'),
  new ObjectId('000000000000000000000000'),
  true,
  false,
  new Date(0),
  new Date(-86400000),
  new Date(1700000000000),
  null,
  new MinKey(),
  new MaxKey(),
  {},
  { a: 'abc', b: Long.fromNumber(123) },
  { a: { b: [1, 'x', { c: null }] }, d: new Int32(1) },
  [],
  ['bar', 'baz', 'qux'],
  [[1], [2, [3]]],
  new Binary(Buffer.from([])),
  new Binary(Buffer.from([1, 2, 3]), 0),
  new Binary(Buffer.from('0123456789abcdef0123456789abcdef', 'hex'), 4),
  new Binary(Buffer.from([9]), 0x80),
  new Timestamp({ t: 1700000000, i: 3 }),
  new BSONRegExp('^a.*b$', 'im'),
  new Code('function () { return 1; }'),
];

describe('hashShardKeyValue: mongod BSONElementHasher::hash64', () => {
  it('reproduces the server hasher_test vectors', () => {
    const vectors: Array<[unknown, string]> = [
      [1, '5902408780260971510'],
      [0, '4854801880128277513'],
      [-1, '1140205862565771219'],
      [42.123, '-944302157085130861'],
      [Number.NaN, '4854801880128277513'],
      [Long.MAX_VALUE, '921523596458303250'],
      [-Number.MAX_VALUE, '4532067210535695462'],
      [new MinKey(), '7961148599568647290'],
      [new MaxKey(), '5504842513779440750'],
      ['abc', '8478485326885698097'],
      [{}, '7980500913326740417'],
      [[], '8849948234993459283'],
      [new ObjectId('010203040506070809101112'), '-5588663249627035708'],
      [true, '6405873908747105701'],
      [new Date(0), '-1178696894582842035'],
    ];
    expect(vectors.map(([v]) => hashShardKeyValue(v).toString())).toEqual(
      vectors.map(([, h]) => h),
    );
  });

  it('hashes values decoded without promotion like the originals', () => {
    const decoded = BSON.deserialize(BSON.serialize({ v: VALUES }), {
      promoteValues: false,
      promoteLongs: false,
      promoteBuffers: false,
      bsonRegExp: true,
    }).v as unknown[];
    expect(decoded.map((v) => hashShardKeyValue(v).toString())).toEqual(
      VALUES.map((v) => hashShardKeyValue(v).toString()),
    );
  });

  it('squashes numbers to int64 as safeNumberLongForHash does', () => {
    const same = (a: unknown, b: unknown) =>
      expect(hashShardKeyValue(a).toString()).toBe(hashShardKeyValue(b).toString());
    same(new Int32(5), Long.fromInt(5));
    same(5.99, 5);
    same(-5.99, -5);
    same(Infinity, Long.MAX_VALUE);
    same(-Infinity, Long.MIN_VALUE);
    same(2 ** 63, Long.MIN_VALUE); // the old x86 overflow, kept for compatibility
    same(Number.NaN, 0);
    same(undefined, null); // a missing field is null
    // Decimal128 goes through toLong(): round half to even, saturating.
    same(dec('2.5'), 2);
    same(dec('3.5'), 4);
    same(dec('-3.5'), -4);
    same(dec('2.7'), 3);
    same(dec('1E+40'), Long.MAX_VALUE);
    same(dec('-1E+40'), Long.MIN_VALUE);
    same(dec('NaN'), 0);
  });
});
