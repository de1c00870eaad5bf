import { BSON, type Document } from 'bson';
import { bsonTypeOf, isNumeric, toNumber } from '../bson/compare';
import { arrayIndexOf, isDocument } from '../bson/paths';
import { CommandError } from '../errors';

/** Values one key-pattern field takes in a document, as MongoDB's key generator sees them. */
export interface FieldKeys {
  values: unknown[];
  /** The path met an array: this field makes the index multikey. */
  multikey: boolean;
  /** At least one value exists (sparse indexes skip documents where no field is present). */
  present: boolean;
}

/**
 * Walks a dotted path with MongoDB's index-key semantics: arrays on the way are traversed
 * (elements that are documents), a numeric component also addresses an array element, a
 * terminal array contributes each element (an empty array contributes `undefined`), and a
 * missing field contributes null.
 */
export function fieldKeys(doc: Document, path: string[]): FieldKeys {
  const out: FieldKeys = { values: [], multikey: false, present: false };
  walk(doc, path, 0, out);
  if (out.values.length === 0) out.values.push(null);
  return out;
}

function walk(value: unknown, path: string[], i: number, out: FieldKeys): void {
  if (i === path.length) {
    if (value === undefined) return;
    out.present = true;
    if (Array.isArray(value)) {
      out.multikey = true;
      if (value.length === 0) out.values.push(undefined);
      else for (const el of value) out.values.push(el);
    } else {
      out.values.push(value);
    }
    return;
  }
  if (Array.isArray(value)) {
    out.multikey = true;
    const idx = arrayIndexOf(path[i]);
    if (idx !== undefined && idx < value.length) walk(value[idx], path, i + 1, out);
    for (const el of value) if (isDocument(el)) walk(el[path[i]], path, i + 1, out);
    return;
  }
  if (isDocument(value)) walk(value[path[i]], path, i + 1, out);
}

/** Removes duplicate values so a multikey document has each key once. */
export function dedupe(values: unknown[], compare: (a: unknown, b: unknown) => number): unknown[] {
  if (values.length < 2) return values;
  const sorted = [...values].sort(compare);
  const out = [sorted[0]];
  for (let i = 1; i < sorted.length; i++)
    if (compare(sorted[i], out[out.length - 1]) !== 0) out.push(sorted[i]);
  return out;
}

/**
 * 64-bit FNV-1a over a canonical encoding of the value, as a signed bigint. Numbers hash by
 * value (1, 1.0 and NumberLong(1) collide, as in MongoDB) but the function itself differs
 * from mongod's md5-based hash, so hashed key values are not comparable with a real server.
 */
export function hashValue(value: unknown): bigint {
  let bytes: Uint8Array;
  if (isNumeric(value)) {
    const n = toNumber(value);
    const i = Number.isFinite(n) ? Math.trunc(n) : n;
    bytes = new TextEncoder().encode(`n:${i}`);
  } else if (Array.isArray(value)) {
    throw new CommandError(
      16766 as number,
      'Error: hashed indexes do not currently support array values',
    );
  } else {
    bytes = BSON.serialize({ t: bsonTypeOf(value), v: value } as Document);
  }
  let h = 0xcbf29ce484222325n;
  for (const b of bytes) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return BigInt.asIntN(64, h);
}
