import type { Document } from 'bson';
import { getPath, isDocument, setPath, cloneDeep } from '../bson/paths';
import { compileFilter } from './matcher';
import { CommandError } from '../errors';

/**
 * The array index the positional `$` stands for: the first element of the array at `prefix`
 * that satisfies a query predicate on that array. mongod records this "elemMatchKey" while
 * matching; here each predicate touching the array is re-run against one element at a time.
 */
export function positionalIndex(doc: Document, query: Document, prefix: string[]): number {
  const arr = getPath(doc, prefix);
  if (!Array.isArray(arr)) throw positionalNotFound();
  const prefixPath = prefix.join('.');
  for (const [key, cond] of predicates(query)) {
    if (key !== prefixPath && !key.startsWith(`${prefixPath}.`)) continue;
    const match = compileFilter({ [key]: cond });
    for (let i = 0; i < arr.length; i++) {
      const probe = cloneDeep(doc);
      setPath(probe, prefix, [arr[i]]);
      if (match(probe)) return i;
    }
  }
  throw positionalNotFound();
}

/** Field predicates of a query, including those nested in $and. */
function predicates(query: Document): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  for (const key of Object.keys(query)) {
    if (key === '$and' && Array.isArray(query.$and)) {
      for (const sub of query.$and) if (isDocument(sub)) out.push(...predicates(sub));
    } else if (!key.startsWith('$')) {
      out.push([key, query[key]]);
    }
  }
  return out;
}

export function positionalNotFound(): CommandError {
  return new CommandError(
    'BadValue',
    'The positional operator did not find the match needed from the query.',
  );
}
