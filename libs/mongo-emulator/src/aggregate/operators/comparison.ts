import { compareValues } from '../../bson/compare';
import { int32 } from './numeric';
import { evalArgs, type EvalContext, type OperatorTable } from './types';

/**
 * Comparison expressions use the total BSON order (numbers by value across types; missing
 * sorts below null, so {$eq: ['$missing', null]} is false as in MongoDB).
 */
function comparison(name: string, test: (c: number) => boolean) {
  return (operand: unknown, ctx: EvalContext): unknown => {
    const [a, b] = evalArgs(name, operand, ctx, 2);
    return test(compareValues(a, b));
  };
}

export const comparisonOperators: OperatorTable = {
  $cmp: (operand, ctx) => {
    const [a, b] = evalArgs('$cmp', operand, ctx, 2);
    return int32(Math.sign(compareValues(a, b)));
  },
  $eq: comparison('$eq', (c) => c === 0),
  $ne: comparison('$ne', (c) => c !== 0),
  $gt: comparison('$gt', (c) => c > 0),
  $gte: comparison('$gte', (c) => c >= 0),
  $lt: comparison('$lt', (c) => c < 0),
  $lte: comparison('$lte', (c) => c <= 0),
};
