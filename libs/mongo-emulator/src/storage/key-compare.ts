import type { Document } from 'bson';
import { canonicalRank, compareValues } from '../bson/compare';
import { valueComparatorFor } from '../query/collation';

/**
 * A sentinel placed in an index key to express scan bounds: it sorts just below (side -1) or
 * just above (side +1) every value of canonical type rank `rank`. LOW/HIGH bound all values.
 * Sentinels never appear in stored keys, so they never compare equal to one.
 */
export class Bound {
  constructor(
    readonly rank: number,
    readonly side: -1 | 1,
  ) {}
}

export const LOW = new Bound(-Infinity, -1);
export const HIGH = new Bound(Infinity, 1);

export type ValueComparator = (a: unknown, b: unknown) => number;

function compareBoundToValue(bound: Bound, value: unknown): number {
  if (value instanceof Bound) {
    if (bound.rank !== value.rank) return bound.rank < value.rank ? -1 : 1;
    return bound.side === value.side ? 0 : bound.side;
  }
  const r = canonicalRank(value);
  if (bound.rank !== r) return bound.rank < r ? -1 : 1;
  return bound.side;
}

function compareObjectIdBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < 12; i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

/**
 * compareValues with fast paths for the key types that dominate real workloads (ObjectId,
 * strings, small numbers). The generic path allocates (Buffer views), which matters when a
 * B-tree does ~20 comparisons per insert over a million documents.
 */
export function fastCompare(a: unknown, b: unknown): number {
  if (a instanceof Bound) return compareBoundToValue(a, b);
  if (b instanceof Bound) return -compareBoundToValue(b, a);
  const ta = typeof a;
  if (ta === typeof b) {
    if (ta === 'string') {
      const x = a as string;
      const y = b as string;
      // Plain UTF-16 order equals UTF-8 byte order except around surrogates; compareValues handles those.
      if (x === y) return 0;
      if (!hasSurrogate(x) && !hasSurrogate(y)) return x < y ? -1 : 1;
      return compareValues(a, b);
    }
    if (ta === 'number') {
      const x = a as number;
      const y = b as number;
      if (x < y) return -1;
      if (x > y) return 1;
      if (x === y) return 0;
      return compareValues(a, b);
    }
    if (ta === 'object' && a !== null && b !== null) {
      const tagA = (a as { _bsontype?: string })._bsontype;
      if (tagA !== undefined && tagA === (b as { _bsontype?: string })._bsontype) {
        if (tagA === 'ObjectId') {
          return compareObjectIdBytes((a as { id: Uint8Array }).id, (b as { id: Uint8Array }).id);
        }
        if (tagA === 'Int32' || tagA === 'Double') {
          const x = (a as { value: number }).value;
          const y = (b as { value: number }).value;
          if (x < y) return -1;
          if (x > y) return 1;
          if (x === y) return 0;
        }
      }
    }
  }
  return compareValues(a, b);
}

function hasSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdfff) return true;
  }
  return false;
}

/**
 * Value comparator for an index or query collation: the fast binary order when simple,
 * otherwise the query layer's collation-aware order (sentinels handled here).
 */
export function comparatorFor(collation: Document | undefined): ValueComparator {
  if (!collation || collation.locale === undefined || collation.locale === 'simple')
    return fastCompare;
  const collated = valueComparatorFor(collation);
  return (a, b) => {
    if (a instanceof Bound) return compareBoundToValue(a, b);
    if (b instanceof Bound) return -compareBoundToValue(b, a);
    return collated(a, b);
  };
}

/** Two collations are interchangeable for index use when both are simple or they are equal. */
export function sameCollation(a: Document | undefined, b: Document | undefined): boolean {
  const simpleA = !a || a.locale === 'simple';
  const simpleB = !b || b.locale === 'simple';
  if (simpleA || simpleB) return simpleA === simpleB;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) if (compareValues(a[k], b[k]) !== 0) return false;
  return true;
}
