import { CommandError } from '../../errors';
import {
  evalArgs,
  isDocument,
  isNullish,
  operandList,
  truthy,
  typeName,
  type EvalContext,
  type OperatorTable,
} from './types';

// Boolean and conditional operators: both short-circuit, so they evaluate lazily.

function and(operand: unknown, ctx: EvalContext): boolean {
  for (const e of operandList(operand)) if (!truthy(ctx.evaluate(e))) return false;
  return true;
}

function or(operand: unknown, ctx: EvalContext): boolean {
  for (const e of operandList(operand)) if (truthy(ctx.evaluate(e))) return true;
  return false;
}

function cond(operand: unknown, ctx: EvalContext): unknown {
  let ifE: unknown;
  let thenE: unknown;
  let elseE: unknown;
  if (isDocument(operand)) {
    for (const key of Object.keys(operand)) {
      if (key !== 'if' && key !== 'then' && key !== 'else') {
        throw new CommandError(17083, `Unrecognized parameter to $cond: ${key}`);
      }
    }
    if (!('if' in operand)) throw new CommandError(17080, "Missing 'if' parameter to $cond");
    if (!('then' in operand)) throw new CommandError(17081, "Missing 'then' parameter to $cond");
    if (!('else' in operand)) throw new CommandError(17082, "Missing 'else' parameter to $cond");
    ({ if: ifE, then: thenE, else: elseE } = operand);
  } else {
    const list = operandList(operand);
    if (list.length !== 3) {
      throw new CommandError(
        16020,
        `Expression $cond takes exactly 3 arguments. ${list.length} were passed in.`,
      );
    }
    [ifE, thenE, elseE] = list;
  }
  return ctx.evaluate(truthy(ctx.evaluate(ifE)) ? thenE : elseE);
}

function ifNull(operand: unknown, ctx: EvalContext): unknown {
  const list = operandList(operand);
  if (list.length < 2) {
    throw new CommandError(
      16020,
      `Expression $ifNull takes at least 2 arguments. ${list.length} were passed in.`,
    );
  }
  for (let i = 0; i < list.length - 1; i++) {
    const v = ctx.evaluate(list[i]);
    if (!isNullish(v)) return v;
  }
  return ctx.evaluate(list[list.length - 1]);
}

function switchOp(operand: unknown, ctx: EvalContext): unknown {
  if (!isDocument(operand)) {
    throw new CommandError(
      40060,
      `$switch requires an object as an argument, found: ${typeName(operand)}`,
    );
  }
  const branches = operand.branches;
  if (!Array.isArray(branches)) {
    throw new CommandError(
      40061,
      `$switch expected an array for 'branches', found: ${typeName(branches)}`,
    );
  }
  for (const key of Object.keys(operand)) {
    if (key !== 'branches' && key !== 'default') {
      throw new CommandError(40067, `$switch found an unknown argument: ${key}`);
    }
  }
  for (const branch of branches) {
    if (!isDocument(branch)) {
      throw new CommandError(
        40062,
        `$switch expected each branch to be an object, found: ${typeName(branch)}`,
      );
    }
    if (!('case' in branch))
      throw new CommandError(40064, "$switch requires each branch have a 'case' expression");
    if (!('then' in branch))
      throw new CommandError(40065, "$switch requires each branch have a 'then' expression.");
  }
  for (const branch of branches as { case: unknown; then: unknown }[]) {
    if (truthy(ctx.evaluate(branch.case))) return ctx.evaluate(branch.then);
  }
  if (!('default' in operand)) {
    throw new CommandError(
      40066,
      '$switch could not find a matching branch for an input, and no default was specified.',
    );
  }
  return ctx.evaluate(operand.default);
}

export const conditionalOperators: OperatorTable = {
  $and: and,
  $or: or,
  $not: (operand, ctx) => !truthy(evalArgs('$not', operand, ctx, 1)[0]),
  $cond: cond,
  $ifNull: ifNull,
  $switch: switchOp,
};
