import type { Document } from 'bson';

/** Signature of the aggregation expression evaluator (libs/mongo-emulator/src/aggregate). */
export type EvaluateExpression = (
  expr: unknown,
  root: Document,
  vars?: Record<string, unknown>,
) => unknown;

/**
 * Query code needs aggregation expressions for $expr and computed projections, while the
 * aggregation module needs the matcher for $match: resolving the evaluator lazily at call
 * time breaks that import cycle.
 */
export function evaluateExpression(
  expr: unknown,
  root: Document,
  vars?: Record<string, unknown>,
): unknown {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require('../aggregate/expressions') as { evaluateExpression: EvaluateExpression };
  return mod.evaluateExpression(expr, root, vars);
}
