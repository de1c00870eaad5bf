import { Int32, Long, Timestamp, type Document } from 'bson';
import { bsonTypeOf, compareValues, isNumeric } from '../bson/compare';
import { encode } from '../bson/codec';
import { getPath, hasPath, isDocument, setPath, unsetPath } from '../bson/paths';
import { CommandError } from '../errors';
import { addNumbers, multiplyNumbers } from './arithmetic';
import { formatElement, formatValue } from './format';
import { typedPath, type UpdateLog } from './update-log';

/** What every field modifier sees: the working copy (mutated in place) and clock values. */
export interface ApplyContext {
  doc: Document;
  now: Date;
  timestamp: Timestamp;
  /** Receives what each modifier touched, for the oplog diff / updateDescription. */
  log?: UpdateLog;
}

/** True when two values are the same BSON (type and bytes): mongod's no-op test. */
export function identical(a: unknown, b: unknown): boolean {
  const quick = quickIdentical(a, b);
  if (quick !== undefined) return quick;
  return Buffer.from(encode({ v: a })).equals(Buffer.from(encode({ v: b })));
}

/**
 * `identical` without encoding for the common scalar cases ($set/$inc of a number, string or
 * boolean); undefined when unsure (the encoding then decides).
 */
function quickIdentical(a: unknown, b: unknown): boolean | undefined {
  if (typeof a === 'number') {
    // Object.is tells -0 from 0; NaN payloads are left to the bytes.
    return typeof b === 'number' && Object.is(a, b) && !Number.isNaN(a) ? true : undefined;
  }
  if (a === b) return true; // same reference, or same string/boolean/null/undefined
  if (typeof a === 'boolean' && typeof b === 'boolean') return false;
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return undefined;
  const ta = (a as { _bsontype?: unknown })._bsontype;
  const tb = (b as { _bsontype?: unknown })._bsontype;
  if (ta === undefined || ta !== tb) return undefined;
  if (ta === 'Int32') return (a as Int32).value === (b as Int32).value;
  if (ta === 'Double') {
    const x = (a as { value: number }).value;
    const y = (b as { value: number }).value;
    if (Number.isNaN(x) || Number.isNaN(y)) return undefined; // NaN payloads: compare bytes
    return Object.is(x, y);
  }
  if (ta === 'Long')
    return (a as Long).low === (b as Long).low && (a as Long).high === (b as Long).high;
  return undefined;
}

/** Number of leading components of `path` that exist in `doc`. */
export function existingPrefix(doc: Document, path: string[]): number {
  let n = 0;
  while (n < path.length && hasPath(doc, path.slice(0, n + 1))) n++;
  return n;
}

/**
 * Sets `path` unless it already holds the identical value (mongod's kNoOp), logging it as
 * updated (existing path) or created (from its first missing component). `force` skips the
 * no-op test, for modifiers that always report an update ($currentDate, $push with $sort).
 */
export function assign(ctx: ApplyContext, path: string[], value: unknown, force = false): boolean {
  const existed = hasPath(ctx.doc, path);
  if (!force && existed && identical(getPath(ctx.doc, path), value)) return false;
  const parts = typedPath(ctx.doc, path);
  const firstNew = existed ? path.length : existingPrefix(ctx.doc, path);
  setPath(ctx.doc, path, value);
  if (ctx.log) {
    if (existed) ctx.log.logUpdated(parts, value);
    else ctx.log.logCreated(parts, firstNew, value);
  }
  return true;
}

export function idElement(ctx: ApplyContext): string {
  return ctx.doc._id === undefined ? 'no id' : formatElement('_id', ctx.doc._id);
}

export function applySet(ctx: ApplyContext, path: string[], arg: unknown): boolean {
  return assign(ctx, path, arg);
}

/** $unset removes a field (logged as deleted) or nulls an array element (logged as updated). */
export function applyUnset(ctx: ApplyContext, path: string[]): boolean {
  const parts = typedPath(ctx.doc, path);
  if (!unsetPath(ctx.doc, path)) return false;
  if (parts[parts.length - 1].isIndex) ctx.log?.logUpdated(parts, null);
  else ctx.log?.logDeleted(parts);
  return true;
}

export function applyArithmetic(
  ctx: ApplyContext,
  path: string[],
  arg: unknown,
  op: '$inc' | '$mul',
): boolean {
  const field = path[path.length - 1];
  if (!isNumeric(arg)) {
    const verb = op === '$inc' ? 'increment' : 'multiply';
    throw new CommandError(
      'TypeMismatch',
      `Cannot ${verb} with non-numeric argument: {${formatElement(field, arg)}}`,
    );
  }
  if (!hasPath(ctx.doc, path)) {
    // A new field gets the argument ($inc) or a zero of the argument's type ($mul).
    return assign(ctx, path, op === '$inc' ? arg : multiplyNumbers(arg, 0));
  }
  const current = getPath(ctx.doc, path);
  if (!isNumeric(current)) {
    throw new CommandError(
      'TypeMismatch',
      `Cannot apply ${op} to a value of non-numeric type. {${idElement(ctx)}} has the field '${field}' of non-numeric type ${bsonTypeOf(current)}`,
    );
  }
  const result = op === '$inc' ? addNumbers(current, arg) : multiplyNumbers(current, arg);
  if (result === undefined) {
    throw new CommandError(
      'BadValue',
      `Failed to apply ${op} operations to current value (${debugNumber(current)}) for document {${idElement(ctx)}}`,
    );
  }
  return assign(ctx, path, result);
}

function debugNumber(v: unknown): string {
  const t = bsonTypeOf(v);
  const name =
    t === 'int'
      ? 'NumberInt'
      : t === 'long'
        ? 'NumberLong'
        : t === 'decimal'
          ? 'NumberDecimal'
          : 'NumberDouble';
  return `(${name})${formatValue(v)}`;
}

export function applyMinMax(
  ctx: ApplyContext,
  path: string[],
  arg: unknown,
  op: '$min' | '$max',
): boolean {
  if (!hasPath(ctx.doc, path)) return assign(ctx, path, arg);
  const c = compareValues(arg, getPath(ctx.doc, path));
  if ((op === '$min' && c < 0) || (op === '$max' && c > 0)) return assign(ctx, path, arg);
  return false;
}

export function applyCurrentDate(ctx: ApplyContext, path: string[], arg: unknown): boolean {
  const field = path[path.length - 1];
  // CurrentDateNode always reports kNormalUpdate, even when the stored value is the same.
  if (typeof arg === 'boolean') return assign(ctx, path, ctx.now, true);
  if (isDocument(arg)) {
    const keys = Object.keys(arg);
    if (
      keys.length === 1 &&
      keys[0] === '$type' &&
      (arg.$type === 'date' || arg.$type === 'timestamp')
    ) {
      return assign(ctx, path, arg.$type === 'date' ? ctx.now : ctx.timestamp, true);
    }
    throw new CommandError(
      'BadValue',
      "The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}",
    );
  }
  throw new CommandError(
    'BadValue',
    `${formatElement(field, arg)} is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({$type: 'timestamp/date'}).`,
  );
}

export function applyBit(ctx: ApplyContext, path: string[], arg: unknown): boolean {
  const field = path[path.length - 1];
  if (!isDocument(arg)) {
    throw new CommandError(
      'FailedToParse',
      `The $bit modifier is not compatible with a non-object argument: ${formatElement(field, arg)}`,
    );
  }
  let value: unknown = hasPath(ctx.doc, path) ? getPath(ctx.doc, path) : 0;
  const t = bsonTypeOf(value);
  if (t !== 'int' && t !== 'long') {
    throw new CommandError(
      'BadValue',
      `Cannot apply $bit to a value of non-integral type.{${idElement(ctx)}} has the field ${field} of non-integer type ${t}`,
    );
  }
  for (const op of Object.keys(arg)) {
    if (op !== 'and' && op !== 'or' && op !== 'xor') {
      throw new CommandError(
        'FailedToParse',
        `The $bit modifier only supports 'and', 'or', and 'xor', not '${op}' which is an unknown operator: {${formatElement(op, arg[op])}}`,
      );
    }
    const operand = arg[op];
    const ot = bsonTypeOf(operand);
    if (ot !== 'int' && ot !== 'long') {
      throw new CommandError(
        'FailedToParse',
        `The $bit modifier field must be an Integer(32/64 bit); a '${ot}' is not supported here: {${formatElement(op, operand)}}`,
      );
    }
    value = bitwise(value, operand, op);
  }
  return assign(ctx, path, value);
}

function bitwise(a: unknown, b: unknown, op: 'and' | 'or' | 'xor'): unknown {
  const wide = bsonTypeOf(a) === 'long' || bsonTypeOf(b) === 'long';
  const x = BigInt(formatValue(a));
  const y = BigInt(formatValue(b));
  const r = op === 'and' ? x & y : op === 'or' ? x | y : x ^ y;
  return wide ? Long.fromBigInt(BigInt.asIntN(64, r)) : new Int32(Number(BigInt.asIntN(32, r)));
}
