import { CommandError } from '../../errors';
import { valuesEqual } from '../../bson/compare';
import {
  evalArgs,
  isNullish,
  truthy,
  typeName,
  type EvalContext,
  type OperatorTable,
} from './types';

/** Distinct values in first-seen order (MongoDB leaves set order unspecified). */
function distinct(values: unknown[]): unknown[] {
  const out: unknown[] = [];
  for (const v of values) if (!out.some((o) => valuesEqual(o, v))) out.push(v);
  return out;
}

const has = (arr: unknown[], v: unknown): boolean => arr.some((o) => valuesEqual(o, v));

function arraysOf(name: string, values: unknown[], code: number): unknown[][] {
  return values.map((v) => {
    if (!Array.isArray(v)) {
      throw new CommandError(
        code,
        `All operands of ${name} must be arrays. One argument is of type: ${typeName(v)}`,
      );
    }
    return v;
  });
}

function elementsTrue(name: string, code: number, any: boolean) {
  return (operand: unknown, ctx: EvalContext): unknown => {
    const [v] = evalArgs(name, operand, ctx, 1);
    if (!Array.isArray(v)) {
      throw new CommandError(code, `${name}'s argument must be an array, but is ${typeName(v)}`);
    }
    return any ? v.some(truthy) : v.every(truthy);
  };
}

export const setOperators: OperatorTable = {
  $setUnion: (operand, ctx) => {
    const args = evalArgs('$setUnion', operand, ctx, 0, Infinity);
    if (args.some(isNullish)) return null;
    return distinct(arraysOf('$setUnion', args, 17043).flat());
  },
  $setIntersection: (operand, ctx) => {
    const args = evalArgs('$setIntersection', operand, ctx, 0, Infinity);
    if (args.some(isNullish)) return null;
    const arrays = arraysOf('$setIntersection', args, 17047);
    if (arrays.length === 0) return [];
    return distinct(arrays[0]).filter((v) => arrays.every((a) => has(a, v)));
  },
  $setDifference: (operand, ctx) => {
    const [a, b] = evalArgs('$setDifference', operand, ctx, 2);
    if (isNullish(a) || isNullish(b)) return null;
    if (!Array.isArray(a)) {
      throw new CommandError(
        17048,
        `both operands of $setDifference must be arrays. First argument is of type: ${typeName(a)}`,
      );
    }
    if (!Array.isArray(b)) {
      throw new CommandError(
        17049,
        `both operands of $setDifference must be arrays. Second argument is of type: ${typeName(b)}`,
      );
    }
    return distinct(a).filter((v) => !has(b, v));
  },
  $setEquals: (operand, ctx) => {
    const args = evalArgs('$setEquals', operand, ctx, 2, Infinity);
    const arrays = arraysOf('$setEquals', args, 17044);
    const first = distinct(arrays[0]);
    return arrays.every((a) => {
      const d = distinct(a);
      return d.length === first.length && d.every((v) => has(first, v));
    });
  },
  $setIsSubset: (operand, ctx) => {
    const [a, b] = evalArgs('$setIsSubset', operand, ctx, 2);
    if (!Array.isArray(a)) {
      throw new CommandError(
        17310,
        `both operands of $setIsSubset must be arrays. First argument is of type: ${typeName(a)}`,
      );
    }
    if (!Array.isArray(b)) {
      throw new CommandError(
        17042,
        `both operands of $setIsSubset must be arrays. Second argument is of type: ${typeName(b)}`,
      );
    }
    return a.every((v) => has(b, v));
  },
  $allElementsTrue: elementsTrue('$allElementsTrue', 17040, false),
  $anyElementTrue: elementsTrue('$anyElementTrue', 17041, true),
};
