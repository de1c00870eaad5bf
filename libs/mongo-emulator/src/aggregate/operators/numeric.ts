import { Decimal128, Double, Int32, Long } from 'bson';
import { bsonTypeOf, toNum, toNumber } from '../../bson/compare';

/**
 * Numeric result construction following MongoDB's widening rules
 * (int < long < double < decimal). Results are always BSON wrapper objects so that the
 * encoder writes exactly the type MongoDB would (a JS number 2 would become Int32 even
 * when MongoDB returns the double 2.0).
 */
export type NumericKind = 'int' | 'long' | 'double' | 'decimal';

const RANK: Record<NumericKind, number> = { int: 0, long: 1, double: 2, decimal: 3 };

export function numericKind(v: unknown): NumericKind | undefined {
  const t = bsonTypeOf(v);
  return t === 'int' || t === 'long' || t === 'double' || t === 'decimal' ? t : undefined;
}

export function widerKind(a: NumericKind, b: NumericKind): NumericKind {
  return RANK[a] >= RANK[b] ? a : b;
}

const INT32_MIN = -(2n ** 31n);
const INT32_MAX = 2n ** 31n - 1n;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export const fitsInt32 = (b: bigint): boolean => b >= INT32_MIN && b <= INT32_MAX;
export const fitsInt64 = (b: bigint): boolean => b >= INT64_MIN && b <= INT64_MAX;

export const int32 = (n: number): Int32 => new Int32(n);
export const double = (n: number): Double => new Double(n);
export const long = (b: bigint): Long => Long.fromBigInt(b);

/** MongoDB's Value::createIntOrLong. */
export function intOrLong(b: bigint): Int32 | Long {
  return fitsInt32(b) ? new Int32(Number(b)) : Long.fromBigInt(b);
}

/** Integral value of an int/long (callers check the kind first). */
export function asBigInt(v: unknown): bigint {
  const n = toNum(v);
  return n.kind === 'int' ? n.v : BigInt(Math.trunc(n.v));
}

export const asDouble = (v: unknown): number => toNumber(v);

/** Wraps an integer result of kind int/long, overflowing like MongoDB (int → long → double). */
export function integerResult(b: bigint, kind: 'int' | 'long'): Int32 | Long | Double {
  if (kind === 'int' && fitsInt32(b)) return int32(Number(b));
  if (fitsInt64(b)) return long(b);
  return double(Number(b));
}

// ---------------------------------------------------------------------------------------------
// Decimal128 arithmetic. The bson package has no arithmetic, so finite decimals are held as an
// exact (coefficient, exponent) pair; this reproduces IEEE 754-2008 results (including the
// preferred exponent that decides how "2.50" vs "2.5" prints) for add, subtract and multiply.

export type Dec =
  | { kind: 'finite'; coef: bigint; exp: number; neg0?: boolean }
  | { kind: 'nan' }
  | { kind: 'inf'; neg: boolean };

const DEC_RE = /^([+-]?)(\d*)(?:\.(\d*))?(?:E([+-]?\d+))?$/i;

export function parseDec(s: string): Dec {
  const t = s.trim();
  if (/^[+-]?nan$/i.test(t)) return { kind: 'nan' };
  if (/^[+-]?inf(inity)?$/i.test(t)) return { kind: 'inf', neg: t.startsWith('-') };
  const m = DEC_RE.exec(t);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return { kind: 'nan' };
  const frac = m[3] ?? '';
  const coef = BigInt((m[2] || '0') + frac) * (m[1] === '-' ? -1n : 1n);
  return { kind: 'finite', coef, exp: Number(m[4] ?? 0) - frac.length };
}

/** Any numeric BSON value as a Dec (doubles via their shortest round-trip decimal string). */
export function toDec(v: unknown): Dec {
  switch (bsonTypeOf(v)) {
    case 'decimal':
      return parseDec(String(v));
    case 'int':
    case 'long':
      return { kind: 'finite', coef: asBigInt(v), exp: 0 };
    default: {
      const n = toNumber(v);
      if (Number.isNaN(n)) return { kind: 'nan' };
      if (!Number.isFinite(n)) return { kind: 'inf', neg: n < 0 };
      return parseDec(String(n));
    }
  }
}

function roundCoef(coef: bigint, exp: number, digits = 34): { coef: bigint; exp: number } {
  let c = coef;
  let e = exp;
  const neg = c < 0n;
  if (neg) c = -c;
  const len = c.toString().length;
  if (len > digits) {
    const drop = len - digits;
    const div = 10n ** BigInt(drop);
    let q = c / div;
    const r = c % div;
    const half = div / 2n;
    if (r > half || (r === half && q % 2n === 1n)) q += 1n; // round half to even
    c = q;
    e += drop;
    if (c.toString().length > digits) {
      c /= 10n;
      e += 1;
    }
  }
  return { coef: neg ? -c : c, exp: e };
}

export function fromDec(d: Dec): Decimal128 {
  if (d.kind === 'nan') return Decimal128.fromString('NaN');
  if (d.kind === 'inf') return Decimal128.fromString(d.neg ? '-Infinity' : 'Infinity');
  const { coef, exp } = roundCoef(d.coef, d.exp);
  const sign = coef === 0n && d.neg0 ? '-' : '';
  return Decimal128.fromString(`${sign}${coef}E${exp}`);
}

function decToNumber(d: Dec): number {
  if (d.kind === 'nan') return NaN;
  if (d.kind === 'inf') return d.neg ? -Infinity : Infinity;
  return Number(`${d.coef}e${d.exp}`);
}

function special(a: Dec, b: Dec, op: (x: number, y: number) => number): Dec | undefined {
  if (a.kind === 'finite' && b.kind === 'finite') return undefined;
  const r = op(decToNumber(a), decToNumber(b));
  return Number.isNaN(r)
    ? { kind: 'nan' }
    : Number.isFinite(r)
      ? parseDec(String(r))
      : { kind: 'inf', neg: r < 0 };
}

export function decAdd(a: Dec, b: Dec): Dec {
  const s = special(a, b, (x, y) => x + y);
  if (s || a.kind !== 'finite' || b.kind !== 'finite') return s as Dec;
  const exp = Math.min(a.exp, b.exp);
  const coef = a.coef * 10n ** BigInt(a.exp - exp) + b.coef * 10n ** BigInt(b.exp - exp);
  return { kind: 'finite', coef, exp };
}

export function decNeg(a: Dec): Dec {
  if (a.kind === 'finite') return { ...a, coef: -a.coef };
  if (a.kind === 'inf') return { kind: 'inf', neg: !a.neg };
  return a;
}

export function decMul(a: Dec, b: Dec): Dec {
  const s = special(a, b, (x, y) => x * y);
  if (s || a.kind !== 'finite' || b.kind !== 'finite') return s as Dec;
  return { kind: 'finite', coef: a.coef * b.coef, exp: a.exp + b.exp };
}

/** IEEE division: exact results use the preferred exponent, others round to 34 digits. */
export function decDiv(a: Dec, b: Dec): Dec {
  const s = special(a, b, (x, y) => x / y);
  if (s || a.kind !== 'finite' || b.kind !== 'finite') return s as Dec;
  const preferred = a.exp - b.exp;
  if (a.coef === 0n) return { kind: 'finite', coef: 0n, exp: preferred };
  const shift = 40;
  const scaled = a.coef * 10n ** BigInt(shift);
  let q = scaled / b.coef;
  const rem = scaled % b.coef;
  let exp = preferred - shift;
  if (rem !== 0n) {
    // Sticky digit so that rounding sees the remainder.
    q = q * 10n + (q < 0n || (q === 0n && a.coef < 0n !== b.coef < 0n) ? -1n : 1n);
    exp -= 1;
    return { kind: 'finite', ...roundCoef(q, exp) };
  }
  while (exp < preferred && q % 10n === 0n) {
    q /= 10n;
    exp += 1;
  }
  return { kind: 'finite', ...roundCoef(q, exp) };
}

export function decIsZero(a: Dec): boolean {
  return a.kind === 'finite' && a.coef === 0n;
}

/** Decimal result from a JS double computation (for transcendental functions). */
export function decimalFromNumber(n: number): Decimal128 {
  return fromDec(
    Number.isNaN(n)
      ? { kind: 'nan' }
      : Number.isFinite(n)
        ? parseDec(String(n))
        : { kind: 'inf', neg: n < 0 },
  );
}

/** Wraps a JS number result as the given kind (long/int truncated values already integral). */
export function numberAs(kind: NumericKind, n: number): unknown {
  switch (kind) {
    case 'int':
      return int32(n);
    case 'long':
      return long(BigInt(n));
    case 'double':
      return double(n);
    case 'decimal':
      return decimalFromNumber(n);
  }
}
