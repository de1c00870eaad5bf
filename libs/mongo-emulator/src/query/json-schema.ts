import type { Document } from 'bson';
import { bsonTypeOf, compareValues, isNumeric, toNumber, valuesEqual } from '../bson/compare';
import { isDocument } from '../bson/paths';
import { CommandError } from '../errors';
import { compileRegex } from './regex';
import { parseTypeSpec } from './type-spec';

type Check = (value: unknown) => boolean;

/** JSON Schema `type` names as MongoDB maps them onto BSON types ("integer" is rejected). */
const JSON_TYPES: Record<string, (v: unknown) => boolean> = {
  object: (v) => bsonTypeOf(v) === 'object',
  array: Array.isArray,
  number: isNumeric,
  boolean: (v) => typeof v === 'boolean',
  string: (v) => typeof v === 'string',
  null: (v) => v === null,
};

/**
 * Compiles a `$jsonSchema` (MongoDB's draft-4 subset plus bsonType). Keywords constrain
 * only values of the type they are about: `minimum` ignores strings, `properties` ignores
 * non-documents, and absent properties pass unless `required`.
 */
export function compileJsonSchema(schema: Document): (doc: Document) => boolean {
  return compileSchema(schema);
}

function compileSchema(schema: unknown): Check {
  if (!isDocument(schema))
    throw new CommandError('TypeMismatch', '$jsonSchema keyword must be an object');
  const checks = Object.keys(schema).map((k) => compileKeyword(k, schema[k], schema));
  return (v) => checks.every((c) => c(v));
}

const isDoc = (v: unknown): v is Document => bsonTypeOf(v) === 'object';
const num = (v: unknown) => toNumber(v);

function compileKeyword(key: string, arg: any, schema: Document): Check {
  switch (key) {
    case 'bsonType': {
      const t = parseTypeSpec(arg, 'bsonType');
      return (v) => t(v);
    }
    case 'type': {
      const names: string[] = Array.isArray(arg) ? arg : [arg];
      const tests = names.map((n) => {
        if (n === 'integer')
          throw new CommandError(
            'FailedToParse',
            `$jsonSchema type 'integer' is not currently supported.`,
          );
        if (!JSON_TYPES[n]) throw new CommandError('BadValue', `Unknown type name alias: ${n}`);
        return JSON_TYPES[n];
      });
      return (v) => tests.some((t) => t(v));
    }
    case 'required': {
      if (!Array.isArray(arg) || arg.length === 0) {
        throw new CommandError(
          'FailedToParse',
          "$jsonSchema keyword 'required' must be a nonempty array",
        );
      }
      return (v) =>
        !isDoc(v) || arg.every((f: string) => Object.prototype.hasOwnProperty.call(v, f));
    }
    case 'properties': {
      const props = Object.entries(arg as Document).map(([f, s]) => [f, compileSchema(s)] as const);
      return (v) => !isDoc(v) || props.every(([f, c]) => !(f in v) || c(v[f]));
    }
    case 'additionalProperties':
      return additionalProperties(arg, schema);
    case 'patternProperties':
      // Checked with additionalProperties when both are present, so only once.
      return schema.additionalProperties === undefined
        ? additionalProperties(true, schema)
        : () => true;
    case 'enum':
      if (!Array.isArray(arg) || arg.length === 0) {
        throw new CommandError(
          'FailedToParse',
          "$jsonSchema keyword 'enum' must be a nonempty array",
        );
      }
      return (v) => arg.some((e: unknown) => valuesEqual(e, v));
    case 'minimum':
    case 'maximum': {
      const exclusive =
        schema[key === 'minimum' ? 'exclusiveMinimum' : 'exclusiveMaximum'] === true;
      const sign = key === 'minimum' ? 1 : -1;
      return (v) => {
        if (!isNumeric(v)) return true;
        const c = compareValues(v, arg) * sign;
        return exclusive ? c > 0 : c >= 0;
      };
    }
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return () => true;
    case 'multipleOf':
      return (v) => !isNumeric(v) || num(v) % num(arg) === 0;
    case 'minLength':
      return (v) => typeof v !== 'string' || [...v].length >= num(arg);
    case 'maxLength':
      return (v) => typeof v !== 'string' || [...v].length <= num(arg);
    case 'pattern': {
      const re = compileRegex(String(arg), '');
      return (v) => typeof v !== 'string' || re.test(v);
    }
    case 'minItems':
      return (v) => !Array.isArray(v) || v.length >= num(arg);
    case 'maxItems':
      return (v) => !Array.isArray(v) || v.length <= num(arg);
    case 'uniqueItems':
      return (v) =>
        !arg || !Array.isArray(v) || v.every((x, i) => v.findIndex((y) => valuesEqual(x, y)) === i);
    case 'items':
      return itemsCheck(arg, schema.additionalItems);
    case 'additionalItems':
      return () => true;
    case 'minProperties':
      return (v) => !isDoc(v) || Object.keys(v).length >= num(arg);
    case 'maxProperties':
      return (v) => !isDoc(v) || Object.keys(v).length <= num(arg);
    case 'allOf':
    case 'anyOf':
    case 'oneOf': {
      const subs = (arg as unknown[]).map(compileSchema);
      if (key === 'allOf') return (v) => subs.every((s) => s(v));
      if (key === 'anyOf') return (v) => subs.some((s) => s(v));
      return (v) => subs.filter((s) => s(v)).length === 1;
    }
    case 'not': {
      const sub = compileSchema(arg);
      return (v) => !sub(v);
    }
    case 'dependencies':
      return dependencies(arg);
    case 'title':
    case 'description':
      return () => true;
    default:
      throw new CommandError('FailedToParse', `Unknown $jsonSchema keyword: ${key}`);
  }
}

function additionalProperties(arg: unknown, schema: Document): Check {
  const known = new Set(Object.keys((schema.properties as Document) ?? {}));
  const patterns = Object.entries((schema.patternProperties as Document) ?? {}).map(
    ([p, s]) => [compileRegex(p, ''), compileSchema(s)] as const,
  );
  const extra: Check = arg === false ? () => false : arg === true ? () => true : compileSchema(arg);
  return (v) => {
    if (!isDoc(v)) return true;
    return Object.keys(v).every((f) => {
      const matching = patterns.filter(([re]) => re.test(f));
      if (!matching.every(([, s]) => s(v[f]))) return false;
      return known.has(f) || matching.length > 0 || extra(v[f]);
    });
  };
}

function itemsCheck(arg: unknown, additional: unknown): Check {
  if (!Array.isArray(arg)) {
    const each = compileSchema(arg);
    return (v) => !Array.isArray(v) || v.every(each);
  }
  const tuple = arg.map(compileSchema);
  const rest: Check =
    additional === false
      ? () => false
      : isDocument(additional)
        ? compileSchema(additional)
        : () => true;
  return (v) => !Array.isArray(v) || v.every((x, i) => (i < tuple.length ? tuple[i](x) : rest(x)));
}

function dependencies(arg: Document): Check {
  const deps = Object.entries(arg).map(([f, d]) => {
    const check: Check = Array.isArray(d)
      ? (v) => d.every((r: string) => r in (v as Document))
      : compileSchema(d);
    return [f, check] as const;
  });
  return (v) => !isDoc(v) || deps.every(([f, c]) => !(f in v) || c(v));
}
