import type { DestinationCluster } from '../ports/destination-cluster';
import type { NamespaceRecord } from '../ports/job-store';
import { numberValue } from './index-relaxation';

/**
 * Commit-time counterpart of the relaxation (for the committer): uniqueness via
 * prepareUnique → unique (MongoDB's two-step conversion, which fails loudly on duplicates),
 * then the original TTL and hidden flags.
 */
export async function restoreRelaxedIndexes(
  destination: DestinationCluster,
  namespaces: NamespaceRecord[],
): Promise<void> {
  for (const ns of namespaces) {
    for (const index of ns.relaxedIndexes) {
      if (index.relaxedUnique) {
        await destination.modifyIndex(ns.database, ns.collection, {
          name: index.name,
          prepareUnique: true,
        });
        await destination.modifyIndex(ns.database, ns.collection, {
          name: index.name,
          unique: true,
        });
      }
      if (index.relaxedExpireAfterSeconds) {
        await destination.modifyIndex(ns.database, ns.collection, {
          name: index.name,
          expireAfterSeconds: numberValue(index.original.expireAfterSeconds),
        });
      }
      if (index.relaxedHidden) {
        await destination.modifyIndex(ns.database, ns.collection, {
          name: index.name,
          hidden: true,
        });
      }
    }
  }
}
