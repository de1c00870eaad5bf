import { CommandError } from '../../errors';
import { bsonTypeOf } from '../../bson/compare';
import {
  asBigInt,
  asDouble,
  decAdd,
  decDiv,
  decIsZero,
  decimalFromNumber,
  decMul,
  decNeg,
  double,
  fitsInt64,
  fromDec,
  integerResult,
  intOrLong,
  numberAs,
  numericKind,
  parseDec,
  toDec,
  widerKind,
  type Dec,
  type NumericKind,
} from './numeric';
import { evalArgs, isNullish, typeName, type EvalContext, type OperatorTable } from './types';

/**
 * Running sum/product with MongoDB's widening: integers accumulate exactly (bigint) while
 * the widest kind is int/long, switch to double on long overflow or on the first double,
 * and to exact decimal on the first decimal.
 */
class Accumulator {
  kind: NumericKind = 'int';
  private big: bigint;
  private dbl = 0;
  private dec: Dec;

  constructor(private readonly op: 'add' | 'mul') {
    this.big = op === 'add' ? 0n : 1n;
    this.dec = { kind: 'finite', coef: this.big, exp: 0 };
  }

  push(v: unknown): void {
    const k = numericKind(v) as NumericKind;
    const wider = widerKind(this.kind, k);
    if (wider !== this.kind) {
      if (wider === 'double' && this.kind !== 'double') this.dbl = Number(this.big);
      if (wider === 'decimal') {
        this.dec =
          this.kind === 'double'
            ? toDec(double(this.dbl))
            : { kind: 'finite', coef: this.big, exp: 0 };
      }
      this.kind = wider;
    }
    switch (this.kind) {
      case 'int':
      case 'long': {
        const r = this.op === 'add' ? this.big + asBigInt(v) : this.big * asBigInt(v);
        if (fitsInt64(r)) {
          this.big = r;
        } else {
          this.kind = 'double';
          this.dbl = Number(r);
        }
        break;
      }
      case 'double':
        this.dbl = this.op === 'add' ? this.dbl + asDouble(v) : this.dbl * asDouble(v);
        break;
      case 'decimal':
        this.dec = this.op === 'add' ? decAdd(this.dec, toDec(v)) : decMul(this.dec, toDec(v));
        break;
    }
  }

  /** Milliseconds value for date arithmetic (decimal/double rounded like MongoDB). */
  millis(): number {
    if (this.kind === 'int' || this.kind === 'long') return Number(this.big);
    if (this.kind === 'double') return Math.round(this.dbl);
    return Math.trunc(Number(fromDec(this.dec).toString()));
  }

  result(): unknown {
    switch (this.kind) {
      case 'int':
        return intOrLong(this.big);
      case 'long':
        return integerResult(this.big, 'long');
      case 'double':
        return double(this.dbl);
      case 'decimal':
        return fromDec(this.dec);
    }
  }
}

function add(operand: unknown, ctx: EvalContext): unknown {
  const acc = new Accumulator('add');
  let date: Date | undefined;
  for (const v of evalArgs('$add', operand, ctx, 0, Infinity)) {
    if (isNullish(v)) return null;
    if (v instanceof Date) {
      if (date) throw new CommandError(16612, 'only one date allowed in an $add expression');
      date = v;
      continue;
    }
    if (!numericKind(v)) {
      throw new CommandError(
        'TypeMismatch',
        `$add only supports numeric or date types, not ${typeName(v)}`,
      );
    }
    acc.push(v);
  }
  return date ? new Date(date.getTime() + acc.millis()) : acc.result();
}

function multiply(operand: unknown, ctx: EvalContext): unknown {
  const acc = new Accumulator('mul');
  for (const v of evalArgs('$multiply', operand, ctx, 0, Infinity)) {
    if (isNullish(v)) return null;
    if (!numericKind(v)) {
      throw new CommandError(
        'TypeMismatch',
        `$multiply only supports numeric types, not ${typeName(v)}`,
      );
    }
    acc.push(v);
  }
  return acc.result();
}

/** Difference of two numerics with the same widening/overflow rules as $add. */
export function subtractNumbers(a: unknown, b: unknown): unknown {
  const kind = widerKind(numericKind(a)!, numericKind(b)!);
  if (kind === 'decimal') return fromDec(decAdd(toDec(a), decNeg(toDec(b))));
  if (kind === 'double') return double(asDouble(a) - asDouble(b));
  return integerResult(asBigInt(a) - asBigInt(b), kind);
}

function subtract(operand: unknown, ctx: EvalContext): unknown {
  const [a, b] = evalArgs('$subtract', operand, ctx, 2);
  if (isNullish(a) || isNullish(b)) return null;
  if (numericKind(a) && numericKind(b)) return subtractNumbers(a, b);
  if (a instanceof Date) {
    if (b instanceof Date) return intOrLongAsLong(BigInt(a.getTime() - b.getTime()));
    if (numericKind(b)) {
      const ms = numericKind(b) === 'double' ? Math.round(asDouble(b)) : asDouble(b);
      return new Date(a.getTime() - ms);
    }
  }
  throw new CommandError('TypeMismatch', `can't $subtract ${typeName(b)} from ${typeName(a)}`);
}

/** date - date is always a long (milliseconds). */
function intOrLongAsLong(b: bigint): unknown {
  return integerResult(b, 'long');
}

function divide(operand: unknown, ctx: EvalContext): unknown {
  const [a, b] = evalArgs('$divide', operand, ctx, 2);
  if (numericKind(a) && numericKind(b)) {
    if (numericKind(a) === 'decimal' || numericKind(b) === 'decimal') {
      const den = toDec(b);
      if (decIsZero(den)) throw new CommandError('BadValue', "can't $divide by zero");
      return fromDec(decDiv(toDec(a), den));
    }
    if (asDouble(b) === 0) throw new CommandError('BadValue', "can't $divide by zero");
    return double(asDouble(a) / asDouble(b));
  }
  if (isNullish(a) || isNullish(b)) return null;
  throw new CommandError(
    'TypeMismatch',
    `$divide only supports numeric types, not ${typeName(a)} and ${typeName(b)}`,
  );
}

function mod(operand: unknown, ctx: EvalContext): unknown {
  const [a, b] = evalArgs('$mod', operand, ctx, 2);
  if (isNullish(a) || isNullish(b)) return null;
  const ka = numericKind(a);
  const kb = numericKind(b);
  if (!ka || !kb) {
    throw new CommandError(
      16611,
      `$mod only supports numeric types, not ${typeName(a)} and ${typeName(b)}`,
    );
  }
  const kind = widerKind(ka, kb);
  if (kind === 'decimal') {
    const x = Number(String(fromDec(toDec(a))));
    const y = Number(String(fromDec(toDec(b))));
    if (y === 0) throw new CommandError(16610, "can't $mod by zero");
    return decimalFromNumber(x % y);
  }
  if (kind === 'double') {
    if (asDouble(b) === 0) throw new CommandError(16610, "can't $mod by zero");
    return double(asDouble(a) % asDouble(b));
  }
  const y = asBigInt(b);
  if (y === 0n) throw new CommandError(16610, "can't $mod by zero");
  return integerResult(asBigInt(a) % y, kind);
}

/** Shared shape of single-numeric-argument operators (ExpressionSingleNumericArg). */
function unaryNumeric(
  name: string,
  fn: (v: unknown, kind: NumericKind) => unknown,
): (operand: unknown, ctx: EvalContext) => unknown {
  return (operand, ctx) => {
    const [v] = evalArgs(name, operand, ctx, 1);
    if (isNullish(v)) return null;
    const kind = numericKind(v);
    if (!kind) {
      throw new CommandError(28765, `${name} only supports numeric types, not ${typeName(v)}`);
    }
    return fn(v, kind);
  };
}

/** ceil/floor keep the input type: integers are already integral. */
function integral(fn: (n: number) => number) {
  return (v: unknown, kind: NumericKind): unknown => {
    if (kind === 'int' || kind === 'long') return v;
    return numberAs(kind, fn(asDecimalAwareNumber(v)));
  };
}

function asDecimalAwareNumber(v: unknown): number {
  return bsonTypeOf(v) === 'decimal' ? Number(String(v)) : asDouble(v);
}

function abs(v: unknown, kind: NumericKind): unknown {
  if (kind === 'decimal') {
    const d = toDec(v);
    return fromDec(
      d.kind === 'finite' && d.coef < 0n ? decNeg(d) : d.kind === 'inf' ? { ...d, neg: false } : d,
    );
  }
  if (kind === 'double') return double(Math.abs(asDouble(v)));
  const b = asBigInt(v);
  if (b === -(2n ** 63n)) throw new CommandError(28680, "can't take $abs of long long min");
  const r = b < 0n ? -b : b;
  return kind === 'long' ? integerResult(r, 'long') : intOrLong(r);
}

/** Round-half-to-even at `places` decimal digits, as $round documents. */
function roundHalfEven(x: number, places: number): number {
  const f = 10 ** places;
  const scaled = x * f;
  const r = Math.round(scaled);
  const isHalf = Math.abs(scaled % 1) === 0.5;
  const even = isHalf && r % 2 !== 0 ? r - 1 : r;
  return even / f;
}

function roundOrTrunc(name: '$round' | '$trunc') {
  return (operand: unknown, ctx: EvalContext): unknown => {
    const [v, placeArg] = evalArgs(name, operand, ctx, 1, 2);
    if (isNullish(v) || (placeArg !== undefined && isNullish(placeArg))) return null;
    const kind = numericKind(v);
    if (!kind) {
      throw new CommandError(51081, `${name} only supports numeric types, not ${typeName(v)}`);
    }
    const places = placeArg === undefined ? 0 : Number(asBigInt(placeArg));
    if (places < -20 || places > 100) {
      throw new CommandError(
        51083,
        `cannot apply ${name} with precision value ${places} value must be in [-20, 100]`,
      );
    }
    const op = (x: number, p: number): number =>
      name === '$round' ? roundHalfEven(x, p) : Math.trunc(x * 10 ** p) / 10 ** p;
    if (kind === 'int' || kind === 'long') {
      if (places >= 0) return v;
      const unit = 10n ** BigInt(-places);
      const b = asBigInt(v);
      let q = b / unit;
      const r = b % unit;
      if (name === '$round') {
        const twice = (r < 0n ? -r : r) * 2n;
        if (twice > unit || (twice === unit && q % 2n !== 0n)) q += b < 0n ? -1n : 1n;
      }
      return integerResult(q * unit, kind);
    }
    return numberAs(kind, op(asDecimalAwareNumber(v), places));
  };
}

function pow(operand: unknown, ctx: EvalContext): unknown {
  const [base, exp] = evalArgs('$pow', operand, ctx, 2);
  if (isNullish(base) || isNullish(exp)) return null;
  const kb = numericKind(base);
  const ke = numericKind(exp);
  if (!kb) throw new CommandError(28762, `$pow's base must be numeric, not ${typeName(base)}`);
  if (!ke) throw new CommandError(28763, `$pow's exponent must be numeric, not ${typeName(exp)}`);
  const x = asDecimalAwareNumber(base);
  const y = asDecimalAwareNumber(exp);
  if (x === 0 && y < 0) {
    throw new CommandError(28764, '$pow cannot take a base of 0 and a negative exponent');
  }
  const kind = widerKind(kb, ke);
  if (kind === 'decimal') return decimalFromNumber(x ** y);
  if (kind === 'double') return double(x ** y);
  // Integral base and exponent: exact when the result fits, else widen like MongoDB.
  const b = asBigInt(base);
  const e = asBigInt(exp);
  if (e < 0n) {
    if (b === 1n) return integerResult(1n, kind);
    if (b === -1n) return integerResult(e % 2n === 0n ? 1n : -1n, kind);
    return double(x ** y);
  }
  const r = e > 4096n ? undefined : b ** e;
  if (r !== undefined && fitsInt64(r))
    return kind === 'int' ? intOrLong(r) : integerResult(r, 'long');
  return double(x ** y);
}

function transcendental(
  name: string,
  fn: (n: number) => number,
  check?: (n: number) => void,
): (operand: unknown, ctx: EvalContext) => unknown {
  return unaryNumeric(name, (v, kind) => {
    const n = asDecimalAwareNumber(v);
    check?.(n);
    return kind === 'decimal' ? decimalFromNumber(fn(n)) : double(fn(n));
  });
}

function log(operand: unknown, ctx: EvalContext): unknown {
  const [n, base] = evalArgs('$log', operand, ctx, 2);
  if (isNullish(n) || isNullish(base)) return null;
  if (!numericKind(n))
    throw new CommandError(28756, `$log's argument must be numeric, not ${typeName(n)}`);
  if (!numericKind(base))
    throw new CommandError(28757, `$log's base must be numeric, not ${typeName(base)}`);
  const x = asDecimalAwareNumber(n);
  const b = asDecimalAwareNumber(base);
  if (!(x > 0))
    throw new CommandError(28758, `$log's argument must be a positive number, but is ${x}`);
  if (!(b > 0) || b === 1)
    throw new CommandError(
      28759,
      `$log's base must be a positive number not equal to 1, but is ${b}`,
    );
  const r = Math.log(x) / Math.log(b);
  return numericKind(n) === 'decimal' || numericKind(base) === 'decimal'
    ? decimalFromNumber(r)
    : double(r);
}

export const arithmeticOperators: OperatorTable = {
  $add: add,
  $subtract: subtract,
  $multiply: multiply,
  $divide: divide,
  $mod: mod,
  $abs: unaryNumeric('$abs', abs),
  $ceil: unaryNumeric('$ceil', integral(Math.ceil)),
  $floor: unaryNumeric('$floor', integral(Math.floor)),
  $round: roundOrTrunc('$round'),
  $trunc: roundOrTrunc('$trunc'),
  $pow: pow,
  $sqrt: transcendental('$sqrt', Math.sqrt, (n) => {
    if (n < 0) throw new CommandError(28714, "$sqrt's argument must be greater than or equal to 0");
  }),
  $exp: transcendental('$exp', Math.exp),
  $ln: transcendental('$ln', Math.log, (n) => {
    if (!(n > 0))
      throw new CommandError(28766, `$ln's argument must be a positive number, but is ${n}`);
  }),
  $log10: transcendental('$log10', Math.log10, (n) => {
    if (!(n > 0))
      throw new CommandError(28761, `$log10's argument must be a positive number, but is ${n}`);
  }),
  $log: log,
};

// Exported for accumulators ($sum/$avg) so they share the exact widening rules.
export { Accumulator as NumericAccumulator, parseDec };
