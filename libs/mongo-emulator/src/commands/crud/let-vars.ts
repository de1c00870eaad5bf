import type { Document } from 'bson';
import { evaluateExpression } from '../../aggregate/expressions';
import { isDocument } from '../../bson/paths';
import { CommandError } from '../../errors';
import type { CommandContext } from '../types';
import { optDocument } from './args';

const SYSTEM_CONSTANTS = new Set(['NOW', 'CLUSTER_TIME', 'JS_SCOPE', 'IS_MR', 'USER_ROLES']);

/** mongod's variableValidation::validateNameForUserWrite. */
function validateName(name: string): void {
  if (name === '')
    throw new CommandError(
      16869,
      "Invalid 'let' parameter :: caused by :: empty variable names are not allowed",
    );
  if (SYSTEM_CONSTANTS.has(name)) {
    throw new CommandError(4738901, `Attempt to set internal constant: ${name}`);
  }
  if (!/^[a-z\u0080-\uffff]/.test(name)) {
    throw new CommandError(
      16870,
      `Invalid 'let' parameter :: caused by :: '${name}' starts with an invalid character for a user variable name`,
    );
  }
  const bad = [...name].find((ch) => !/[A-Za-z0-9_\u0080-\uffff]/.test(ch));
  if (bad !== undefined) {
    throw new CommandError(
      16871,
      `Invalid 'let' parameter :: caused by :: '${name}' contains an invalid character for a variable name: '${bad}'`,
    );
  }
}

/** True when an expression reads the document ($field paths, $$ROOT, $$CURRENT). */
function readsDocument(expr: unknown): boolean {
  if (typeof expr === 'string') {
    if (expr.startsWith('$$')) {
      const name = expr.slice(2).split('.')[0];
      return name === 'ROOT' || name === 'CURRENT';
    }
    return expr.startsWith('$');
  }
  if (Array.isArray(expr)) return expr.some(readsDocument);
  if (!isDocument(expr)) return false;
  const keys = Object.keys(expr);
  if (keys.length === 1 && keys[0] === '$literal') return false;
  return keys.some((k) => readsDocument(expr[k]));
}

/**
 * The command's `let` parameter, evaluated like mongod's seedVariablesWithLetParameters: each
 * value is an expression evaluated once, before any document is read (so `{$literal: '$x'}`
 * is the string '$x', and a missing result leaves the variable missing). Earlier variables
 * and $$NOW / $$CLUSTER_TIME are visible to later ones.
 */
export function optLetVariables(ctx: CommandContext): Record<string, unknown> | undefined {
  const raw = optDocument(ctx, 'let');
  if (!raw) return undefined;
  return evaluateLetParameters(raw);
}

export function evaluateLetParameters(raw: Document): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(raw)) {
    validateName(name);
    const expr = raw[name];
    if (readsDocument(expr)) {
      throw new CommandError(
        4890500,
        'Command let Expression tried to access a field, but this is not allowed because' +
          'Command let Expressions run before the query examines any documents.',
      );
    }
    out[name] = evaluateExpression(expr, {}, { ...out });
  }
  return out;
}
