import type { Document } from 'bson';
import { isNumeric, toNumber } from '../bson/compare';
import { isDocument, queryCandidates } from '../bson/paths';
import { CommandError } from '../errors';
import { valueComparatorFor, type ValueComparator } from './collation';

export interface SortField {
  path: string;
  /** 1 ascending, -1 descending, 0 for {$meta} keys (which do not order documents here). */
  direction: 1 | -1 | 0;
}

/** Validates a sort document as mongod does (find and $sort share the parser). */
export function parseSortSpec(spec: Document): SortField[] {
  if (!isDocument(spec)) throw new CommandError('BadValue', 'sort must be an object');
  return Object.keys(spec).map((path) => {
    if (path === '')
      throw new CommandError(40352, 'FieldPath cannot be constructed with empty string');
    if (path.startsWith('$')) {
      throw new CommandError(
        16410,
        `FieldPath field names may not start with '$'. Consider using $getField or $setField.`,
      );
    }
    const v = spec[path];
    if (isDocument(v)) {
      if (v.$meta === undefined) {
        throw new CommandError(17312, '$meta is the only expression supported by $sort right now');
      }
      return { path, direction: 0 };
    }
    const n = isNumeric(v) ? toNumber(v) : NaN;
    if (n !== 1 && n !== -1) {
      throw new CommandError(
        15975,
        '$sort key ordering must be 1 (for ascending) or -1 (for descending)',
      );
    }
    return { path, direction: n };
  });
}

/**
 * The value a document sorts by on one path: the smallest (ascending) or largest
 * (descending) value the path reaches, with arrays contributing their elements. A missing
 * field sorts as null and an empty array as undefined, just below null (as in mongod).
 */
export function sortKeyFor(
  doc: Document,
  path: string,
  direction: 1 | -1,
  cmp: ValueComparator = valueComparatorFor(),
): unknown {
  let best: unknown;
  let found = false;
  for (const c of queryCandidates(doc, path)) {
    let v: unknown;
    if (!c.exists) v = null;
    else if (Array.isArray(c.value) && !c.expanded) {
      if (c.value.length > 0) continue; // its elements follow as expanded candidates
      v = undefined;
    } else v = c.value;
    if (!found || cmp(v, best) * direction < 0) {
      best = v;
      found = true;
    }
  }
  return found ? best : null;
}

/** The full sort key of a document: one value per ordering field of the spec. */
export function sortKey(doc: Document, spec: Document, collation?: Document): unknown[] {
  const cmp = valueComparatorFor(collation);
  return parseSortSpec(spec)
    .filter((f) => f.direction !== 0)
    .map((f) => sortKeyFor(doc, f.path, f.direction as 1 | -1, cmp));
}

/** A comparator ordering documents as `sort` would; ties keep their input order when used with a stable sort. */
export function compileSort(
  spec: Document,
  options: { collation?: Document } = {},
): (a: Document, b: Document) => number {
  const fields = parseSortSpec(spec).filter((f) => f.direction !== 0);
  const cmp = valueComparatorFor(options.collation);
  return (a, b) => {
    for (const f of fields) {
      const dir = f.direction as 1 | -1;
      const c = cmp(sortKeyFor(a, f.path, dir, cmp), sortKeyFor(b, f.path, dir, cmp));
      if (c !== 0) return c * dir;
    }
    return 0;
  };
}
