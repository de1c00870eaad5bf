import type { Document } from 'bson';
import { isDocument, queryCandidates } from '../bson/paths';
import { CommandError } from '../errors';
import { valueComparatorFor } from './collation';
import { evaluateExpression } from './expression-bridge';
import {
  compileOperators,
  equalityTest,
  type CandidatesTest,
  type MatchContext,
} from './field-operators';
import { compileJsonSchema } from './json-schema';

export type DocPredicate = (doc: Document) => boolean;

export interface FilterOptions {
  /** Query collation; see collation.ts for what is honoured. */
  collation?: Document;
  /** `let` variables visible to $expr as `$$name`. */
  variables?: Record<string, unknown>;
}

/** Compiles a query filter into a predicate, validating it the way mongod's parser does. */
export function compileFilter(filter: Document, options: FilterOptions = {}): DocPredicate {
  if (!isDocument(filter)) throw new CommandError('BadValue', 'filter must be an object');
  const ctx: MatchContext & { variables?: Record<string, unknown> } = {
    cmp: valueComparatorFor(options.collation),
    compileDoc: (f) => compileDocument(f, ctx),
    variables: options.variables,
  };
  return compileDocument(filter, ctx);
}

type Ctx = MatchContext & { variables?: Record<string, unknown> };

function compileDocument(filter: Document, ctx: Ctx): DocPredicate {
  const preds = Object.keys(filter).map((key) => compileTopLevel(key, filter[key], ctx));
  return (doc) => preds.every((p) => p(doc));
}

function compileTopLevel(key: string, arg: unknown, ctx: Ctx): DocPredicate {
  if (!key.startsWith('$')) return compileField(key, arg, ctx);
  switch (key) {
    case '$and':
    case '$or':
    case '$nor': {
      const subs = logicalBranches(key, arg).map((f) => compileDocument(f, ctx));
      if (key === '$and') return (doc) => subs.every((p) => p(doc));
      if (key === '$or') return (doc) => subs.some((p) => p(doc));
      return (doc) => !subs.some((p) => p(doc));
    }
    case '$expr':
      return (doc) => isTruthy(evaluateExpression(arg, doc, ctx.variables));
    case '$comment':
      return () => true;
    case '$jsonSchema':
      if (!isDocument(arg)) throw new CommandError('TypeMismatch', '$jsonSchema must be an object');
      return compileJsonSchema(arg);
    case '$where':
      throw new CommandError(
        'BadValue',
        '$where is not supported: the emulator has no JavaScript engine',
      );
    case '$text':
      throw new CommandError('IndexNotFound', 'text index required for $text query');
    case '$alwaysTrue':
      return () => true;
    case '$alwaysFalse':
      return () => false;
    default:
      throw new CommandError(
        'BadValue',
        `unknown top level operator: ${key}. If you have a field name that starts with a '$' symbol, consider using $getField or $setField.`,
      );
  }
}

function logicalBranches(op: string, arg: unknown): Document[] {
  if (!Array.isArray(arg)) throw new CommandError('BadValue', `${op} must be an array`);
  if (arg.length === 0) {
    throw new CommandError('BadValue', '$and/$or/$nor must be a nonempty array');
  }
  for (const branch of arg) {
    if (!isDocument(branch)) {
      throw new CommandError('BadValue', '$or/$and/$nor entries need to be full objects');
    }
  }
  return arg as Document[];
}

/** `{field: value}` is equality unless value is a document whose first key is an operator. */
function compileField(path: string, arg: unknown, ctx: Ctx): DocPredicate {
  const test: CandidatesTest = isOperatorDocument(arg)
    ? compileOperators(arg, ctx)
    : equalityTest(arg, ctx);
  return (doc) => test(queryCandidates(doc, path));
}

function isOperatorDocument(arg: unknown): arg is Document {
  if (!isDocument(arg)) return false;
  const first = Object.keys(arg)[0];
  // DBRef-shaped documents ({$ref, $id}) are values, not operators.
  return first !== undefined && first.startsWith('$') && first !== '$ref' && first !== '$id';
}

/** Aggregation truthiness: false, null, undefined and numeric zero are false. */
export function isTruthy(value: unknown): boolean {
  if (value === false || value === null || value === undefined) return false;
  const tag = (value as { _bsontype?: string })._bsontype;
  if (typeof value === 'number') return value !== 0;
  if (tag === 'Int32' || tag === 'Double') return (value as { value: number }).value !== 0;
  if (tag === 'Long') return !(value as { isZero(): boolean }).isZero();
  if (tag === 'Decimal128') return !/^-?0(\.0*)?(E[+-]?\d+)?$/i.test(String(value));
  return true;
}
