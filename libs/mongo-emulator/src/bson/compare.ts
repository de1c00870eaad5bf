import type {
  Binary,
  BSONRegExp,
  Code,
  Decimal128,
  Document,
  Long,
  ObjectId,
  Timestamp,
} from 'bson';
import { compareExact } from './exact-number';

/**
 * MongoDB's canonical type order (bsontypes.h canonicalizeBSONType): values of different
 * canonical types compare by this rank; all numeric types share one rank and compare by value.
 */
export const CanonicalRank = {
  minKey: -1,
  undefined: 0,
  null: 5,
  number: 10,
  string: 15, // string and symbol
  object: 20,
  array: 25,
  binData: 30,
  objectId: 35,
  bool: 40,
  date: 45,
  timestamp: 47,
  regex: 50,
  dbPointer: 55,
  javascript: 60,
  javascriptWithScope: 65,
  maxKey: 100,
} as const;

/** The `$type` alias of a value, as MongoDB names BSON types. */
export type BsonTypeName =
  | 'double'
  | 'string'
  | 'object'
  | 'array'
  | 'binData'
  | 'undefined'
  | 'objectId'
  | 'bool'
  | 'date'
  | 'null'
  | 'regex'
  | 'dbPointer'
  | 'javascript'
  | 'symbol'
  | 'javascriptWithScope'
  | 'int'
  | 'timestamp'
  | 'long'
  | 'decimal'
  | 'minKey'
  | 'maxKey';

export const BSON_TYPE_NUMBERS: Record<BsonTypeName, number> = {
  double: 1,
  string: 2,
  object: 3,
  array: 4,
  binData: 5,
  undefined: 6,
  objectId: 7,
  bool: 8,
  date: 9,
  null: 10,
  regex: 11,
  dbPointer: 12,
  javascript: 13,
  symbol: 14,
  javascriptWithScope: 15,
  int: 16,
  timestamp: 17,
  long: 18,
  decimal: 19,
  minKey: -1,
  maxKey: 127,
};

/** BSON type of a decoded value (values decoded with the exact codec: no promotion). */
export function bsonTypeOf(value: unknown): BsonTypeName {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    case 'number':
      return Number.isInteger(value) && Math.abs(value) <= 0x7fffffff && !Object.is(value, -0)
        ? 'int'
        : 'double';
    case 'bigint':
      return 'long';
  }
  if (Array.isArray(value)) return 'array';
  if (value instanceof Date) return 'date';
  const tag = (value as { _bsontype?: string })._bsontype;
  switch (tag) {
    case 'Int32':
      return 'int';
    case 'Double':
      return 'double';
    case 'Long':
      return 'long';
    case 'Decimal128':
      return 'decimal';
    case 'ObjectId':
    case 'ObjectID':
      return 'objectId';
    case 'Binary':
      return 'binData';
    case 'Timestamp':
      return 'timestamp';
    case 'BSONRegExp':
      return 'regex';
    case 'Code':
      return (value as Code).scope ? 'javascriptWithScope' : 'javascript';
    case 'BSONSymbol':
    case 'Symbol':
      return 'symbol';
    case 'MinKey':
      return 'minKey';
    case 'MaxKey':
      return 'maxKey';
    case 'DBRef':
      return 'object';
    case 'DBPointer':
      return 'dbPointer';
  }
  if (value instanceof RegExp) return 'regex';
  if (value instanceof Uint8Array) return 'binData';
  return 'object';
}

export function isNumeric(value: unknown): boolean {
  const t = bsonTypeOf(value);
  return t === 'int' || t === 'long' || t === 'double' || t === 'decimal';
}

export function canonicalRank(value: unknown): number {
  const t = bsonTypeOf(value);
  switch (t) {
    case 'int':
    case 'long':
    case 'double':
    case 'decimal':
      return CanonicalRank.number;
    case 'symbol':
    case 'string':
      return CanonicalRank.string;
    default:
      return CanonicalRank[t as keyof typeof CanonicalRank];
  }
}

/**
 * A numeric value in a form that compares exactly: integers as bigint, everything else as a
 * JS number (Decimal128 is converted through its string form; values beyond double precision
 * compare approximately — a documented limit).
 */
type Num = { kind: 'int'; v: bigint } | { kind: 'float'; v: number };

export function toNum(value: unknown): Num {
  if (typeof value === 'number')
    return Number.isInteger(value)
      ? { kind: 'int', v: BigInt(value) }
      : { kind: 'float', v: value };
  if (typeof value === 'bigint') return { kind: 'int', v: value };
  const tag = (value as { _bsontype?: string })._bsontype;
  if (tag === 'Int32') return { kind: 'int', v: BigInt((value as { value: number }).value) };
  if (tag === 'Long') return { kind: 'int', v: (value as Long).toBigInt() };
  if (tag === 'Double') {
    const v = (value as { value: number }).value;
    return Number.isInteger(v) && Math.abs(v) < 2 ** 63
      ? { kind: 'int', v: BigInt(v) }
      : { kind: 'float', v };
  }
  if (tag === 'Decimal128') {
    const s = (value as Decimal128).toString();
    if (/^-?\d+$/.test(s)) return { kind: 'int', v: BigInt(s) };
    const v = decimalStringToNumber(s);
    return Number.isInteger(v) && Math.abs(v) < 2 ** 63
      ? { kind: 'int', v: BigInt(v) }
      : { kind: 'float', v };
  }
  throw new TypeError('not a number');
}

function decimalStringToNumber(s: string): number {
  if (s === 'NaN' || s === '-NaN') return NaN;
  if (s === 'Infinity') return Infinity;
  if (s === '-Infinity') return -Infinity;
  return Number(s);
}

/** JS number for a numeric BSON value (lossy for large Int64/Decimal128). */
export function toNumber(value: unknown): number {
  const n = toNum(value);
  return n.kind === 'int' ? Number(n.v) : n.v;
}

export function compareNumbers(a: unknown, b: unknown): number {
  // Fast path (index lookups compare numbers constantly): two values exactly representable
  // as doubles compare as doubles; BigInt conversion is only needed beyond 2^53.
  const fa = safeNumber(a);
  if (fa !== undefined) {
    const fb = safeNumber(b);
    if (fb !== undefined) return fa < fb ? -1 : fa > fb ? 1 : 0;
  }
  if (isDecimal(a) || isDecimal(b)) return compareExact(a, b);
  const x = toNum(a);
  const y = toNum(b);
  if (x.kind === 'int' && y.kind === 'int') return x.v < y.v ? -1 : x.v > y.v ? 1 : 0;
  const xv = x.kind === 'int' ? Number(x.v) : x.v;
  const yv = y.kind === 'int' ? Number(y.v) : y.v;
  // MongoDB orders NaN below every other number and equal to itself.
  const xn = Number.isNaN(xv);
  const yn = Number.isNaN(yv);
  if (xn || yn) return xn && yn ? 0 : xn ? -1 : 1;
  if (xv < yv) return -1;
  if (xv > yv) return 1;
  // Equal as doubles: break ties exactly when one side is a large integer.
  if (x.kind === 'int' && y.kind === 'float' && Number.isFinite(yv)) return cmpBigFloat(x.v, yv);
  if (x.kind === 'float' && y.kind === 'int' && Number.isFinite(xv)) return -cmpBigFloat(y.v, xv);
  return 0;
}

/** The value as a JS number when that is exact and not NaN; otherwise undefined. */
function safeNumber(v: unknown): number | undefined {
  let n: number;
  if (typeof v === 'number') n = v;
  else {
    const tag = (v as { _bsontype?: string })._bsontype;
    if (tag === 'Int32' || tag === 'Double') n = (v as { value: number }).value;
    else if (tag === 'Long') {
      const long = v as Long;
      // high word in (-2^21, 2^21) keeps |value| below 2^53.
      if (long.high >= 0x200000 || long.high < -0x200000) return undefined;
      n = long.toNumber();
    } else return undefined;
  }
  return Number.isNaN(n) ? undefined : n;
}

function isDecimal(v: unknown): boolean {
  return typeof v === 'object' && (v as { _bsontype?: string })._bsontype === 'Decimal128';
}

function cmpBigFloat(i: bigint, f: number): number {
  const fi = BigInt(Math.trunc(f));
  if (i !== fi) return i < fi ? -1 : 1;
  const frac = f - Math.trunc(f);
  return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

/** Compares strings by UTF-8 bytes, as MongoDB does without a collation. */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  // UTF-16 order equals UTF-8 byte order unless surrogates meet BMP chars above U+E000.
  if (!/[\ud800-\udfff]/.test(a) && !/[\ud800-\udfff]/.test(b)) return a < b ? -1 : 1;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(
    Buffer.from(a.buffer, a.byteOffset, a.byteLength),
    Buffer.from(b.buffer, b.byteOffset, b.byteLength),
  );
}

function binaryBytes(b: Binary): Uint8Array {
  return b.buffer.subarray(0, b.position);
}

/** Orders two strings; a collation supplies its own (field names never use it). */
export type StringComparator = (a: string, b: string) => number;

/**
 * Total order over BSON values, as MongoDB's woCompare. Without `strCmp` strings compare
 * by bytes (no collation); with it, every nested string value uses the collation's order.
 */
export function compareValues(
  a: unknown,
  b: unknown,
  strCmp: StringComparator = compareStrings,
): number {
  const ra = canonicalRank(a);
  const rb = canonicalRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case CanonicalRank.minKey:
    case CanonicalRank.maxKey:
    case CanonicalRank.undefined:
    case CanonicalRank.null:
      return 0;
    case CanonicalRank.number:
      return compareNumbers(a, b);
    case CanonicalRank.string:
      return strCmp(stringOf(a), stringOf(b));
    case CanonicalRank.object:
      return compareDocuments(a as Document, b as Document, strCmp);
    case CanonicalRank.array:
      return compareArrays(a as unknown[], b as unknown[], strCmp);
    case CanonicalRank.binData: {
      const x = a as Binary;
      const y = b as Binary;
      const xb = binaryBytes(x);
      const yb = binaryBytes(y);
      if (xb.length !== yb.length) return xb.length < yb.length ? -1 : 1;
      if (x.sub_type !== y.sub_type) return x.sub_type < y.sub_type ? -1 : 1;
      return compareBytes(xb, yb);
    }
    case CanonicalRank.objectId:
      return compareBytes((a as ObjectId).id, (b as ObjectId).id);
    case CanonicalRank.bool:
      return a === b ? 0 : a ? 1 : -1;
    case CanonicalRank.date: {
      const x = (a as Date).getTime();
      const y = (b as Date).getTime();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case CanonicalRank.timestamp: {
      const x = a as Timestamp;
      const y = b as Timestamp;
      if (x.t !== y.t) return x.t < y.t ? -1 : 1;
      return x.i < y.i ? -1 : x.i > y.i ? 1 : 0;
    }
    case CanonicalRank.regex: {
      const x = a as BSONRegExp;
      const y = b as BSONRegExp;
      return compareStrings(x.pattern, y.pattern) || compareStrings(x.options, y.options);
    }
    case CanonicalRank.javascript:
    case CanonicalRank.javascriptWithScope: {
      const x = a as Code;
      const y = b as Code;
      return (
        compareStrings(String(x.code), String(y.code)) ||
        compareDocuments((x.scope ?? {}) as Document, (y.scope ?? {}) as Document)
      );
    }
    default:
      return 0;
  }
}

function stringOf(v: unknown): string {
  return typeof v === 'string' ? v : String((v as { value: string }).value);
}

/** Field by field: canonical type, then field name, then value; a prefix sorts first. */
export function compareDocuments(
  a: Document,
  b: Document,
  strCmp: StringComparator = compareStrings,
): number {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  const n = Math.min(ka.length, kb.length);
  for (let i = 0; i < n; i++) {
    const va = a[ka[i]];
    const vb = b[kb[i]];
    const ra = canonicalRank(va);
    const rb = canonicalRank(vb);
    if (ra !== rb) return ra < rb ? -1 : 1;
    const byName = compareStrings(ka[i], kb[i]);
    if (byName !== 0) return byName;
    const byValue = compareValues(va, vb, strCmp);
    if (byValue !== 0) return byValue;
  }
  return ka.length === kb.length ? 0 : ka.length < kb.length ? -1 : 1;
}

function compareArrays(a: unknown[], b: unknown[], strCmp: StringComparator): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const ra = canonicalRank(a[i]);
    const rb = canonicalRank(b[i]);
    if (ra !== rb) return ra < rb ? -1 : 1;
    const c = compareValues(a[i], b[i], strCmp);
    if (c !== 0) return c;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** Equality as MongoDB's `$eq` on whole values: numeric types equal by value. */
export function valuesEqual(a: unknown, b: unknown, strCmp?: StringComparator): boolean {
  return compareValues(a, b, strCmp) === 0;
}
