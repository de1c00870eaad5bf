import type { Document } from 'bson';
import { bytesEqual } from './document-diff';

/**
 * Differences between two index lists (specs as `listIndexes` reports them, compared as BSON
 * bytes without `v`/`ns`). `compareUnique` false ignores `unique` (relaxed during a sync).
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
    else if (!bytesEqual(spec, other)) problems.push(`index ${name} differs`);
  }
  for (const name of d.keys()) {
    if (!s.has(name)) problems.push(`index ${name} only on destination`);
  }
  return problems;
}
