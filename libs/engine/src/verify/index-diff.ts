import type { Document } from 'bson';
import { bytesEqual } from './document-diff';

/**
 * Differences between two index lists (specs as `listIndexes` reports them, without `v`/`ns`).
 * `compareUnique` false ignores `unique` (relaxed during a sync).
 *
 * An index's options are named, not ordered: each option's value is compared as exact BSON
 * (so `key` keeps its field order, and an Int32 is not a Double), but the options' order is not.
 * mongod itself reorders them: `collMod` rewrites a changed option at the end of the spec
 * (`unique` after the sync restores a relaxed index, `hidden`, `expireAfterSeconds`), so a
 * destination index built `{v, key, name, collation}` and made unique lists
 * `{..., collation, unique}` where the source lists `{..., unique, collation}`: the same index.
 */
export function diffIndexes(
  source: Document[],
  destination: Document[],
  compareUnique: boolean,
): string[] {
  const normalise = (specs: Document[]) =>
    new Map(
      specs.map((spec) => {
        const { v: _v, ns: _ns, ...rest } = spec;
        if (!compareUnique) delete rest.unique;
        return [String(spec.name), rest];
      }),
    );
  const s = normalise(source);
  const d = normalise(destination);
  const problems: string[] = [];
  for (const [name, spec] of s) {
    const other = d.get(name);
    if (!other) problems.push(`index ${name} missing on destination`);
    else {
      const differing = differingOptions(spec, other);
      if (differing.length > 0) problems.push(`index ${name} differs (${differing.join(', ')})`);
    }
  }
  for (const name of d.keys()) {
    if (!s.has(name)) problems.push(`index ${name} only on destination`);
  }
  return problems;
}

/** The options one spec has and the other lacks, or both have with other BSON values. */
function differingOptions(a: Document, b: Document): string[] {
  const names = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...names].filter(
    (option) => !(option in a) || !(option in b) || !sameValue(a[option], b[option]),
  );
}

/**
 * Equal as BSON. A string, boolean or JS number equal to its counterpart by `Object.is`
 * encodes to the same bytes (most options: `name`, `unique`, `sparse`), so only the rest is
 * encoded to compare — at 100,000 namespaces the metadata check compares ~400,000 options.
 */
function sameValue(a: unknown, b: unknown): boolean {
  const primitive = typeof a === 'string' || typeof a === 'boolean' || typeof a === 'number';
  if (primitive && typeof b === typeof a && Object.is(a, b)) return true;
  return bytesEqual({ o: a }, { o: b });
}
