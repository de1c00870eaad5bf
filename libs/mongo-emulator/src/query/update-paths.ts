import type { Document } from 'bson';
import { getPath, isDocument } from '../bson/paths';
import { CommandError } from '../errors';
import { formatElement } from './format';
import { compileFilter } from './matcher';
import { positionalIndex, positionalNotFound } from './positional';

/** Splits and validates an update path as mongod's field checker does. */
export function parseUpdatePath(path: string): string[] {
  const parts = path.split('.');
  if (parts.some((p) => p === '')) {
    throw new CommandError(
      56,
      `The update path '${path}' contains an empty field name, which is not allowed.`,
    );
  }
  if (parts[0].startsWith('$')) {
    throw new CommandError(
      'DollarPrefixedFieldName',
      `The dollar ($) prefixed field '${parts[0]}' in '${path}' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.`,
    );
  }
  if (parts.filter((p) => p === '$').length > 1) {
    throw new CommandError(
      'BadValue',
      `Too many positional (i.e. '$') elements found in path '${path}'`,
    );
  }
  return parts;
}

/**
 * Throws ConflictingUpdateOperators when `path` overlaps a path already updated: mongod
 * builds one tree of update nodes and refuses a node on, above or below another one.
 */
export function checkConflict(seen: string[][], path: string[], label: string): void {
  for (const other of seen) {
    const n = Math.min(other.length, path.length);
    let i = 0;
    while (i < n && other[i] === path[i]) i++;
    if (i === n) {
      throw new CommandError(
        'ConflictingUpdateOperators',
        `Updating the path '${label}' would create a conflict at '${path.slice(0, n).join('.')}'`,
      );
    }
  }
  seen.push(path);
}

export interface ArrayFilterSet {
  matchers: Map<string, (element: unknown) => boolean>;
  used: Set<string>;
}

/** Compiles arrayFilters: every filter's top-level fields must share one identifier. */
export function compileArrayFilters(filters: Document[] = []): ArrayFilterSet {
  const matchers = new Map<string, (element: unknown) => boolean>();
  for (const filter of filters) {
    if (!isDocument(filter))
      throw new CommandError('TypeMismatch', 'arrayFilters must be an array of objects');
    let id: string | undefined;
    for (const key of Object.keys(filter)) {
      const top = key.startsWith('$') ? undefined : key.split('.')[0];
      if (top === undefined) continue;
      if (!/^[a-z][a-zA-Z0-9]*$/.test(top)) {
        throw new CommandError(
          'BadValue',
          `The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '${top}'`,
        );
      }
      if (id !== undefined && id !== top) {
        throw new CommandError(
          'FailedToParse',
          `Error parsing array filter :: caused by :: Expected a single top-level field name, found '${id}' and '${top}'`,
        );
      }
      id = top;
    }
    if (id === undefined) {
      throw new CommandError(
        'FailedToParse',
        'Cannot use an expression without a top-level field name in arrayFilters',
      );
    }
    if (matchers.has(id)) {
      throw new CommandError(
        'FailedToParse',
        `Found multiple array filters with the same top-level field name ${id}`,
      );
    }
    // An element matches when the filter matches a document holding it under the identifier.
    const match = compileFilter(filter);
    const name = id;
    matchers.set(name, (element) => match({ [name]: element }));
  }
  return { matchers, used: new Set() };
}

export interface ResolveContext {
  doc: Document;
  query?: Document;
  arrayFilters: ArrayFilterSet;
  isUpsertInsert: boolean;
}

/**
 * Expands positional components into concrete paths: `$` becomes the index matched by the
 * query, `$[]` every index and `$[id]` the indexes whose element passes arrayFilters[id].
 */
export function resolvePositional(parts: string[], path: string, ctx: ResolveContext): string[][] {
  for (const p of parts) {
    const m = /^\$\[(.*)\]$/.exec(p);
    if (m && m[1] !== '') {
      if (!ctx.arrayFilters.matchers.has(m[1])) {
        throw new CommandError(
          'BadValue',
          `No array filter found for identifier '${m[1]}' in path '${path}'`,
        );
      }
      ctx.arrayFilters.used.add(m[1]);
    }
  }
  let results: string[][] = [[]];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    if (part === '$') {
      if (ctx.isUpsertInsert || !ctx.query) throw positionalNotFound();
      const prefix = parts.slice(0, i);
      results = results.map((r) => [...r, String(positionalIndex(ctx.doc, ctx.query!, prefix))]);
      continue;
    }
    const m = /^\$\[(.*)\]$/.exec(part);
    if (!m) {
      results = results.map((r) => [...r, part]);
      continue;
    }
    const next: string[][] = [];
    for (const r of results) {
      const arr = getPath(ctx.doc, r);
      if (arr === undefined) {
        if (ctx.isUpsertInsert) continue;
        throw new CommandError(
          'BadValue',
          `The path '${r.join('.')}' must exist in the document in order to apply array updates.`,
        );
      }
      if (!Array.isArray(arr)) {
        throw new CommandError(
          'BadValue',
          `Cannot apply array updates to non-array element ${formatElement(r[r.length - 1], arr)}`,
        );
      }
      const test = m[1] === '' ? () => true : ctx.arrayFilters.matchers.get(m[1])!;
      arr.forEach((el, idx) => {
        if (test(el)) next.push([...r, String(idx)]);
      });
    }
    results = next;
  }
  return results;
}

/** mongod applies updates in field order: numeric components numerically, others bytewise. */
export function comparePaths(a: string[], b: string[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] === b[i]) continue;
    const na = /^\d+$/.test(a[i]);
    const nb = /^\d+$/.test(b[i]);
    if (na && nb) return Number(a[i]) - Number(b[i]);
    return Buffer.compare(Buffer.from(a[i]), Buffer.from(b[i]));
  }
  return a.length - b.length;
}
