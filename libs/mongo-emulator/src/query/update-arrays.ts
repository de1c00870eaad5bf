import type { Document } from 'bson';
import { bsonTypeOf, isNumeric, toNumber, valuesEqual } from '../bson/compare';
import { getPath, hasPath, isDocument } from '../bson/paths';
import { CommandError } from '../errors';
import {
  compileOperators,
  elementCandidates,
  equalityTest,
  isQueryDocument,
} from './field-operators';
import { valueComparatorFor } from './collation';
import { compileFilter } from './matcher';
import { compileSort } from './sort';
import { assign, idElement, type ApplyContext } from './update-fields';
import { typedPath } from './update-log';

/** The array at `path`, or undefined when missing; anything else is the caller's error. */
function currentArray(ctx: ApplyContext, path: string[]): unknown[] | undefined | null {
  if (!hasPath(ctx.doc, path)) return undefined;
  const v = getPath(ctx.doc, path);
  return Array.isArray(v) ? v : null;
}

function integer(v: unknown, what: string): number {
  if (!isNumeric(v) || !Number.isInteger(toNumber(v))) {
    throw new CommandError(
      'BadValue',
      `The value for ${what} must be an integer value but was given type: ${bsonTypeOf(v)}`,
    );
  }
  return toNumber(v);
}

export function applyPush(ctx: ApplyContext, path: string[], arg: unknown): boolean {
  const field = path[path.length - 1];
  const current = currentArray(ctx, path);
  if (current === null) {
    throw new CommandError(
      'BadValue',
      `The field '${field}' must be an array but is of type ${bsonTypeOf(getPath(ctx.doc, path))} in document {${idElement(ctx)}}`,
    );
  }
  const spec = isDocument(arg) && '$each' in arg ? arg : { $each: [arg] };
  for (const key of Object.keys(spec)) {
    if (!['$each', '$slice', '$sort', '$position'].includes(key)) {
      throw new CommandError('BadValue', `Unrecognized clause in $push: ${key}`);
    }
  }
  if (!Array.isArray(spec.$each)) {
    throw new CommandError(
      'BadValue',
      `The argument to $each in $push must be an array but it was of type: ${bsonTypeOf(spec.$each)}`,
    );
  }
  if (current === undefined) return assign(ctx, path, pushInto([], spec));
  const values = spec.$each as unknown[];
  const result = pushInto(current, spec);
  // PushNode::performPush: how mongod logs the push (whole array, or appended elements only).
  let kind: 'noop' | 'append' | 'normal' = 'normal';
  if (values.length === 0) kind = 'noop';
  else if (
    current.length > 0 &&
    (spec.$position === undefined || pushPosition(spec) > current.length)
  )
    kind = 'append';
  if (spec.$sort !== undefined) kind = 'normal';
  if (spec.$slice !== undefined && current.length + values.length > Math.abs(sliceOf(spec)))
    kind = 'normal';
  if (kind === 'noop') return false;
  if (kind === 'normal') return assign(ctx, path, result, true);
  const parts = typedPath(ctx.doc, path);
  assign({ ...ctx, log: undefined }, path, result, true);
  values.forEach((value, i) => {
    const index = current.length + i;
    ctx.log?.logCreated([...parts, { name: String(index), isIndex: true }], parts.length, value);
  });
  return true;
}

function pushPosition(spec: Document): number {
  return integer(spec.$position, '$position');
}

function sliceOf(spec: Document): number {
  return integer(spec.$slice, '$slice');
}

/** The array after $push: insert at $position, then $sort, then $slice. */
function pushInto(current: unknown[], spec: Document): unknown[] {
  const result = [...current];
  let pos = spec.$position === undefined ? result.length : pushPosition(spec);
  if (pos < 0) pos = Math.max(0, result.length + pos);
  result.splice(Math.min(pos, result.length), 0, ...spec.$each);
  if (spec.$sort !== undefined) sortForPush(result, spec.$sort);
  if (spec.$slice !== undefined) {
    const n = sliceOf(spec);
    const kept = n >= 0 ? result.slice(0, n) : result.slice(Math.max(0, result.length + n));
    result.splice(0, result.length, ...kept);
  }
  return result;
}

function sortForPush(values: unknown[], spec: unknown): void {
  if (isNumeric(spec) && Math.abs(toNumber(spec)) === 1) {
    const cmp = valueComparatorFor();
    const dir = toNumber(spec);
    values.sort((a, b) => cmp(a, b) * dir);
    return;
  }
  if (!isDocument(spec) || Object.keys(spec).length === 0) {
    throw new CommandError(
      'BadValue',
      'The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields',
    );
  }
  const byFields = compileSort(spec);
  // Non-document elements sort as if every field were missing.
  values.sort((a, b) => byFields(isDocument(a) ? a : {}, isDocument(b) ? b : {}));
}

export function applyAddToSet(ctx: ApplyContext, path: string[], arg: unknown): boolean {
  const field = path[path.length - 1];
  const current = currentArray(ctx, path);
  if (current === null) {
    throw new CommandError(
      'BadValue',
      `Cannot apply $addToSet to non-array field. Field named '${field}' has non-array type ${bsonTypeOf(getPath(ctx.doc, path))}`,
    );
  }
  let items = [arg];
  if (isDocument(arg) && Object.keys(arg)[0] === '$each') {
    if (!Array.isArray(arg.$each)) {
      throw new CommandError(
        'TypeMismatch',
        `The argument to $each in $addToSet must be an array but it was of type ${bsonTypeOf(arg.$each)}`,
      );
    }
    items = arg.$each;
  }
  const result = [...(current ?? [])];
  for (const item of items) if (!result.some((v) => valuesEqual(v, item))) result.push(item);
  if (current && result.length === current.length) return false;
  // mongod 7.0's AddToSetNode reports kNormalUpdate: the whole array is logged.
  return assign(ctx, path, result, true);
}

export function applyPop(ctx: ApplyContext, path: string[], arg: unknown): boolean {
  const n = isNumeric(arg) ? toNumber(arg) : NaN;
  if (n !== 1 && n !== -1) {
    throw new CommandError(
      'FailedToParse',
      `$pop expects 1 or -1, found: ${String(isNumeric(arg) ? n : arg)}`,
    );
  }
  const current = currentArray(ctx, path);
  if (current === undefined) return false;
  if (current === null) {
    throw new CommandError(
      'TypeMismatch',
      `Path '${path.join('.')}' contains an element of non-array type '${bsonTypeOf(getPath(ctx.doc, path))}'`,
    );
  }
  if (current.length === 0) return false;
  return assign(ctx, path, n === 1 ? current.slice(0, -1) : current.slice(1));
}

/** $pull's condition: a query on document elements, operators on each value, or equality. */
function pullMatcher(arg: unknown): (el: unknown) => boolean {
  if (isDocument(arg)) {
    if (isQueryDocument(arg)) {
      const match = compileFilter(arg as Document);
      return (el) => isDocument(el) && match(el);
    }
    const ctx = { cmp: valueComparatorFor(), compileDoc: (f: Document) => compileFilter(f) };
    const test = compileOperators(arg, ctx);
    return (el) => test(elementCandidates(el));
  }
  const eq = equalityTest(arg, { cmp: valueComparatorFor(), compileDoc: (f) => compileFilter(f) });
  return (el) => eq([{ value: el, exists: true, expanded: false }]);
}

export function applyPull(
  ctx: ApplyContext,
  path: string[],
  arg: unknown,
  op: '$pull' | '$pullAll',
): boolean {
  let remove: (el: unknown) => boolean;
  if (op === '$pullAll') {
    if (!Array.isArray(arg)) {
      throw new CommandError(
        'BadValue',
        `$pullAll requires an array argument but was given a ${bsonTypeOf(arg)}`,
      );
    }
    remove = (el) => arg.some((v) => valuesEqual(v, el));
  } else {
    remove = pullMatcher(arg);
  }
  const current = currentArray(ctx, path);
  if (current === undefined) return false;
  if (current === null)
    throw new CommandError('BadValue', 'Cannot apply $pull to a non-array value');
  const kept = current.filter((el) => !remove(el));
  if (kept.length === current.length) return false;
  return assign(ctx, path, kept);
}
