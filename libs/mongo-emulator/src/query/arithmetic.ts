import { Decimal128, Double, Int32, Long } from 'bson';
import { bsonTypeOf, toNum } from '../bson/compare';

/**
 * $inc/$mul arithmetic with mongod's SafeNum typing: the result has the wider operand type
 * (int < long < double < decimal); int32 overflow widens to int64; int64 overflow is
 * invalid (undefined) and the caller reports "Failed to apply $inc operations ...".
 */
type Kind = 'int' | 'long' | 'double' | 'decimal';
const WIDTH: Record<Kind, number> = { int: 0, long: 1, double: 2, decimal: 3 };
const INT32 = [-(2n ** 31n), 2n ** 31n - 1n];
const INT64 = [-(2n ** 63n), 2n ** 63n - 1n];

function kindOf(v: unknown): Kind {
  return bsonTypeOf(v) as Kind;
}

export function addNumbers(a: unknown, b: unknown): unknown {
  return combine(a, b, 'add');
}

export function multiplyNumbers(a: unknown, b: unknown): unknown {
  return combine(a, b, 'mul');
}

function combine(a: unknown, b: unknown, op: 'add' | 'mul'): unknown {
  const ka = kindOf(a);
  const kb = kindOf(b);
  const kind = WIDTH[ka] >= WIDTH[kb] ? ka : kb;
  if (kind === 'decimal') return decimalOp(a, b, op);
  if (kind === 'double') {
    const x = asDouble(a);
    const y = asDouble(b);
    return new Double(op === 'add' ? x + y : x * y);
  }
  const x = toNum(a).v as bigint;
  const y = toNum(b).v as bigint;
  const r = op === 'add' ? x + y : x * y;
  if (kind === 'int' && r >= INT32[0] && r <= INT32[1]) return new Int32(Number(r));
  if (r < INT64[0] || r > INT64[1]) return undefined;
  return Long.fromBigInt(r);
}

function asDouble(v: unknown): number {
  const n = toNum(v);
  return typeof n.v === 'bigint' ? Number(n.v) : n.v;
}

interface Dec {
  coef: bigint;
  exp: number;
}

function parseDecimal(v: unknown): Dec | number {
  const s = kindOf(v) === 'decimal' ? (v as Decimal128).toString() : numericString(v);
  const m = /^([+-]?)(\d+)(?:\.(\d*))?(?:E([+-]?\d+))?$/i.exec(s);
  if (!m) return Number(s.replace(/^-?NaN$/, 'NaN'));
  const frac = m[3] ?? '';
  const coef = BigInt(m[2] + frac) * (m[1] === '-' ? -1n : 1n);
  return { coef, exp: Number(m[4] ?? 0) - frac.length };
}

function numericString(v: unknown): string {
  const n = toNum(v);
  return typeof n.v === 'bigint' ? n.v.toString() : String(n.v).replace('e', 'E');
}

/** Exact decimal arithmetic on coefficient/exponent pairs (34-digit rounding is a gap). */
function decimalOp(a: unknown, b: unknown, op: 'add' | 'mul'): Decimal128 {
  const x = parseDecimal(a);
  const y = parseDecimal(b);
  if (typeof x === 'number' || typeof y === 'number') {
    const nx = typeof x === 'number' ? x : Number(`${x.coef}E${x.exp}`);
    const ny = typeof y === 'number' ? y : Number(`${y.coef}E${y.exp}`);
    const r = op === 'add' ? nx + ny : nx * ny;
    return Decimal128.fromString(Number.isNaN(r) ? 'NaN' : r > 0 ? 'Infinity' : '-Infinity');
  }
  let coef: bigint;
  let exp: number;
  if (op === 'mul') {
    coef = x.coef * y.coef;
    exp = x.exp + y.exp;
  } else {
    exp = Math.min(x.exp, y.exp);
    coef = x.coef * 10n ** BigInt(x.exp - exp) + y.coef * 10n ** BigInt(y.exp - exp);
  }
  return Decimal128.fromString(`${coef}E${exp}`);
}
