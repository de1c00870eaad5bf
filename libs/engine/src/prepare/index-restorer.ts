import type { Document } from 'bson';
import type { DestinationCluster } from '../ports/destination-cluster';
import type { NamespaceRecord } from '../ports/job-store';
import {
  RELAXED_TTL_SECONDS,
  isTrue,
  numberValue,
  planDestinationIndexes,
} from './index-relaxation';

/**
 * Commit-time counterpart of the relaxation: uniqueness via prepareUnique → unique (MongoDB's
 * two-step conversion, which fails loudly on duplicates), then the source's TTL and hidden flag.
 * Idempotent (a commit interrupted by a crash runs it again): each index is compared with what
 * the destination lists now, and only a difference is modified. An index or collection the
 * destination no longer has (dropped or renamed away during the sync) is skipped.
 */
export async function restoreRelaxedIndexes(
  destination: DestinationCluster,
  namespaces: readonly NamespaceRecord[],
): Promise<void> {
  for (const ns of namespaces) {
    if (ns.type !== 'collection' || ns.relaxedIndexes.length === 0) continue;
    const current = await indexesByName(destination, ns);
    for (const index of ns.relaxedIndexes) {
      const now = current.get(index.name);
      if (!now) continue;
      const wanted = index.original;
      if (isTrue(wanted.unique) && !isTrue(now.unique)) {
        if (!isTrue(now.prepareUnique)) {
          await destination.modifyIndex(ns.database, ns.collection, {
            name: index.name,
            prepareUnique: true,
          });
        }
        await destination.modifyIndex(ns.database, ns.collection, {
          name: index.name,
          unique: true,
        });
      }
      if (
        wanted.expireAfterSeconds !== undefined &&
        numberValue(wanted.expireAfterSeconds) !== numberValue(now.expireAfterSeconds)
      ) {
        await destination.modifyIndex(ns.database, ns.collection, {
          name: index.name,
          expireAfterSeconds: numberValue(wanted.expireAfterSeconds),
        });
      }
      if (isTrue(wanted.hidden) !== isTrue(now.hidden)) {
        await destination.modifyIndex(ns.database, ns.collection, {
          name: index.name,
          hidden: isTrue(wanted.hidden),
        });
      }
    }
  }
}

/**
 * A rolled-back commit's undo of `restoreRelaxedIndexes`: the sync runs again, so every index
 * relaxed for it is relaxed again — a unique index (which collMod cannot make non-unique) is
 * dropped and built again without `unique`; TTL and hidden go back to their sync values.
 * Idempotent: only what the destination lists as restored is changed.
 */
export async function relaxRestoredIndexes(
  destination: DestinationCluster,
  namespaces: readonly NamespaceRecord[],
): Promise<void> {
  for (const ns of namespaces) {
    if (ns.type !== 'collection' || ns.relaxedIndexes.length === 0) continue;
    const current = await indexesByName(destination, ns);
    for (const index of ns.relaxedIndexes) {
      const now = current.get(index.name);
      if (!now) continue;
      const relaxed = planDestinationIndexes([index.original], 'beforeDataCopy').specs[0];
      if (!relaxed) continue;
      if (index.relaxedUnique && (isTrue(now.unique) || isTrue(now.prepareUnique))) {
        await destination.dropIndex(ns.database, ns.collection, index.name);
        await destination.createIndexes(ns.database, ns.collection, [relaxed]);
        continue;
      }
      if (
        index.relaxedExpireAfterSeconds &&
        numberValue(now.expireAfterSeconds) !== RELAXED_TTL_SECONDS
      ) {
        await destination.modifyIndex(ns.database, ns.collection, {
          name: index.name,
          expireAfterSeconds: RELAXED_TTL_SECONDS,
        });
      }
      if (index.relaxedHidden && isTrue(now.hidden)) {
        await destination.modifyIndex(ns.database, ns.collection, {
          name: index.name,
          hidden: false,
        });
      }
    }
  }
}

/** The destination's indexes of a namespace, by name. */
async function indexesByName(
  destination: DestinationCluster,
  ns: NamespaceRecord,
): Promise<Map<string, Document>> {
  const current = new Map<string, Document>();
  for (const spec of await destination.listIndexes(ns.database, ns.collection)) {
    current.set(String(spec.name), spec);
  }
  return current;
}
