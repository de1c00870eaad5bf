import type { Document } from 'bson';
import { cloneDeep, isDocument, setPath } from '../bson/paths';
import { CommandError } from '../errors';
import { isRegexValue } from './regex';

/**
 * The document an upsert starts from: every equality the query pins down (`{a: 1}`,
 * `{a: {$eq: 1}}`, a single-element `$in`, also inside `$and` or a one-branch `$or`), with
 * dotted paths expanded into subdocuments and `_id` first. Ranges, regexes and other
 * operators contribute nothing. Two equalities on the same or overlapping paths are
 * NotSingleValueField (54), as in mongod's `extractEqualityMatches`.
 */
export function upsertSeed(query: Document): Document {
  const equalities: Array<[string, unknown]> = [];
  collect(query, equalities);
  const seen: string[] = [];
  for (const [path] of equalities) {
    for (const other of seen) {
      if (other === path) {
        throw new CommandError(
          'NotSingleValueField',
          `cannot infer query fields to set, path '${path}' is matched twice`,
        );
      }
      if (path.startsWith(`${other}.`) || other.startsWith(`${path}.`)) {
        throw new CommandError(
          'NotSingleValueField',
          `cannot infer query fields to set, both paths '${other}' and '${path}' are matched`,
        );
      }
    }
    seen.push(path);
  }
  const ordered = [
    ...equalities.filter(([p]) => p === '_id' || p.startsWith('_id.')),
    ...equalities.filter(([p]) => p !== '_id' && !p.startsWith('_id.')),
  ];
  const seed: Document = {};
  for (const [path, value] of ordered) setPath(seed, path, cloneDeep(value));
  return seed;
}

function collect(query: Document, out: Array<[string, unknown]>): void {
  for (const key of Object.keys(query)) {
    const value = query[key];
    if (key === '$and' || (key === '$or' && Array.isArray(value) && value.length === 1)) {
      if (Array.isArray(value)) for (const sub of value) if (isDocument(sub)) collect(sub, out);
      continue;
    }
    if (key.startsWith('$')) continue;
    const eq = equalityValue(value);
    if (eq.found) out.push([key, eq.value]);
  }
}

function equalityValue(value: unknown): { found: boolean; value?: unknown } {
  if (isRegexValue(value)) return { found: false };
  if (!isDocument(value)) return { found: true, value };
  const keys = Object.keys(value);
  if (keys.length === 0 || !keys[0].startsWith('$') || keys[0] === '$ref' || keys[0] === '$id') {
    return { found: true, value };
  }
  // Operator documents: only a lone $eq or a one-element $in pins the value.
  if (keys.length === 1 && keys[0] === '$eq') return { found: true, value: value.$eq };
  if (
    keys.length === 1 &&
    keys[0] === '$in' &&
    Array.isArray(value.$in) &&
    value.$in.length === 1
  ) {
    if (isRegexValue(value.$in[0])) return { found: false };
    return { found: true, value: value.$in[0] };
  }
  if (keys.includes('$eq')) return { found: true, value: value.$eq };
  return { found: false };
}
