import { ObjectId, type Timestamp } from 'bson';
import { CommandError } from '../../errors';
import { BSON_TYPE_NUMBERS, bsonTypeOf, type BsonTypeName } from '../../bson/compare';
import { parseIsoDate } from './date-parse';
import {
  asBigInt,
  asDouble,
  decimalFromNumber,
  double,
  fitsInt32,
  fitsInt64,
  fromDec,
  int32,
  long,
  numericKind,
  parseDec,
  toDec,
} from './numeric';
import { formatNumber } from './string';
import {
  evalArgs,
  isDocument,
  isNullish,
  truthy,
  typeName,
  type EvalContext,
  type OperatorTable,
} from './types';

type Target = 'double' | 'string' | 'objectId' | 'bool' | 'date' | 'int' | 'long' | 'decimal';
const TARGETS: Target[] = [
  'double',
  'string',
  'objectId',
  'bool',
  'date',
  'int',
  'long',
  'decimal',
];

/** A conversion failure that onError may catch (ConversionFailure, code 241). */
class ConversionError extends CommandError {
  constructor(message: string) {
    super('ConversionFailure', message);
  }
}

const SUFFIX = ' in $convert with no onError value';

function unsupported(from: unknown, to: Target): never {
  throw new ConversionError(`Unsupported conversion from ${typeName(from)} to ${to}${SUFFIX}`);
}

function overflow(v: unknown): never {
  throw new ConversionError(`Conversion would overflow target type${SUFFIX}: ${formatNumber(v)}`);
}

function parseNumberString(s: string, integral: boolean): number | bigint {
  if (integral) {
    if (!/^[+-]?\d+$/.test(s)) {
      throw new ConversionError(
        `Failed to parse number '${s}'${SUFFIX}: Did not consume whole string.`,
      );
    }
    return BigInt(s);
  }
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(s) && !/^[+-]?(nan|inf|infinity)$/i.test(s)) {
    throw new ConversionError(
      `Failed to parse number '${s}'${SUFFIX}: Did not consume whole string.`,
    );
  }
  return /nan/i.test(s)
    ? NaN
    : /inf/i.test(s)
      ? s.startsWith('-')
        ? -Infinity
        : Infinity
      : Number(s);
}

/** Truncated integer value of a double/decimal, or overflow error when out of range. */
function truncToBig(v: unknown, fits: (b: bigint) => boolean): bigint {
  const n = bsonTypeOf(v) === 'decimal' ? Number(String(v)) : asDouble(v);
  if (!Number.isFinite(n)) overflow(v);
  const b = BigInt(Math.trunc(n));
  if (!fits(b)) overflow(v);
  return b;
}

export function dateToIsoString(d: Date): string {
  return d.toISOString();
}

/** $convert's conversion table (reference page "$convert", MongoDB 7.0). */
export function convertValue(v: unknown, to: Target): unknown {
  const t = bsonTypeOf(v);
  const kind = numericKind(v);
  switch (to) {
    case 'bool':
      return truthy(v);
    case 'string':
      if (t === 'string') return v;
      if (kind) return formatNumber(v);
      if (t === 'bool') return v ? 'true' : 'false';
      if (t === 'date') return dateToIsoString(v as Date);
      if (t === 'objectId') return (v as ObjectId).toHexString();
      return unsupported(v, to);
    case 'objectId':
      if (t === 'objectId') return v;
      if (t === 'string') {
        const s = v as string;
        if (!/^[0-9a-fA-F]{24}$/.test(s)) {
          throw new ConversionError(
            `Failed to parse objectId '${s}'${SUFFIX}: Invalid string length for parsing to OID, expected 24 but found ${s.length}`,
          );
        }
        return new ObjectId(s);
      }
      return unsupported(v, to);
    case 'date':
      if (t === 'date') return v;
      if (t === 'long') return new Date(Number(asBigInt(v)));
      if (t === 'double' || t === 'decimal') return new Date(Number(truncToBig(v, fitsInt64)));
      if (t === 'string')
        return parseIsoDate(v as string, (m) => new ConversionError(`${m}${SUFFIX}`));
      if (t === 'objectId') return (v as ObjectId).getTimestamp();
      if (t === 'timestamp') return new Date((v as Timestamp).high * 1000);
      return unsupported(v, to);
    case 'int':
    case 'long': {
      const fits = to === 'int' ? fitsInt32 : fitsInt64;
      const make = (b: bigint): unknown => (to === 'int' ? int32(Number(b)) : long(b));
      if (t === 'bool') return make(v ? 1n : 0n);
      if (t === 'int' || t === 'long') {
        const b = asBigInt(v);
        return fits(b) ? make(b) : overflow(v);
      }
      if (t === 'double' || t === 'decimal') return make(truncToBig(v, fits));
      if (t === 'string') {
        const b = parseNumberString(v as string, true) as bigint;
        return fits(b) ? make(b) : overflow(v);
      }
      if (t === 'date' && to === 'long') return long(BigInt((v as Date).getTime()));
      return unsupported(v, to);
    }
    case 'double':
      if (kind) return double(kind === 'decimal' ? Number(String(v)) : asDouble(v));
      if (t === 'bool') return double(v ? 1 : 0);
      if (t === 'string') return double(parseNumberString(v as string, false) as number);
      if (t === 'date') return double((v as Date).getTime());
      return unsupported(v, to);
    case 'decimal':
      if (kind) return fromDec(toDec(v));
      if (t === 'bool') return fromDec({ kind: 'finite', coef: v ? 1n : 0n, exp: 0 });
      if (t === 'string') {
        parseNumberString(v as string, false);
        return fromDec(parseDec(v as string));
      }
      if (t === 'date') return decimalFromNumber((v as Date).getTime());
      return unsupported(v, to);
  }
}

const BY_NUMBER = new Map<number, string>(
  Object.entries(BSON_TYPE_NUMBERS).map(([k, n]) => [n, k]),
);

function resolveTarget(to: unknown): Target {
  let name: string | undefined;
  if (typeof to === 'string') name = to;
  else if (numericKind(to)) name = BY_NUMBER.get(asDouble(to));
  else
    throw new CommandError(
      50788,
      `$convert's 'to' argument must be a string or number, but is ${typeName(to)}`,
    );
  if (name === undefined || !TARGETS.includes(name as Target)) {
    if (name !== undefined && name in BSON_TYPE_NUMBERS) {
      throw new ConversionError(`$convert with unsupported 'to' type: ${name}`);
    }
    throw new CommandError('BadValue', `Unknown type name: ${String(to)}`);
  }
  return name as Target;
}

function convert(operand: unknown, ctx: EvalContext): unknown {
  if (!isDocument(operand)) {
    throw new CommandError(
      'FailedToParse',
      `$convert expects an object of named arguments but found: ${typeName(operand)}`,
    );
  }
  for (const k of Object.keys(operand)) {
    if (!['input', 'to', 'onError', 'onNull'].includes(k)) {
      throw new CommandError('FailedToParse', `$convert found an unknown argument: ${k}`);
    }
  }
  if (!('input' in operand))
    throw new CommandError('FailedToParse', "Missing 'input' parameter to $convert");
  if (!('to' in operand))
    throw new CommandError('FailedToParse', "Missing 'to' parameter to $convert");
  const input = ctx.evaluate(operand.input);
  const to = ctx.evaluate(operand.to);
  if (isNullish(input)) return 'onNull' in operand ? ctx.evaluate(operand.onNull) : null;
  if (isNullish(to)) return null;
  const target = resolveTarget(to);
  try {
    return convertValue(input, target);
  } catch (e) {
    if (e instanceof ConversionError && 'onError' in operand) return ctx.evaluate(operand.onError);
    throw e;
  }
}

function shorthand(name: string, to: Target) {
  return (operand: unknown, ctx: EvalContext): unknown => {
    const [v] = evalArgs(name, operand, ctx, 1);
    return isNullish(v) ? null : convertValue(v, to);
  };
}

export const typeOperators: OperatorTable = {
  $type: (operand, ctx) => {
    const [v] = evalArgs('$type', operand, ctx, 1);
    return v === undefined ? 'missing' : (bsonTypeOf(v) as BsonTypeName);
  },
  $isNumber: (operand, ctx) => numericKind(evalArgs('$isNumber', operand, ctx, 1)[0]) !== undefined,
  $convert: convert,
  $toString: shorthand('$toString', 'string'),
  $toInt: shorthand('$toInt', 'int'),
  $toLong: shorthand('$toLong', 'long'),
  $toDouble: shorthand('$toDouble', 'double'),
  $toDecimal: shorthand('$toDecimal', 'decimal'),
  $toBool: shorthand('$toBool', 'bool'),
  $toObjectId: shorthand('$toObjectId', 'objectId'),
  $toDate: shorthand('$toDate', 'date'),
};
