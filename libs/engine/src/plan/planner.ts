import type { Timestamp } from 'bson';
import type { NamespaceFilter } from '../namespaces/namespace-filter';
import type { EngineLogger } from '../ports/engine-logger';
import type { NamespaceRecord } from '../ports/job-store';
import type { SourceCluster } from '../ports/source-cluster';

export interface SyncPlan {
  t0: Timestamp;
  namespaces: NamespaceRecord[];
  estimatedTotalBytes: number;
}

export function namespaceId(syncID: string, database: string, collection: string): string {
  return `${syncID}|${database}.${collection}`;
}

/**
 * SPEC §4.1. T0 is read FIRST: change events are applied from T0, so anything written while we
 * list or copy is replayed later; listing first would open a window of lost writes.
 */
export async function planSync(
  source: SourceCluster,
  filter: NamespaceFilter,
  syncID: string,
  logger: EngineLogger,
): Promise<SyncPlan> {
  const t0 = await source.clusterTime();
  const namespaces: NamespaceRecord[] = [];
  const databases = (await source.listDatabaseNames())
    .filter((db) => filter.databaseSelected(db))
    .sort();
  for (const database of databases) {
    const collections = await source.listCollections(database);
    for (const info of collections.sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    )) {
      if (!filter.collectionSelected(database, info.name)) continue;
      if (info.type === 'timeseries') {
        logger.warn('time series collections are not supported; skipped', {
          database,
          collection: info.name,
        });
        continue;
      }
      const base = {
        _id: namespaceId(syncID, database, info.name),
        syncID,
        database,
        collection: info.name,
        options: info.options,
        relaxedIndexes: [],
      };
      if (info.type === 'view') {
        namespaces.push({
          ...base,
          type: 'view',
          indexes: [],
          estimatedBytes: 0,
          estimatedCount: 0,
          capped: false,
        });
        continue;
      }
      const [indexes, stats] = await Promise.all([
        source.listIndexes(database, info.name),
        source.collectionStats(database, info.name),
      ]);
      namespaces.push({
        ...base,
        type: 'collection',
        indexes,
        estimatedBytes: stats.bytes,
        estimatedCount: stats.count,
        capped: info.options.capped === true,
      });
    }
  }
  const estimatedTotalBytes = namespaces.reduce((sum, ns) => sum + ns.estimatedBytes, 0);
  logger.info('sync planned', {
    namespaces: namespaces.length,
    estimatedTotalBytes,
    t0: t0.toString(),
  });
  return { t0, namespaces, estimatedTotalBytes };
}
