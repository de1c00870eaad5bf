import type { Document } from 'bson';
import { canonicalRank, CanonicalRank, isNumeric, toNumber } from '../bson/compare';
import type { QueryCandidate } from '../bson/paths';
import type { ValueComparator } from './collation';
import { compileRegex, isRegexValue, regexParts } from './regex';

/** Single-value tests shared by the query operators: equality, regex and ranges. */

/** Decides a predicate from every value a path reaches in one document. */
export type CandidatesTest = (cands: QueryCandidate[]) => boolean;

export interface MatchContext {
  cmp: ValueComparator;
  /** Compiles a nested query document (used by $elemMatch's document form). */
  compileDoc: (filter: Document) => (doc: Document) => boolean;
}

/** Equality with MongoDB's rules: null matches missing/undefined; regexes match strings. */
export function equalityTest(
  value: unknown,
  ctx: MatchContext,
  regexMatches = true,
): CandidatesTest {
  if (regexMatches && isRegexValue(value)) return regexTest(value);
  if (value === null || value === undefined) {
    return (cands) => cands.some((c) => !c.exists || c.value === null || c.value === undefined);
  }
  return (cands) => cands.some((c) => c.exists && ctx.cmp(c.value, value) === 0);
}

export function regexTest(value: unknown, options?: string): CandidatesTest {
  const parts =
    typeof value === 'string' ? { pattern: value, options: '' } : regexParts(value as RegExp);
  const opts = options ?? parts.options;
  const re = compileRegex(parts.pattern, opts);
  return (cands) =>
    cands.some((c) => {
      if (typeof c.value === 'string') return re.test(c.value);
      const tag = (c.value as { _bsontype?: string } | null)?._bsontype;
      if (tag === 'BSONSymbol') return re.test(String((c.value as { value: string }).value));
      if (isRegexValue(c.value)) {
        const other = regexParts(c.value);
        return other.pattern === parts.pattern && other.options === opts;
      }
      return false;
    });
}

export type RangeOp = '$gt' | '$gte' | '$lt' | '$lte';

/** Range comparisons only match values of the same canonical type, except MinKey/MaxKey. */
export function rangeTest(op: RangeOp, bound: unknown, ctx: MatchContext): CandidatesTest {
  const rank = canonicalRank(bound);
  const anyType = rank === CanonicalRank.minKey || rank === CanonicalRank.maxKey;
  const boundNaN = isNumeric(bound) && Number.isNaN(toNumber(bound));
  const inclusive = op === '$gte' || op === '$lte';
  return (cands) =>
    cands.some((c) => {
      // A missing field compares as null (so {$gte: null} matches it).
      const v = c.exists ? c.value : null;
      if (!anyType && canonicalRank(v) !== rank) return false;
      if (rank === CanonicalRank.number) {
        const vNaN = Number.isNaN(toNumber(v));
        if (vNaN || boundNaN) return inclusive && vNaN && boundNaN;
      }
      const r = ctx.cmp(v, bound);
      if (r === 0) return inclusive;
      return op === '$gt' || op === '$gte' ? r > 0 : r < 0;
    });
}
