import type { Decimal128, Long } from 'bson';

/**
 * A numeric BSON value as an exact rational `c × 10^e`, so Decimal128 compares exactly with
 * Int32/Int64/Double (mongod's compareDecimalToDouble etc.): Decimal128('1.000…001') is not 1.
 */
type Exact =
  { kind: 'nan' } | { kind: 'inf'; neg: boolean } | { kind: 'fin'; c: bigint; e: number };

function fromDouble(v: number): Exact {
  if (Number.isNaN(v)) return { kind: 'nan' };
  if (!Number.isFinite(v)) return { kind: 'inf', neg: v < 0 };
  if (Number.isSafeInteger(v)) return { kind: 'fin', c: BigInt(v), e: 0 };
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, v);
  const hi = view.getUint32(0);
  const lo = view.getUint32(4);
  const biased = (hi >>> 20) & 0x7ff;
  let m = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  if (biased !== 0) m |= 1n << 52n;
  const p = (biased === 0 ? 1 : biased) - 1075; // v = m × 2^p
  const sign = v < 0 ? -1n : 1n;
  if (p >= 0) return { kind: 'fin', c: sign * (m << BigInt(p)), e: 0 };
  return { kind: 'fin', c: sign * m * 5n ** BigInt(-p), e: p };
}

function fromDecimal(d: Decimal128): Exact {
  const s = d.toString();
  if (s === 'NaN' || s === '-NaN') return { kind: 'nan' };
  if (s === 'Infinity' || s === '-Infinity') return { kind: 'inf', neg: s[0] === '-' };
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:E([+-]\d+))?$/.exec(s);
  if (!m) return { kind: 'nan' };
  const frac = m[3] ?? '';
  const c = BigInt(m[2] + frac) * (m[1] ? -1n : 1n);
  return { kind: 'fin', c, e: Number(m[4] ?? 0) - frac.length };
}

export function toExact(value: unknown): Exact {
  if (typeof value === 'number') return fromDouble(value);
  if (typeof value === 'bigint') return { kind: 'fin', c: value, e: 0 };
  switch ((value as { _bsontype?: string })._bsontype) {
    case 'Decimal128':
      return fromDecimal(value as Decimal128);
    case 'Long':
      return { kind: 'fin', c: (value as Long).toBigInt(), e: 0 };
    default:
      return fromDouble((value as { value: number }).value);
  }
}

/** Total order: NaN below everything (equal to NaN), then -Infinity, finite values, Infinity. */
export function compareExact(a: unknown, b: unknown): number {
  return compareParts(toExact(a), toExact(b));
}

function rank(x: Exact): number {
  if (x.kind === 'nan') return 0;
  if (x.kind === 'inf') return x.neg ? 1 : 3;
  return 2;
}

function compareParts(x: Exact, y: Exact): number {
  const rx = rank(x);
  const ry = rank(y);
  if (rx !== ry) return rx < ry ? -1 : 1;
  if (x.kind !== 'fin' || y.kind !== 'fin') return 0;
  // Quick answer on signs before scaling by a power of ten.
  const sx = x.c > 0n ? 1 : x.c < 0n ? -1 : 0;
  const sy = y.c > 0n ? 1 : y.c < 0n ? -1 : 0;
  if (sx !== sy) return sx < sy ? -1 : 1;
  if (sx === 0) return 0;
  const e = Math.min(x.e, y.e);
  const a = x.c * 10n ** BigInt(x.e - e);
  const b = y.c * 10n ** BigInt(y.e - e);
  return a < b ? -1 : a > b ? 1 : 0;
}
