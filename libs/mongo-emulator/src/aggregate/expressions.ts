import { Timestamp, type Document } from 'bson';
import { CommandError } from '../errors';
import { arithmeticOperators } from './operators/arithmetic';
import { arrayOperators } from './operators/array';
import { comparisonOperators } from './operators/comparison';
import { conditionalOperators } from './operators/conditional';
import { dateOperators } from './operators/date';
import { miscOperators } from './operators/misc';
import { objectOperators } from './operators/object';
import { setOperators } from './operators/set';
import { stringOperators } from './operators/string';
import { typeOperators } from './operators/type';
import { isDocument, type EvalContext, type OperatorTable } from './operators/types';

export type { EvalContext } from './operators/types';

const OPERATORS: OperatorTable = {
  ...arithmeticOperators,
  ...comparisonOperators,
  ...conditionalOperators,
  ...stringOperators,
  ...arrayOperators,
  ...setOperators,
  ...typeOperators,
  ...objectOperators,
  ...dateOperators,
  ...miscOperators,
};

/** Names of every supported expression operator (for $expr validation elsewhere). */
export function isExpressionOperator(name: string): boolean {
  return Object.prototype.hasOwnProperty.call(OPERATORS, name);
}

/** Variables every pipeline has besides ROOT/CURRENT; user names must start lowercase. */
const SYSTEM_VARS = new Set([
  'ROOT',
  'CURRENT',
  'NOW',
  'CLUSTER_TIME',
  'REMOVE',
  'DESCEND',
  'PRUNE',
  'KEEP',
  'SEARCH_META',
  'USER_ROLES',
]);

/**
 * Evaluates an aggregation expression against `root` ($$ROOT, and $$CURRENT unless `vars`
 * rebinds it). A JS `undefined` result means "missing": callers drop such fields.
 * `vars` holds user variables and may override NOW / CLUSTER_TIME so that a whole
 * statement sees one value, as MongoDB guarantees.
 */
export function evaluateExpression(
  expr: unknown,
  root: Document,
  vars: Record<string, unknown> = {},
): unknown {
  return makeContext(root, { ROOT: root, CURRENT: root, ...vars }).evaluate(expr);
}

/** Builds a reusable context (e.g. one per document in a stage). */
export function makeContext(root: Document, vars: Record<string, unknown>): EvalContext {
  const ctx: EvalContext = {
    root,
    vars,
    evaluate: (expr) => evaluate(expr, ctx),
    withVars: (extra) => makeContext(root, { ...vars, ...extra }),
  };
  return ctx;
}

function evaluate(expr: unknown, ctx: EvalContext): unknown {
  if (typeof expr === 'string') {
    if (expr.startsWith('$$')) return evaluateVariablePath(expr.slice(2), ctx);
    if (expr.startsWith('$')) {
      if (expr.length === 1)
        throw new CommandError(16872, "'$' by itself is not a valid FieldPath");
      return resolvePath(ctx.vars.CURRENT ?? ctx.root, expr.slice(1));
    }
    return expr;
  }
  if (Array.isArray(expr)) {
    // Missing elements of an array literal become null (ExpressionArray::evaluate).
    return expr.map((e) => {
      const v = evaluate(e, ctx);
      return v === undefined ? null : v;
    });
  }
  if (!isDocument(expr)) return expr;
  const keys = Object.keys(expr);
  if (keys.length > 0 && keys[0].startsWith('$')) {
    if (keys.length !== 1) {
      throw new CommandError(
        15983,
        `An object representing an expression must have exactly one field: ${JSON.stringify(expr)}`,
      );
    }
    const op = OPERATORS[keys[0]];
    if (!op) {
      throw new CommandError('InvalidPipelineOperator', `Unrecognized expression '${keys[0]}'`);
    }
    return op(expr[keys[0]], ctx);
  }
  // Object literal: fields evaluating to missing are left out.
  const out: Document = {};
  for (const key of keys) {
    const v = evaluate(expr[key], ctx);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

function evaluateVariablePath(path: string, ctx: EvalContext): unknown {
  const dot = path.indexOf('.');
  const name = dot < 0 ? path : path.slice(0, dot);
  const rest = dot < 0 ? '' : path.slice(dot + 1);
  let value: unknown;
  if (Object.prototype.hasOwnProperty.call(ctx.vars, name)) {
    value = ctx.vars[name];
  } else if (name === 'NOW') {
    value = new Date();
  } else if (name === 'CLUSTER_TIME') {
    value = Timestamp.fromBits(0, Math.floor(Date.now() / 1000));
  } else if (name === 'REMOVE') {
    value = undefined;
  } else if (SYSTEM_VARS.has(name)) {
    throw new CommandError(17276, `Use of undefined variable: ${name}`);
  } else {
    if (!/^[a-z\u0080-\uffff]/.test(name)) {
      throw new CommandError(
        16870,
        `'${name}' starts with an invalid character for a user variable name`,
      );
    }
    throw new CommandError(17276, `Use of undefined variable: ${name}`);
  }
  return rest ? resolvePath(value, rest) : value;
}

/**
 * Field path lookup with MongoDB's expression semantics: traversing an array applies the
 * rest of the path to each element, keeping only elements that produce a value; nested
 * arrays are traversed recursively and so stay nested ("$a.b" on {a:[[{b:1}]]} is [[1]]).
 */
export function resolvePath(value: unknown, path: string): unknown {
  return resolveParts(value, path.split('.'), 0);
}

function resolveParts(value: unknown, parts: string[], i: number): unknown {
  if (i === parts.length) return value;
  if (Array.isArray(value)) return resolveArray(value, parts, i);
  if (!isDocument(value)) return undefined;
  const next = Object.prototype.hasOwnProperty.call(value, parts[i]) ? value[parts[i]] : undefined;
  return resolveParts(next, parts, i + 1);
}

function resolveArray(arr: unknown[], parts: string[], i: number): unknown[] {
  const out: unknown[] = [];
  for (const el of arr) {
    if (Array.isArray(el)) {
      out.push(resolveArray(el, parts, i));
    } else if (isDocument(el)) {
      const v = resolveParts(el, parts, i);
      if (v !== undefined) out.push(v);
    }
  }
  return out;
}
