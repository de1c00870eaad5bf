import type { Document } from 'bson';
import type { BuildIndexesMode } from '@sync/contracts';
import type { RelaxedIndex } from '../ports/job-store';

/** TTL value used while syncing: effectively "never expire" (what mongosync and PCSM use). */
export const RELAXED_TTL_SECONDS = 2147483647;

export interface DestinationIndexPlan {
  specs: Document[];
  relaxed: RelaxedIndex[];
}

/**
 * Which indexes to build on the destination before the copy, and how they are relaxed.
 * - unique → non-unique: the copy and change application may transiently hold two documents
 *   with the same key (e.g. a delete and insert applied out of order); uniqueness is restored at
 *   commit (collMod prepareUnique, then unique).
 * - TTL → MAX_INT seconds: the destination must not expire documents the source still has; the
 *   source's own TTL deletes arrive as change events.
 * - hidden → visible: hidden is a query-planner flag only; restored at commit.
 * `_id` exists with every collection; `never` builds nothing else.
 */
export function planDestinationIndexes(
  sourceIndexes: Document[],
  mode: BuildIndexesMode,
): DestinationIndexPlan {
  if (mode === 'never') return { specs: [], relaxed: [] };
  const specs: Document[] = [];
  const relaxed: RelaxedIndex[] = [];
  for (const original of sourceIndexes) {
    if (original.name === '_id_') continue;
    const spec: Document = {};
    for (const [key, value] of Object.entries(original)) {
      if (key === 'ns' || key === 'unique' || key === 'hidden' || key === 'prepareUnique') continue;
      spec[key] = value;
    }
    const relaxedUnique = isTrue(original.unique);
    const relaxedHidden = isTrue(original.hidden);
    const relaxedExpireAfterSeconds = original.expireAfterSeconds !== undefined;
    if (relaxedExpireAfterSeconds) spec.expireAfterSeconds = RELAXED_TTL_SECONDS;
    specs.push(spec);
    if (relaxedUnique || relaxedHidden || relaxedExpireAfterSeconds) {
      relaxed.push({
        name: String(original.name),
        original,
        relaxedUnique,
        relaxedHidden,
        relaxedExpireAfterSeconds,
      });
    }
  }
  return { specs, relaxed };
}

/** Index options arrive unpromoted: `true`, or a numeric wrapper such as Int32(1)/Double(1). */
export function isTrue(value: unknown): boolean {
  if (value === true) return true;
  if (value && typeof value === 'object' && 'valueOf' in value) {
    const primitive = (value as { valueOf(): unknown }).valueOf();
    return primitive === true || (typeof primitive === 'number' && primitive !== 0);
  }
  return typeof value === 'number' && value !== 0;
}

export function numberValue(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (value && typeof value === 'object') {
    const v = value as { toNumber?: () => number; valueOf(): unknown };
    if (typeof v.toNumber === 'function') return v.toNumber();
    return Number(v.valueOf());
  }
  return Number(value);
}
