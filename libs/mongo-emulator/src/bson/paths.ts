import type { Document } from 'bson';
import { CommandError } from '../errors';
import { formatElement } from '../query/format';

/**
 * Dotted-path helpers. Queries read paths with MongoDB's implicit array traversal; updates
 * address exactly one location per path, where a numeric component indexes an array.
 */

/** A plain JS object used as a BSON document (not a BSON wrapper class, array or Date). */
export function isDocument(value: unknown): value is Document {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A path component usable as an array index: decimal digits (MongoDB accepts leading zeros). */
export function arrayIndexOf(part: string): number | undefined {
  return /^\d+$/.test(part) ? Number(part) : undefined;
}

/** One value reached by a query path. `exists` is false where the path ends in a missing field. */
export interface QueryCandidate {
  value: unknown;
  exists: boolean;
  /** True for elements of a leaf array (the array itself is yielded too, unexpanded). */
  expanded: boolean;
}

/**
 * Every value a query predicate on `path` is tested against: arrays met on the way are
 * traversed element by element (documents only), and a numeric component on an array also
 * addresses that element. A leaf array is yielded whole and, when `expandLeaf`, per element.
 */
export function queryCandidates(doc: unknown, path: string, expandLeaf = true): QueryCandidate[] {
  const out: QueryCandidate[] = [];
  walk(doc, path.split('.'), 0, expandLeaf, out);
  return out;
}

function walk(value: unknown, parts: string[], i: number, expand: boolean, out: QueryCandidate[]) {
  if (i === parts.length) {
    out.push({ value, exists: true, expanded: false });
    if (expand && Array.isArray(value)) {
      for (const el of value) out.push({ value: el, exists: true, expanded: true });
    }
    return;
  }
  if (isDocument(value)) {
    if (Object.prototype.hasOwnProperty.call(value, parts[i])) {
      walk(value[parts[i]], parts, i + 1, expand, out);
    } else {
      out.push({ value: undefined, exists: false, expanded: false });
    }
    return;
  }
  if (Array.isArray(value)) {
    const index = arrayIndexOf(parts[i]);
    if (index !== undefined && index < value.length) {
      walk(value[index], parts, i + 1, expand, out);
    }
    // Documents inside the array are searched for the same component (it may be a field name).
    for (const el of value) if (isDocument(el)) walk(el, parts, i, expand, out);
    return;
  }
  out.push({ value: undefined, exists: false, expanded: false });
}

/** The value at `path` without array traversal (numeric components index arrays). */
export function getPath(doc: unknown, path: string | string[]): unknown {
  const parts = typeof path === 'string' ? path.split('.') : path;
  let cur: unknown = doc;
  for (const part of parts) {
    if (isDocument(cur)) {
      if (!Object.prototype.hasOwnProperty.call(cur, part)) return undefined;
      cur = cur[part];
    } else if (Array.isArray(cur)) {
      const index = arrayIndexOf(part);
      if (index === undefined || index >= cur.length) return undefined;
      cur = cur[index];
    } else {
      return undefined;
    }
  }
  return cur;
}

/** Whether `path` resolves to an existing field (array indexes included). */
export function hasPath(doc: unknown, path: string | string[]): boolean {
  const parts = typeof path === 'string' ? path.split('.') : path;
  const parent = getPath(doc, parts.slice(0, -1));
  const last = parts[parts.length - 1];
  if (isDocument(parent)) return Object.prototype.hasOwnProperty.call(parent, last);
  if (Array.isArray(parent)) {
    const index = arrayIndexOf(last);
    return index !== undefined && index < parent.length;
  }
  return false;
}

/**
 * Sets `path` in place, creating missing intermediate documents. A numeric component on an
 * array writes that index, padding with nulls as MongoDB does; anything else that cannot hold
 * a field is PathNotViable.
 */
export function setPath(doc: Document, path: string | string[], value: unknown): void {
  const parts = typeof path === 'string' ? path.split('.') : path;
  let cur: unknown = doc;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    const last = i === parts.length - 1;
    if (isDocument(cur)) {
      if (last) {
        cur[part] = value;
        return;
      }
      const next = cur[part];
      if (next === undefined && !Object.prototype.hasOwnProperty.call(cur, part)) cur[part] = {};
      cur = cur[part];
    } else if (Array.isArray(cur)) {
      const index = arrayIndexOf(part);
      if (index === undefined) throw notViable(part, parts[i - 1], cur);
      while (cur.length < index) cur.push(null);
      if (last) {
        cur[index] = value;
        return;
      }
      if (index === cur.length || cur[index] === undefined) cur[index] = {};
      cur = cur[index];
    } else {
      throw notViable(part, parts[i - 1], cur);
    }
  }
}

function notViable(part: string, parentName: string, parent: unknown): CommandError {
  return new CommandError(
    'PathNotViable',
    `Cannot create field '${part}' in element {${formatElement(parentName, parent)}}`,
  );
}

/**
 * Removes `path` in place. An array element is not removed but set to null, as `$unset` does.
 * Returns whether something existed there.
 */
export function unsetPath(doc: Document, path: string | string[]): boolean {
  const parts = typeof path === 'string' ? path.split('.') : path;
  const parent = getPath(doc, parts.slice(0, -1));
  const last = parts[parts.length - 1];
  if (isDocument(parent)) {
    if (!Object.prototype.hasOwnProperty.call(parent, last)) return false;
    delete parent[last];
    return true;
  }
  if (Array.isArray(parent)) {
    const index = arrayIndexOf(last);
    if (index === undefined || index >= parent.length) return false;
    parent[index] = null;
    return true;
  }
  return false;
}

/** Deep copy of plain documents and arrays; BSON wrapper values are immutable and shared. */
export function cloneDeep<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => cloneDeep(v)) as T;
  if (isDocument(value)) {
    const out: Document = {};
    for (const key of Object.keys(value)) out[key] = cloneDeep(value[key]);
    return out as T;
  }
  if (value instanceof Date) return new Date(value.getTime()) as T;
  return value;
}
