import type { Document } from 'bson';
import { toNumber } from './change-event';

/**
 * Splits a dotted path of an updateDescription into its real components. A path is only
 * ambiguous when a component is numeric-looking (array index or field name?) or a field name
 * itself contains a dot. MongoDB 6.1+ with showExpandedEvents (8.2+ always) sends
 * `disambiguatedPaths` on every update event — an object, empty when nothing is ambiguous — and
 * lists each ambiguous path there (strings for field names, integers for indexes). Returns null
 * when the path cannot be written back as a dotted update path: a field name with a dot, a `$`
 * prefix or an empty name has no dotted spelling, so `$set`/`$unset` would address a different
 * field.
 *
 * Without `disambiguatedPaths` (older sources, or a stream without showExpandedEvents) a dotted
 * path is ambiguous: `{"a.b": 1}` is either field "b" of "a" or a top-level field named "a.b".
 * Such paths return null unless `sourceDisambiguates` says the source lists every ambiguous
 * path, so that an absent map proves there is none. A single-component path is never ambiguous
 * (a top-level "0" is a field name: the root is a document, not an array).
 *
 * Numeric field names need no special care: a dotted path resolves against the destination
 * document, whose shape is the source's, so `a.0` hits field "0" of an object and element 0 of
 * an array exactly as it did on the source.
 */
export function pathComponents(
  path: string,
  disambiguated: Document | undefined,
  sourceDisambiguates = false,
): string[] | null {
  if (!disambiguated && !sourceDisambiguates && isAmbiguousWithoutDisambiguation(path)) {
    return null;
  }
  const listed = disambiguated?.[path] as unknown[] | undefined;
  const parts = Array.isArray(listed)
    ? listed.map((c) => (typeof c === 'string' ? c : String(toNumber(c))))
    : path.split('.');
  if (Array.isArray(listed)) {
    for (const c of listed) if (typeof c === 'string' && c.includes('.')) return null;
  }
  for (const part of parts) if (part === '' || part.startsWith('$')) return null;
  return parts;
}

/**
 * True when `path` cannot be resolved without `disambiguatedPaths`: it has a dot, so it may be
 * a nested path (whose components may be array indexes or numeric field names) or a field name
 * containing dots.
 */
export function isAmbiguousWithoutDisambiguation(path: string): boolean {
  return path.includes('.');
}

/** True when one path is a prefix of the other (they cannot share one update document). */
export function pathsConflict(a: string[], b: string[]): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * MongoDB 5.0+ applies update operators to fields in lexicographic order (numeric names in
 * numeric order), so new fields created by one `$set` are appended in that order. Returns a
 * negative number when `a` is applied before `b`.
 */
export function compareFieldNames(a: string, b: string): number {
  const na = /^\d+$/.test(a);
  const nb = /^\d+$/.test(b);
  if (na && nb) {
    const d = a.length - b.length;
    return d !== 0 ? d : a < b ? -1 : a > b ? 1 : 0;
  }
  const ba = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  return Buffer.compare(ba, bb);
}
