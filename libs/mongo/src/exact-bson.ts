import type { BSONSerializeOptions } from 'mongodb';

/**
 * Decoding that keeps every BSON type as it is: Int32/Int64/Double stay distinct wrappers (so
 * -0.0 and 1.0 vs 1 survive), Binary keeps its subtype, regexes keep their flags. Used for
 * everything the copy reads and for metadata that must round-trip (options, indexes, bounds).
 */
export const EXACT_BSON = {
  promoteValues: false,
  promoteLongs: false,
  promoteBuffers: false,
  bsonRegExp: true,
} as const satisfies BSONSerializeOptions;

/** Numbers from unpromoted documents (Int32/Int64/Double wrappers) as plain numbers. */
export function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (value && typeof value === 'object') {
    const v = value as { toNumber?: () => number; valueOf(): unknown };
    return typeof v.toNumber === 'function' ? v.toNumber() : Number(v.valueOf());
  }
  return value === undefined || value === null ? 0 : Number(value);
}
