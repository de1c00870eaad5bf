import type { Binary, Timestamp } from 'bson';
import { CommandError } from '../../errors';
import { bsonTypeOf } from '../../bson/compare';
import { bsonSize } from '../../bson/codec';
import { EXPRESSION_REDUCERS, makeValueReducer } from '../accumulators';
import { double, int32, long } from './numeric';
import {
  evalArgs,
  isDocument,
  isNullish,
  operandList,
  typeName,
  type EvalContext,
  type OperatorTable,
} from './types';

function letOp(operand: unknown, ctx: EvalContext): unknown {
  if (!isDocument(operand)) {
    throw new CommandError(16874, `$let only supports an object as its argument`);
  }
  for (const k of Object.keys(operand)) {
    if (k !== 'vars' && k !== 'in')
      throw new CommandError(16875, `Unrecognized parameter to $let: ${k}`);
  }
  if (!('vars' in operand)) throw new CommandError(16876, "Missing 'vars' parameter to $let");
  if (!('in' in operand)) throw new CommandError(16877, "Missing 'in' parameter to $let");
  if (!isDocument(operand.vars)) {
    throw new CommandError(10065, `invalid parameter: expected an object (vars)`);
  }
  // Variable values are evaluated in the outer scope, then bound together.
  const bound: Record<string, unknown> = {};
  for (const [name, expr] of Object.entries(operand.vars)) {
    if (!/^[a-z\u0080-\uffff][\w\u0080-\uffff]*$/.test(name)) {
      throw new CommandError(
        16866,
        `'${name}' starts with an invalid character for a user variable name`,
      );
    }
    bound[name] = ctx.evaluate(expr);
  }
  return ctx.withVars(bound).evaluate(operand.in);
}

/**
 * Accumulator operators used as expressions: one argument that is an array reduces its
 * elements; several arguments reduce the argument values.
 */
function reducerExpression(op: string) {
  return (operand: unknown, ctx: EvalContext): unknown => {
    const list = operandList(operand);
    const values: unknown[] =
      list.length === 1
        ? (() => {
            const v = ctx.evaluate(list[0]);
            return Array.isArray(v) ? v : [v];
          })()
        : list.map((e) => ctx.evaluate(e));
    const reducer = makeValueReducer(op)!;
    for (const v of values) reducer.add(v);
    return reducer.result();
  };
}

function timestampPart(name: string, high: boolean) {
  return (operand: unknown, ctx: EvalContext): unknown => {
    const [v] = evalArgs(name, operand, ctx, 1);
    if (isNullish(v)) return null;
    if (bsonTypeOf(v) !== 'timestamp') {
      throw new CommandError(
        5687301,
        `Argument to ${name} must be a timestamp, but is ${typeName(v)}`,
      );
    }
    const ts = v as Timestamp;
    return long(BigInt(high ? ts.high >>> 0 : ts.low >>> 0));
  };
}

export const miscOperators: OperatorTable = {
  $let: letOp,
  $literal: (operand) => operand,
  $rand: (operand) => {
    if (!isDocument(operand) || Object.keys(operand).length !== 0) {
      throw new CommandError(3040501, '$rand does not currently accept arguments');
    }
    return double(Math.random());
  },
  $binarySize: (operand, ctx) => {
    const [v] = evalArgs('$binarySize', operand, ctx, 1);
    if (isNullish(v)) return null;
    if (typeof v === 'string') return int32(Buffer.byteLength(v, 'utf8'));
    if (bsonTypeOf(v) === 'binData') return int32((v as Binary).length());
    throw new CommandError(
      51276,
      `$binarySize requires a string or BinData argument, found: ${typeName(v)}`,
    );
  },
  $bsonSize: (operand, ctx) => {
    const [v] = evalArgs('$bsonSize', operand, ctx, 1);
    if (isNullish(v)) return null;
    if (!isDocument(v))
      throw new CommandError(31393, `$bsonSize requires a document input, found: ${typeName(v)}`);
    return int32(bsonSize(v));
  },
  $tsSecond: timestampPart('$tsSecond', true),
  $tsIncrement: timestampPart('$tsIncrement', false),
  ...Object.fromEntries(EXPRESSION_REDUCERS.map((op) => [op, reducerExpression(op)])),
};
