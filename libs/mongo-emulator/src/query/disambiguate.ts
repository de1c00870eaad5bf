import type { UpdateDescription } from '../oplog/oplog-entry';

/** One component of an updateDescription path: a field name, or an index into an array. */
export interface DescPart {
  name: string;
  isIndex: boolean;
}

/**
 * Records `disambiguatedPaths[dotted]` when a path is ambiguous, with mongod's rules
 * (change_stream_document_diff_parser.cpp): a path becomes ambiguous at a field name that
 * contains a dot, or at a strictly numeric field name that is not the first component (a
 * field of an object, not an array index); array indices alone do not make it ambiguous. The
 * value lists every component, array indices as integers.
 */
export function noteAmbiguity(out: UpdateDescription, dotted: string, parts: DescPart[]): void {
  let ambiguous = false;
  for (let i = 0; i < parts.length && !ambiguous; i++) {
    const { name, isIndex } = parts[i];
    if (isIndex) continue;
    ambiguous = (i > 0 && isStrictNumeric(name)) || name.includes('.');
  }
  if (!ambiguous) return;
  out.disambiguatedPaths ??= {};
  out.disambiguatedPaths[dotted] = parts.map((p) => (p.isIndex ? Number(p.name) : p.name));
}

/** FieldRef::isNumericPathComponentStrict: digits only, no leading zero (except "0"). */
function isStrictNumeric(name: string): boolean {
  return /^(0|[1-9]\d*)$/.test(name);
}

/** Dotted form of a path. */
export function dottedOf(parts: DescPart[]): string {
  return parts.map((p) => p.name).join('.');
}
