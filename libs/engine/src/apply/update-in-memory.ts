import type { Document } from 'bson';
import { compareFieldNames } from './update-paths';

/**
 * Applies a replayed update (as translateUpdate builds it) onto a full document held in memory
 * — the replacement of a pending insert or replace — when, and only when, the result is exactly
 * what the destination would make of the same update: the same values, types and field order.
 * Returns the new document (the input is not modified: objects along changed paths are copied),
 * or null when the update must stay an operation.
 *
 * Reproduced (MongoDB 5.0+ semantics):
 * - `$set` of a path through embedded documents: an existing field keeps its position and takes
 *   the new value; a missing field (and missing parents, as embedded documents) is appended to
 *   its parent; fields one update creates under one parent are appended in the order MongoDB
 *   applies them (field names lexicographically, numeric names numerically: compareFieldNames);
 * - `$unset`: an existing field is removed (the others keep their order); a path whose parent
 *   is missing is a no-op.
 *
 * Kept as an operation (null) — the destination applies it, with its own rules and errors:
 * - any operator other than `$set`/`$unset` (e.g. a truncation's `$push … $slice`);
 * - a path that reaches into an array or through a value that is not an embedded document
 *   (a scalar, null, a BSON wrapper, a DBRef): array element updates, padding and the errors of
 *   a non-viable path are not reproduced;
 * - creating a field whose name is all digits (a JS object would enumerate it first) or that is
 *   `__proto__`; a path on `_id`; an empty or `$`-prefixed component;
 * - a document that holds, anywhere, a field named like an array index ("1", "2024"): decoded
 *   into a JS object it has lost its field order already (such names are enumerated first);
 *   written as an operation, the destination keeps the order the source has;
 * - two paths of the update that overlap (MongoDB refuses the update).
 */
export function applyUpdateInMemory(doc: Document, update: Document): Document | null {
  const operators = Object.keys(update);
  for (const op of operators) if (op !== '$set' && op !== '$unset') return null;
  const sets = (update.$set ?? {}) as Document;
  const unsets = (update.$unset ?? {}) as Document;
  if (!isPlainDocument(sets) || !isPlainDocument(unsets)) return null;
  const paths: Array<{ parts: string[]; set: boolean; value?: unknown }> = [];
  for (const path of Object.keys(sets))
    paths.push({ parts: path.split('.'), set: true, value: sets[path] });
  for (const path of Object.keys(unsets)) paths.push({ parts: path.split('.'), set: false });
  for (const { parts } of paths) {
    if (parts[0] === '_id') return null;
    for (const part of parts) {
      if (part === '' || part.startsWith('$') || part === '__proto__') return null;
    }
  }
  for (let i = 0; i < paths.length; i++) {
    for (let j = i + 1; j < paths.length; j++) {
      if (overlap(paths[i].parts, paths[j].parts)) return null;
    }
  }
  // MongoDB's order of application: field by field, compareFieldNames at each level.
  paths.sort((a, b) => comparePaths(a.parts, b.parts));

  const root: Document = { ...doc };
  /** Objects already copied (safe to modify): the copy of `doc` and copies made below. */
  const owned = new Set<Document>([root]);
  for (const { parts, set, value } of paths) {
    let parent: Document | undefined = root;
    for (let i = 0; i < parts.length - 1; i++) {
      const name = parts[i];
      if (!Object.prototype.hasOwnProperty.call(parent, name)) {
        if (!set) {
          parent = undefined;
          break; // $unset below a missing field: nothing to remove
        }
        if (!creatable(name)) return null;
        const created: Document = {};
        owned.add(created);
        (parent as Document)[name] = created;
        parent = created;
        continue;
      }
      const child = (parent as Document)[name] as unknown;
      if (!isPlainDocument(child)) return null;
      let copy = child;
      if (!owned.has(child)) {
        copy = { ...child };
        owned.add(copy);
        (parent as Document)[name] = copy;
      }
      parent = copy;
    }
    if (parent === undefined) continue;
    const last = parts[parts.length - 1];
    const exists = Object.prototype.hasOwnProperty.call(parent, last);
    if (set) {
      if (!exists && !creatable(last)) return null;
      parent[last] = value;
    } else if (exists) {
      delete parent[last];
    }
  }
  return keepsFieldOrder(root) ? root : null;
}

/**
 * False when a document (at any depth, set values included) holds a field name a JS object
 * enumerates before its other keys — an array index such as "0" or "2024" — whatever order
 * it had in BSON: encoded again, such a document would not have the source's field order.
 */
export function keepsFieldOrder(value: unknown): boolean {
  if (Array.isArray(value)) return value.every(keepsFieldOrder);
  if (!isPlainDocument(value)) return true;
  for (const key of Object.keys(value)) {
    if (isArrayIndex(key)) return false;
    if (!keepsFieldOrder(value[key])) return false;
  }
  return true;
}

/** A key JS enumerates first, in ascending order: a canonical integer below 2^32 − 1. */
function isArrayIndex(key: string): boolean {
  return /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 4294967295;
}

/** A name a JS object appends in insertion order (never enumerated before older keys). */
function creatable(name: string): boolean {
  return !/^\d+$/.test(name);
}

function overlap(a: string[], b: string[]): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

function comparePaths(a: string[], b: string[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = compareFieldNames(a[i], b[i]);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/** An embedded document as decoded (not an array, not a BSON wrapper such as DBRef). */
function isPlainDocument(value: unknown): value is Document {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  if ((value as { _bsontype?: unknown })._bsontype !== undefined) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}
