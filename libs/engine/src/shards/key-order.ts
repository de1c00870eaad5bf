import type { Document } from 'bson';

/**
 * MongoDB's order over BSON values without a collation (woCompare / KeyString), for values
 * decoded by `bson` without promotion: Int32/Double/Long/Decimal128 wrappers, plain numbers and
 * bigints. Shard-key ranges (config.chunks min/max) are compared in this order.
 */

/** canonicalizeBSONType (bsontypes.h), keyed by the `bson` package's `_bsontype` tags. */
const TAG_RANK: Record<string, number> = {
  MinKey: -1,
  Int32: 10,
  Double: 10,
  Long: 10,
  Decimal128: 10,
  BSONSymbol: 15,
  DBRef: 20,
  Binary: 30,
  ObjectId: 35,
  Timestamp: 47,
  BSONRegExp: 50,
  MaxKey: 127,
};

/** Canonical type rank of a value (undefined 0 < null 5 < numbers 10 < strings 15 < ...). */
function typeRank(v: unknown): number {
  switch (typeof v) {
    case 'undefined':
      return 0;
    case 'number':
    case 'bigint':
      return 10;
    case 'string':
      return 15;
    case 'boolean':
      return 40;
  }
  if (v === null) return 5;
  if (Array.isArray(v)) return 25;
  if (v instanceof Date) return 45;
  if (v instanceof RegExp) return 50;
  if (v instanceof Uint8Array) return 30;
  const tag = tagOf(v);
  if (tag === 'Code') return (v as { scope?: unknown }).scope ? 65 : 60;
  return TAG_RANK[tag ?? ''] ?? 20;
}

function tagOf(v: unknown): string | undefined {
  const tag = (v as { _bsontype?: string })._bsontype;
  return tag === 'ObjectID' ? 'ObjectId' : tag === 'Symbol' ? 'BSONSymbol' : tag;
}

const sign = (x: number | bigint): number => (x < 0 ? -1 : x > 0 ? 1 : 0);

/** Orders two values as MongoDB does (negative, 0, positive). */
export function compareKeyValues(a: unknown, b: unknown): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 10:
      return compareNumbers(a, b);
    case 15:
      return compareUtf8(textOf(a), textOf(b));
    case 20:
      return compareFields(asDocument(a), asDocument(b), true);
    case 25:
      return compareFields(a as unknown[], b as unknown[], false);
    case 30: {
      const [x, y] = [binaryOf(a), binaryOf(b)];
      return (
        sign(x.bytes.length - y.bytes.length) ||
        sign(x.sub - y.sub) ||
        compareBytes(x.bytes, y.bytes)
      );
    }
    case 35:
      return compareBytes((a as { id: Uint8Array }).id, (b as { id: Uint8Array }).id);
    case 40:
      return sign(Number(a) - Number(b));
    case 45:
      return sign((a as Date).getTime() - (b as Date).getTime());
    case 47: {
      const [x, y] = [a as { t: number; i: number }, b as { t: number; i: number }];
      return sign(x.t - y.t) || sign(x.i - y.i);
    }
    case 50: {
      const [x, y] = [regexOf(a), regexOf(b)];
      return compareUtf8(x[0], y[0]) || compareUtf8(x[1], y[1]);
    }
    case 60:
    case 65: {
      const [x, y] = [
        a as { code: string; scope?: Document },
        b as { code: string; scope?: Document },
      ];
      return compareUtf8(x.code, y.code) || compareFields(x.scope ?? {}, y.scope ?? {}, true);
    }
    default:
      return 0; // MinKey, MaxKey, undefined, null: one value each
  }
}

/** Shard-key documents: values position by position (field names are the pattern's). */
export function compareKeyDocs(a: Document, b: Document): number {
  return compareFields(a, b, false);
}

/** Element by element: canonical type, then (for documents) field name, then value. */
function compareFields(a: Document | unknown[], b: Document | unknown[], names: boolean): number {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  const n = Math.min(ka.length, kb.length);
  for (let i = 0; i < n; i++) {
    const va = (a as Document)[ka[i]!];
    const vb = (b as Document)[kb[i]!];
    const c =
      sign(typeRank(va) - typeRank(vb)) ||
      (names ? compareUtf8(ka[i]!, kb[i]!) : 0) ||
      compareKeyValues(va, vb);
    if (c !== 0) return c;
  }
  return sign(ka.length - kb.length);
}

function asDocument(v: unknown): Document {
  if (tagOf(v) !== 'DBRef') return v as Document;
  const ref = v as { collection: string; oid: unknown; db?: string; fields?: Document };
  return { $ref: ref.collection, $id: ref.oid, ...(ref.db ? { $db: ref.db } : {}), ...ref.fields };
}

function textOf(v: unknown): string {
  return typeof v === 'string' ? v : String((v as { value: unknown }).value);
}

function regexOf(v: unknown): [string, string] {
  if (v instanceof RegExp) return [v.source, v.flags];
  const r = v as { pattern: string; options: string };
  return [r.pattern, r.options];
}

function binaryOf(v: unknown): { sub: number; bytes: Uint8Array } {
  if (v instanceof Uint8Array) return { sub: 0, bytes: v };
  const b = v as { sub_type: number; buffer: Uint8Array; position: number };
  return { sub: b.sub_type, bytes: b.buffer.subarray(0, b.position) };
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return sign(Buffer.compare(a, b));
}

/** Strings by UTF-8 bytes (UTF-16 unit order agrees unless a surrogate pair is involved). */
function compareUtf8(a: string, b: string): number {
  if (a === b) return 0;
  if (/[\ud800-\udfff]/.test(a) || /[\ud800-\udfff]/.test(b)) {
    return compareBytes(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
  }
  return a < b ? -1 : 1;
}

/**
 * A number as an exact rational `n / d` (d > 0), or a special: NaN sorts below every number,
 * then -Infinity, the finite values, +Infinity (`s` = -2, -1, 0, 1).
 */
export interface ExactNumber {
  s: -2 | -1 | 0 | 1;
  n: bigint;
  d: bigint;
}

/** The value as a JS number when that is exact (NaN included); otherwise undefined. */
function plainNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  const tag = tagOf(v);
  if (tag === 'Int32' || tag === 'Double') return (v as { value: number }).value;
  if (tag === 'Long') {
    const high = (v as { high: number }).high;
    if (high < 0x200000 && high >= -0x200000) return (v as { toNumber(): number }).toNumber();
  }
  return undefined;
}

function special(x: number): ExactNumber | undefined {
  if (Number.isNaN(x)) return { s: -2, n: 0n, d: 1n };
  if (!Number.isFinite(x)) return { s: x < 0 ? -1 : 1, n: 0n, d: 1n };
  return undefined;
}

/** Exact value of any BSON number (double, int32, int64, decimal128; plain number or bigint). */
export function exactNumber(v: unknown): ExactNumber {
  if (typeof v === 'bigint') return { s: 0, n: v, d: 1n };
  const tag = tagOf(v);
  if (tag === 'Long') return { s: 0, n: BigInt((v as { toString(): string }).toString()), d: 1n };
  if (tag === 'Decimal128') return exactDecimal(String(v));
  let x = plainNumber(v);
  if (x === undefined) throw new TypeError(`not a number: ${String(v)}`);
  const sp = special(x);
  if (sp) return sp;
  let d = 1n;
  // Doubling is exact for a non-integral double (|x| < 2^52); at most 1074 steps.
  while (!Number.isInteger(x)) {
    x *= 2;
    d *= 2n;
  }
  return { s: 0, n: BigInt(x), d };
}

function exactDecimal(text: string): ExactNumber {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:E([+-]\d+))?$/i.exec(text);
  if (!m) {
    const sp = special(Number(text)); // NaN, Infinity, -Infinity
    if (!sp) throw new TypeError(`unexpected Decimal128 text ${text}`);
    return sp;
  }
  const [, minus, whole, frac = '', exp = '0'] = m;
  const e = Number(exp) - frac.length;
  let n = BigInt(whole! + frac);
  if (minus) n = -n;
  return e >= 0 ? { s: 0, n: n * 10n ** BigInt(e), d: 1n } : { s: 0, n, d: 10n ** BigInt(-e) };
}

function compareNumbers(a: unknown, b: unknown): number {
  const x = plainNumber(a);
  const y = plainNumber(b);
  if (x !== undefined && y !== undefined) {
    if (Number.isNaN(x) || Number.isNaN(y))
      return Number(Number.isNaN(y)) - Number(Number.isNaN(x));
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (tagOf(a) === 'Long' && tagOf(b) === 'Long')
    return (a as { compare(o: unknown): number }).compare(b);
  const p = exactNumber(a);
  const q = exactNumber(b);
  if (p.s !== q.s || p.s !== 0) return sign(p.s - q.s);
  return sign(p.n * q.d - q.n * p.d);
}
