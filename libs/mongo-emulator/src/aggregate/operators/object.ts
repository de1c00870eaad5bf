import type { Document } from 'bson';
import { CommandError } from '../../errors';
import {
  evalArgs,
  isDocument,
  isNullish,
  typeName,
  type EvalContext,
  type OperatorTable,
} from './types';

/** $mergeObjects semantics, shared with the $mergeObjects accumulator. */
export function mergeInto(target: Document, v: unknown): void {
  if (isNullish(v)) return;
  if (!isDocument(v)) {
    throw new CommandError(
      40400,
      `$mergeObjects requires object inputs, but input ${JSON.stringify(v)} is of type ${typeName(v)}`,
    );
  }
  for (const k of Object.keys(v)) {
    // Missing values from $$REMOVE-like sources do not overwrite.
    if (v[k] !== undefined) target[k] = v[k];
  }
}

function fieldArgs(name: string, operand: unknown, allowed: string[], ctx: EvalContext) {
  // {$getField: "name"} is shorthand for {field: "name", input: "$$CURRENT"}.
  const spec: Document =
    isDocument(operand) && Object.keys(operand).some((k) => allowed.includes(k))
      ? operand
      : { field: operand };
  for (const k of Object.keys(spec)) {
    if (!allowed.includes(k))
      throw new CommandError(3041701, `${name} found an unknown argument: ${k}`);
  }
  if (!('field' in spec))
    throw new CommandError(3041702, `${name} requires 'field' to be specified`);
  const field = ctx.evaluate(spec.field);
  if (typeof field !== 'string') {
    throw new CommandError(
      3041704,
      `${name} requires 'field' to evaluate to type String, but got ${typeName(field)}`,
    );
  }
  if (name !== '$getField' && !('input' in spec))
    throw new CommandError(4161102, `${name} requires 'input' to be specified`);
  const input = 'input' in spec ? ctx.evaluate(spec.input) : ctx.vars.CURRENT;
  return { field, input, spec };
}

function arrayToObject(operand: unknown, ctx: EvalContext): unknown {
  const [arr] = evalArgs('$arrayToObject', operand, ctx, 1);
  if (isNullish(arr)) return null;
  if (!Array.isArray(arr)) {
    throw new CommandError(
      40386,
      `$arrayToObject requires an array input, found: ${typeName(arr)}`,
    );
  }
  const out: Document = {};
  for (const el of arr) {
    let k: unknown;
    let v: unknown;
    if (Array.isArray(el)) {
      if (el.length !== 2)
        throw new CommandError(
          40397,
          `$arrayToObject requires an array of size 2 arrays,found array of size: ${el.length}`,
        );
      [k, v] = el;
    } else if (isDocument(el)) {
      if (Object.keys(el).length !== 2 || !('k' in el) || !('v' in el)) {
        throw new CommandError(
          40392,
          "$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number of keys:" +
            Object.keys(el).length,
        );
      }
      k = el.k;
      v = el.v;
    } else {
      throw new CommandError(
        40398,
        `Unrecognised input type format for $arrayToObject: ${typeName(el)}`,
      );
    }
    if (typeof k !== 'string') {
      throw new CommandError(
        40395,
        `$arrayToObject requires an array of key-value pairs, where the key must be of type string. Found key type: ${typeName(k)}`,
      );
    }
    if (k.includes('\0'))
      throw new CommandError(4940400, 'Key field cannot contain an embedded null byte');
    out[k] = v;
  }
  return out;
}

export const objectOperators: OperatorTable = {
  $mergeObjects: (operand, ctx) => {
    const out: Document = {};
    for (const v of evalArgs('$mergeObjects', operand, ctx, 0, Infinity)) mergeInto(out, v);
    return out;
  },
  $getField: (operand, ctx) => {
    const { field, input } = fieldArgs('$getField', operand, ['field', 'input'], ctx);
    if (isNullish(input)) return null;
    if (!isDocument(input)) return undefined;
    return Object.prototype.hasOwnProperty.call(input, field) ? input[field] : undefined;
  },
  $setField: (operand, ctx) => {
    const { field, input, spec } = fieldArgs(
      '$setField',
      operand,
      ['field', 'input', 'value'],
      ctx,
    );
    if (!('value' in spec))
      throw new CommandError(4161103, "$setField requires 'value' to be specified");
    if (isNullish(input)) return null;
    if (!isDocument(input)) {
      throw new CommandError(
        4161105,
        `$setField requires 'input' to evaluate to type Object, but got ${typeName(input)}`,
      );
    }
    const value = ctx.evaluate(spec.value);
    const out: Document = { ...input };
    if (value === undefined) delete out[field];
    else out[field] = value;
    return out;
  },
  $unsetField: (operand, ctx) => {
    const { field, input } = fieldArgs('$unsetField', operand, ['field', 'input'], ctx);
    if (isNullish(input)) return null;
    if (!isDocument(input)) {
      throw new CommandError(
        4161105,
        `$unsetField requires 'input' to evaluate to type Object, but got ${typeName(input)}`,
      );
    }
    const out: Document = { ...input };
    delete out[field];
    return out;
  },
  $objectToArray: (operand, ctx) => {
    const [v] = evalArgs('$objectToArray', operand, ctx, 1);
    if (isNullish(v)) return null;
    if (!isDocument(v))
      throw new CommandError(
        40390,
        `$objectToArray requires a document input, found: ${typeName(v)}`,
      );
    return Object.keys(v).map((k) => ({ k, v: v[k] }));
  },
  $arrayToObject: arrayToObject,
};
