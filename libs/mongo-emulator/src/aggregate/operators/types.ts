import type { Document } from 'bson';
import { CommandError } from '../../errors';
import { bsonTypeOf, toNumber } from '../../bson/compare';

/** What an operator sees: a way to evaluate sub-expressions in the current scope. */
export interface EvalContext {
  readonly root: Document;
  readonly vars: Readonly<Record<string, unknown>>;
  evaluate(expr: unknown): unknown;
  /** A child scope with extra variables bound (for $let, $map, $filter, $reduce). */
  withVars(extra: Record<string, unknown>): EvalContext;
}

/** Operators receive their raw operand so that they can control scoping and laziness. */
export type OperatorFn = (operand: unknown, ctx: EvalContext) => unknown;

export type OperatorTable = Record<string, OperatorFn>;

/** Name MongoDB uses for a value's type in messages; missing values print as "missing". */
export function typeName(v: unknown): string {
  return v === undefined ? 'missing' : bsonTypeOf(v);
}

/** null, missing and the BSON undefined value all count as "nullish" in expressions. */
export function isNullish(v: unknown): boolean {
  return v === null || v === undefined;
}

/** A plain document (not an array, Date or BSON wrapper value). */
export function isDocument(v: unknown): v is Document {
  return bsonTypeOf(v) === 'object';
}

/**
 * Operand list as MongoDB's ExpressionNary parses it: an array is the argument list,
 * anything else is the single argument.
 */
export function operandList(operand: unknown): unknown[] {
  return Array.isArray(operand) ? operand : [operand];
}

/** Evaluates an operator's positional arguments, enforcing arity (error 16020). */
export function evalArgs(
  name: string,
  operand: unknown,
  ctx: EvalContext,
  min: number,
  max = min,
): unknown[] {
  const list = operandList(operand);
  if (list.length < min || list.length > max) {
    const expected =
      min === max
        ? `exactly ${min} argument${min === 1 ? '' : 's'}`
        : max === Infinity
          ? `at least ${min} argument${min === 1 ? '' : 's'}`
          : `${min} to ${max} arguments`;
    throw new CommandError(
      16020,
      `Expression ${name} takes ${expected}. ${list.length} were passed in.`,
    );
  }
  return list.map((e) => ctx.evaluate(e));
}

/** Object-form operand ({input, ...}) with validation of allowed/required keys. */
export function namedArgs(
  name: string,
  operand: unknown,
  allowed: readonly string[],
  required: readonly string[],
  codes: { notObject: number; unknown: number; missing: number },
): Document {
  if (!isDocument(operand)) {
    throw new CommandError(
      codes.notObject,
      `${name} expects an object of named arguments but found: ${typeName(operand)}`,
    );
  }
  for (const key of Object.keys(operand)) {
    if (!allowed.includes(key)) {
      throw new CommandError(codes.unknown, `${name} found an unknown argument: ${key}`);
    }
  }
  for (const key of required) {
    if (!(key in operand)) {
      throw new CommandError(codes.missing, `${name} requires '${key}' to be specified`);
    }
  }
  return operand;
}

/** MongoDB's coerceToBool: false, null, missing and numeric zero are false. */
export function truthy(v: unknown): boolean {
  if (v === false || v === null || v === undefined) return false;
  switch (bsonTypeOf(v)) {
    case 'int':
    case 'long':
    case 'double':
      return toNumber(v) !== 0;
    case 'decimal':
      // Any zero coefficient ("0", "-0.00", "0E+3") is false.
      return !/^-?0(\.0*)?(E[+-]?\d+)?$/i.test(String(v));
    default:
      return true;
  }
}
