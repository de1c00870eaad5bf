import { Decimal128, Double, Int32, Long, ObjectId, Timestamp } from 'bson';
import { CommandError } from '../errors';
import { evaluateExpression as ev } from './expressions';

const ev0 = (e: unknown, doc: Record<string, unknown> = {}) => ev(e, doc);
const code = (fn: () => unknown): number => {
  try {
    fn();
  } catch (e) {
    return (e as CommandError).code;
  }
  return 0;
};

describe('field paths and variables', () => {
  it('traverses arrays like MongoDB', () => {
    expect(ev0('$a.b', { a: [{ b: 1 }, { c: 2 }, 3, [{ b: 4 }]] })).toStrictEqual([1, [4]]);
    expect(ev0('$x', {})).toBeUndefined();
    expect(ev0({ o: '$x', p: 1 }, {})).toStrictEqual({ p: 1 });
    expect(ev0(['$x'], {})).toStrictEqual([null]);
  });
  it('resolves system and user variables', () => {
    const doc = { a: 1 };
    expect(ev('$$ROOT', doc)).toBe(doc);
    expect(ev('$$REMOVE', doc)).toBeUndefined();
    expect(ev('$$v.x', doc, { v: { x: 5 } })).toBe(5);
    expect(code(() => ev('$$nope', doc))).toBe(17276);
    expect(ev({ $let: { vars: { t: 2 }, in: '$$t' } }, doc)).toBe(2);
    expect(ev({ $literal: '$a' }, doc)).toBe('$a');
  });
  it('rejects unknown operators with 168', () => {
    expect(() => ev0({ $foo: 1 })).toThrow("Unrecognized expression '$foo'");
    expect(code(() => ev0({ $foo: 1 }))).toBe(168);
  });
});

describe('arithmetic result types', () => {
  it('$add widens int → long → double → decimal', () => {
    expect(ev0({ $add: [new Int32(1), new Int32(2)] })).toStrictEqual(new Int32(3));
    expect(ev0({ $add: [new Int32(2147483647), new Int32(1)] })).toStrictEqual(
      Long.fromNumber(2147483648),
    );
    expect(ev0({ $add: [Long.fromNumber(1), new Int32(1)] })).toStrictEqual(Long.fromNumber(2));
    expect(ev0({ $add: [Long.MAX_VALUE, Long.fromNumber(1)] })).toBeInstanceOf(Double);
    expect(ev0({ $add: [new Int32(1), new Double(1.5)] })).toStrictEqual(new Double(2.5));
    expect(String(ev0({ $add: [Decimal128.fromString('1.5'), new Int32(1)] }))).toBe('2.5');
    expect(ev0({ $add: [new Date(1000), new Int32(500)] })).toStrictEqual(new Date(1500));
    expect(ev0({ $add: [new Int32(1), null] })).toBeNull();
    expect(code(() => ev0({ $add: ['a', 'b'] }))).toBe(14);
  });
  it('$subtract, $multiply, $divide, $mod', () => {
    expect(ev0({ $subtract: [new Date(2000), new Date(500)] })).toStrictEqual(
      Long.fromNumber(1500),
    );
    expect(ev0({ $subtract: [new Date(2000), new Int32(500)] })).toStrictEqual(new Date(1500));
    expect(ev0({ $multiply: [new Int32(3), new Int32(4)] })).toStrictEqual(new Int32(12));
    expect(ev0({ $divide: [new Int32(6), new Int32(3)] })).toStrictEqual(new Double(2));
    expect(String(ev0({ $divide: [Decimal128.fromString('1'), new Int32(4)] }))).toBe('0.25');
    expect(code(() => ev0({ $divide: [new Int32(1), new Int32(0)] }))).toBe(2);
    expect(ev0({ $mod: [new Int32(7), new Int32(3)] })).toStrictEqual(new Int32(1));
    expect(ev0({ $mod: [new Double(7.5), new Int32(2)] })).toStrictEqual(new Double(1.5));
    expect(code(() => ev0({ $mod: [new Int32(7), new Int32(0)] }))).toBe(16610);
  });
  it('unary numeric operators keep or widen type', () => {
    expect(ev0({ $abs: new Int32(-5) })).toStrictEqual(new Int32(5));
    expect(ev0({ $ceil: new Double(1.2) })).toStrictEqual(new Double(2));
    expect(ev0({ $floor: new Int32(3) })).toStrictEqual(new Int32(3));
    expect(ev0({ $round: [new Double(2.5), 0] })).toStrictEqual(new Double(2));
    expect(ev0({ $round: [new Double(3.5), 0] })).toStrictEqual(new Double(4));
    expect(ev0({ $round: [new Int32(1250), -2] })).toStrictEqual(new Int32(1200));
    expect(ev0({ $trunc: [new Double(-1.78), 1] })).toStrictEqual(new Double(-1.7));
    expect(ev0({ $pow: [new Int32(2), new Int32(10)] })).toStrictEqual(new Int32(1024));
    expect(ev0({ $pow: [new Int32(2), new Int32(-1)] })).toStrictEqual(new Double(0.5));
    expect(ev0({ $sqrt: new Int32(25) })).toStrictEqual(new Double(5));
    expect(code(() => ev0({ $sqrt: new Int32(-1) }))).toBe(28714);
    expect(ev0({ $ln: new Double(Math.E) })).toStrictEqual(new Double(1));
    expect(ev0({ $log10: new Int32(100) })).toStrictEqual(new Double(2));
  });
});

describe('comparison, boolean, conditional', () => {
  it('compares across numeric types and orders missing below null', () => {
    expect(ev0({ $eq: [new Int32(1), new Double(1)] })).toBe(true);
    expect(ev0({ $eq: ['$missing', null] })).toBe(false);
    expect(ev0({ $cmp: ['a', 'b'] })).toStrictEqual(new Int32(-1));
    expect(ev0({ $and: [1, 'x', []] })).toBe(true);
    expect(ev0({ $or: [0, null, new Int32(0)] })).toBe(false);
    expect(ev0({ $not: [new Decimal128('0')] })).toBe(true);
  });
  it('$cond, $ifNull, $switch', () => {
    expect(ev0({ $cond: [true, 1, 2] })).toBe(1);
    expect(ev0({ $cond: { if: null, then: 1, else: 2 } })).toBe(2);
    expect(ev0({ $ifNull: ['$x', null, 'd'] })).toBe('d');
    expect(ev0({ $switch: { branches: [{ case: false, then: 1 }], default: 9 } })).toBe(9);
    expect(code(() => ev0({ $switch: { branches: [{ case: false, then: 1 }] } }))).toBe(40066);
  });
});

describe('string operators', () => {
  it('basic string functions', () => {
    expect(ev0({ $concat: ['a', 'b'] })).toBe('ab');
    expect(ev0({ $concat: ['a', null] })).toBeNull();
    expect(code(() => ev0({ $concat: ['a', 1] }))).toBe(16702);
    expect(ev0({ $toUpper: 'abé' })).toBe('ABé');
    expect(ev0({ $substrCP: ['héllo', 1, 3] })).toBe('éll');
    expect(ev0({ $substrBytes: ['abc', 1, 1] })).toBe('b');
    expect(code(() => ev0({ $substrBytes: ['é', 1, 1] }))).toBe(28656);
    expect(ev0({ $strLenCP: 'héllo' })).toStrictEqual(new Int32(5));
    expect(ev0({ $strLenBytes: 'héllo' })).toStrictEqual(new Int32(6));
    expect(ev0({ $split: ['a-b-c', '-'] })).toStrictEqual(['a', 'b', 'c']);
    expect(ev0({ $trim: { input: '  x ' } })).toBe('x');
    expect(ev0({ $ltrim: { input: 'xxy', chars: 'x' } })).toBe('y');
    expect(ev0({ $indexOfCP: ['cafétéria', 'é'] })).toStrictEqual(new Int32(3));
    expect(ev0({ $strcasecmp: ['ABC', 'abc'] })).toStrictEqual(new Int32(0));
    expect(ev0({ $replaceAll: { input: 'aXbX', find: 'X', replacement: '-' } })).toBe('a-b-');
    expect(ev0({ $replaceOne: { input: 'aXbX', find: 'X', replacement: '-' } })).toBe('a-bX');
  });
  it('regex operators', () => {
    expect(ev0({ $regexMatch: { input: 'Hello', regex: '^h', options: 'i' } })).toBe(true);
    expect(ev0({ $regexFind: { input: 'éab12', regex: '(\\d)(x)?' } })).toStrictEqual({
      match: '1',
      idx: new Int32(3),
      captures: ['1', null],
    });
    expect(ev0({ $regexFind: { input: null, regex: 'a' } })).toBeNull();
    expect(code(() => ev0({ $regexMatch: { input: 1, regex: 'a' } }))).toBe(51104);
  });
});

describe('array and set operators', () => {
  it('array functions', () => {
    expect(ev0({ $size: [[1, 2]] })).toStrictEqual(new Int32(2));
    expect(code(() => ev0({ $size: 'x' }))).toBe(17124);
    expect(ev0({ $arrayElemAt: [[1, 2, 3], -1] })).toBe(3);
    expect(ev0({ $arrayElemAt: [[1], 5] })).toBeUndefined();
    expect(ev0({ $first: [[7, 8]] })).toBe(7);
    expect(ev0({ $filter: { input: [1, 2, 3], cond: { $gt: ['$$this', 1] } } })).toStrictEqual([
      2, 3,
    ]);
    expect(
      ev0({ $map: { input: [1, 2], as: 'x', in: { $multiply: ['$$x', new Int32(2)] } } }),
    ).toStrictEqual([new Int32(2), new Int32(4)]);
    expect(
      ev0({
        $reduce: { input: ['a', 'b'], initialValue: '', in: { $concat: ['$$value', '$$this'] } },
      }),
    ).toBe('ab');
    expect(ev0({ $in: [2, [1, 2]] })).toBe(true);
    expect(code(() => ev0({ $in: [2, 'x'] }))).toBe(40081);
    expect(ev0({ $concatArrays: [[1], [2]] })).toStrictEqual([1, 2]);
    expect(ev0({ $slice: [[1, 2, 3, 4], -2] })).toStrictEqual([3, 4]);
    expect(ev0({ $slice: [[1, 2, 3, 4], 1, 2] })).toStrictEqual([2, 3]);
    expect(ev0({ $reverseArray: [[1, 2]] })).toStrictEqual([2, 1]);
    expect(ev0({ $range: [0, 6, 2] })).toStrictEqual([new Int32(0), new Int32(2), new Int32(4)]);
    expect(ev0({ $indexOfArray: [['a', 'b'], 'b'] })).toStrictEqual(new Int32(1));
    expect(ev0({ $zip: { inputs: [[1, 2], ['a']] } })).toStrictEqual([[1, 'a']]);
    expect(ev0({ $sortArray: { input: [{ a: 2 }, { a: 1 }], sortBy: { a: 1 } } })).toStrictEqual([
      { a: 1 },
      { a: 2 },
    ]);
    expect(ev0({ $isArray: [[1]] })).toBe(true);
  });
  it('set functions', () => {
    expect(
      ev0({
        $setUnion: [
          [1, 2],
          [2, 3],
        ],
      }),
    ).toStrictEqual([1, 2, 3]);
    expect(
      ev0({
        $setIntersection: [
          [1, 2],
          [2, 3],
        ],
      }),
    ).toStrictEqual([2]);
    expect(ev0({ $setDifference: [[1, 2], [2]] })).toStrictEqual([1]);
    expect(
      ev0({
        $setEquals: [
          [1, 2],
          [2, 1, 1],
        ],
      }),
    ).toBe(true);
    expect(ev0({ $allElementsTrue: [[1, true]] })).toBe(true);
    expect(ev0({ $anyElementTrue: [[0, false]] })).toBe(false);
  });
});

describe('type and object operators', () => {
  it('$type and conversions', () => {
    expect(ev0({ $type: '$x' })).toBe('missing');
    expect(ev0({ $type: new Int32(1) })).toBe('int');
    expect(ev0({ $toInt: '42' })).toStrictEqual(new Int32(42));
    expect(ev0({ $toLong: new Double(5.9) })).toStrictEqual(Long.fromNumber(5));
    expect(ev0({ $toDouble: true })).toStrictEqual(new Double(1));
    expect(String(ev0({ $toDecimal: new Int32(3) }))).toBe('3');
    expect(ev0({ $toString: new Int32(7) })).toBe('7');
    expect(ev0({ $toBool: '' })).toBe(true);
    expect(ev0({ $toObjectId: '5ab9cbfa31c2ab715d42129e' })).toStrictEqual(
      new ObjectId('5ab9cbfa31c2ab715d42129e'),
    );
    expect(ev0({ $toDate: '2018-03-03T00:00:00Z' })).toStrictEqual(
      new Date('2018-03-03T00:00:00Z'),
    );
    expect(code(() => ev0({ $toInt: 'abc' }))).toBe(241);
    expect(ev0({ $convert: { input: 'abc', to: 'int', onError: -1 } })).toBe(-1);
    expect(ev0({ $convert: { input: null, to: 'int', onNull: 0 } })).toBe(0);
    expect(ev0({ $isNumber: new Long(1) })).toBe(true);
  });
  it('object functions', () => {
    expect(ev0({ $mergeObjects: [{ a: 1 }, null, { b: 2, a: 3 }] })).toStrictEqual({ a: 3, b: 2 });
    expect(ev0({ $getField: 'a.b' }, { 'a.b': 5 })).toBe(5);
    expect(ev0({ $setField: { field: 'x', input: { a: 1 }, value: 2 } })).toStrictEqual({
      a: 1,
      x: 2,
    });
    expect(ev0({ $unsetField: { field: 'a', input: { a: 1, b: 2 } } })).toStrictEqual({ b: 2 });
    expect(ev0({ $objectToArray: { a: 1 } })).toStrictEqual([{ k: 'a', v: 1 }]);
    expect(ev0({ $arrayToObject: [[['a', 1]]] })).toStrictEqual({ a: 1 });
  });
});

describe('date and misc operators', () => {
  const d = new Date('2024-03-10T15:04:05.123Z'); // a Sunday
  it('date parts', () => {
    expect(ev0({ $year: d })).toStrictEqual(new Int32(2024));
    expect(ev0({ $month: d })).toStrictEqual(new Int32(3));
    expect(ev0({ $dayOfWeek: d })).toStrictEqual(new Int32(1));
    expect(ev0({ $dayOfYear: d })).toStrictEqual(new Int32(70));
    expect(ev0({ $hour: { date: d, timezone: '+02:00' } })).toStrictEqual(new Int32(17));
    expect(ev0({ $millisecond: d })).toStrictEqual(new Int32(123));
    expect(code(() => ev0({ $year: 'x' }))).toBe(16006);
  });
  it('$dateToString / $dateFromString', () => {
    expect(ev0({ $dateToString: { date: d } })).toBe('2024-03-10T15:04:05.123Z');
    expect(ev0({ $dateToString: { date: d, format: '%Y/%m/%d %j %%' } })).toBe('2024/03/10 070 %');
    expect(ev0({ $dateToString: { date: null, onNull: 'none' } })).toBe('none');
    expect(ev0({ $dateFromString: { dateString: '2024-03-10T15:04:05.123Z' } })).toStrictEqual(d);
    expect(
      ev0({ $dateFromString: { dateString: '10/03/2024', format: '%d/%m/%Y' } }),
    ).toStrictEqual(new Date('2024-03-10T00:00:00Z'));
    expect(ev0({ $dateFromString: { dateString: 'nope', onError: 'bad' } })).toBe('bad');
  });
  it('misc', () => {
    const r = ev0({ $rand: {} });
    expect(r).toBeInstanceOf(Double);
    expect(ev0({ $binarySize: 'héllo' })).toStrictEqual(new Int32(6));
    expect(ev0({ $bsonSize: {} })).toStrictEqual(new Int32(5));
    const ts = new Timestamp({ t: 100, i: 7 });
    expect(ev0({ $tsSecond: ts })).toStrictEqual(Long.fromNumber(100));
    expect(ev0({ $tsIncrement: ts })).toStrictEqual(Long.fromNumber(7));
    expect(ev0({ $sum: [[new Int32(1), new Int32(2), 'x']] })).toStrictEqual(new Int32(3));
    expect(ev0({ $avg: [new Int32(1), new Int32(2)] })).toStrictEqual(new Double(1.5));
  });
});
