import type { Timestamp } from 'bson';
import type { NamespaceFilter } from '../namespaces/namespace-filter';
import type { EngineLogger } from '../ports/engine-logger';
import type { NamespaceRecord } from '../ports/job-store';
import type { SourceCluster } from '../ports/source-cluster';
import { describeNamespace } from '../catalog/namespace-catalog';
import { runPool } from '../verify/verify-pass';
import { INDEX_LISTING_BATCH } from '../verify/namespace-verifier';
import { SMALL_NAMESPACE_BYTES } from '../verify/verification';
import { DEFAULT_PARTITIONING } from '../copy/partition-planner';

export interface SyncPlan {
  t0: Timestamp;
  namespaces: NamespaceRecord[];
  /** Source time after everything was listed (see JobRecord.listedUntil). */
  listedUntil: Timestamp;
  estimatedTotalBytes: number;
}

/**
 * Planning: the start time T0 and the namespaces to sync. T0 is read FIRST: change events are
 * applied from T0, so anything written while we list or copy is replayed later; listing first would
 * open a window of lost writes. Each namespace is described with the source time read just before
 * it was listed, so index DDL before it is not applied again. Its indexes are read later
 * (listIndexes): DDL between the two is in the listing AND replayed, which the catalog applies
 * idempotently, in stream order (catalog/ddl-plan.ts, createIndexesAsOfEvent in
 * catalog/event-router.ts).
 */
/** Collections described at once while planning. */
const DESCRIBE_CONCURRENCY = 8;
/** Databases listed at once while planning. */
const DATABASES_IN_FLIGHT = 4;
/** Listing batches (INDEX_LISTING_BATCH collections each) of one database read at once. */
const BATCHES_IN_FLIGHT = 2;

/**
 * A database whose whole data is under both the verifier's small-collection size and the
 * partition target holds only collections under them, so none of them needs its own size read
 * (`collStats`) to be planned: each is one partition and one small verification range.
 * Multi-tenant sources of many small collections are planned with one `listIndexes` per
 * collection, not two round trips.
 */
export function smallDatabaseBytes(partitionTargetBytes: number): number {
  return Math.min(SMALL_NAMESPACE_BYTES, partitionTargetBytes);
}

/**
 * Each selected collection's size estimate from its database's totals when the database is
 * small (an even share: an estimate, as `collStats` is); undefined when each must be read.
 */
async function smallDatabaseShare(
  source: SourceCluster,
  database: string,
  collections: number,
  below: number,
): Promise<{ bytes: number; count: number } | undefined> {
  if (collections < 2) return undefined; // nothing to save
  const totals = await source.databaseStats(database);
  if (!(totals.bytes < below)) return undefined;
  return {
    bytes: Math.ceil(totals.bytes / collections),
    count: Math.ceil(totals.count / collections),
  };
}

/**
 * What a batched read answered, by name (none when there is no such read or it failed): the
 * names it left null are read one by one.
 */
async function answered<T>(
  names: string[],
  read: ((names: string[]) => Promise<Array<T | null>>) | undefined,
): Promise<Map<string, T>> {
  const out = new Map<string, T>();
  if (!read) return out;
  const answers = await read(names).catch(() => names.map(() => null));
  names.forEach((name, i) => {
    const one = answers[i];
    if (one) out.set(name, one);
  });
  return out;
}

export async function planSync(
  source: SourceCluster,
  filter: NamespaceFilter,
  logger: EngineLogger,
  /** The copy's partition target (SyncJobOptions.partitioning; default DEFAULT_PARTITIONING). */
  options: { partitionTargetBytes?: number } = {},
): Promise<SyncPlan> {
  const small = smallDatabaseBytes(
    options.partitionTargetBytes ?? DEFAULT_PARTITIONING.targetBytes,
  );
  const t0 = await source.clusterTime();
  const databases = (await source.listDatabaseNames())
    .filter((db) => filter.databaseSelected(db))
    .sort();
  // Databases, and each one's listing batches, several at a time: with many small collections
  // planning is a chain of round trips (a batch is one read of a hundred collections' indexes),
  // not work on either side. Kept in database and name order.
  const byDatabase: NamespaceRecord[][] = [];
  const planDatabase = async (database: string, d: number): Promise<void> => {
    const listedAt = await source.clusterTime();
    const collections = await source.listCollections(database);
    const selected = collections
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .filter((info) => {
        if (!filter.collectionSelected(database, info.name)) return false;
        if (info.type !== 'timeseries') return true;
        logger.warn('time series collections are not supported; skipped', {
          database,
          collection: info.name,
        });
        return false;
      });
    // Described several at a time (with many small collections the round trips are the
    // cost), kept in name order.
    const described: NamespaceRecord[] = [];
    const share = await smallDatabaseShare(
      source,
      database,
      selected.filter((info) => info.type !== 'view').length,
      small,
    );
    // Indexes INDEX_LISTING_BATCH collections a read where the source can; the collections a
    // batch could not answer ask listIndexes themselves.
    const describeBatch = async (from: number): Promise<void> => {
      const chunk = selected.slice(from, from + INDEX_LISTING_BATCH);
      const names = chunk.filter((info) => info.type !== 'view').map((info) => info.name);
      const batched = names.length > 1;
      // Sizes too, where the database is not small enough to share its totals out: a tenant
      // per collection in one large database would otherwise cost a collStats each.
      const [listed, sized] = await Promise.all([
        answered(names, batched ? source.listIndexesMany?.bind(source, database) : undefined),
        answered(
          names,
          batched && !share ? source.collectionStatsMany?.bind(source, database) : undefined,
        ),
      ]);
      await runPool(
        chunk.map((info, i) => async () => {
          const record = await describeNamespace(
            source,
            database,
            info,
            listedAt,
            share ?? sized.get(info.name),
            listed.get(info.name),
          );
          // Copied by the initial copy: done once the job's phase is `copied` (a fresh record:
          // set in place).
          if (record.copy === 'pending') record.copy = 'initial';
          described[from + i] = record;
        }),
        DESCRIBE_CONCURRENCY,
      );
    };
    const batches: Array<() => Promise<void>> = [];
    for (let from = 0; from < selected.length; from += INDEX_LISTING_BATCH)
      batches.push(() => describeBatch(from));
    await runPool(batches, BATCHES_IN_FLIGHT);
    byDatabase[d] = described;
  };
  await runPool(
    databases.map((database, d) => () => planDatabase(database, d)),
    DATABASES_IN_FLIGHT,
  );
  const namespaces = byDatabase.flat();
  const listedUntil = await source.clusterTime();
  const estimatedTotalBytes = namespaces.reduce((sum, ns) => sum + ns.estimatedBytes, 0);
  logger.info('sync planned', {
    namespaces: namespaces.length,
    estimatedTotalBytes,
    t0: t0.toString(),
  });
  return { t0, namespaces, listedUntil, estimatedTotalBytes };
}
