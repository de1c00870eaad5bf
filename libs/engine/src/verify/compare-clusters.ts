import { INTERNAL_DATABASE } from '../ports/job-store';
import type { CollectionInfo, SourceCluster } from '../ports/source-cluster';
import { bytesEqual, diffDocuments } from './document-diff';
import { diffIndexes } from './index-diff';

/** What a comparison reads: any cluster seen as a source (listing, indexes, `_id`-ordered reads). */
export type ComparableCluster = Pick<
  SourceCluster,
  'listDatabaseNames' | 'listCollections' | 'listIndexes' | 'read'
>;

export interface ClusterDifference {
  namespace: string;
  problem: string;
}

export interface ComparisonReport {
  namespaces: number;
  documents: number;
  indexes: number;
  differences: ClusterDifference[];
}

export interface CompareOptions {
  /** Only these databases (default: every user database on either side). */
  databases?: string[];
  /** Compare index `unique` flags too (false while unique indexes are relaxed during a sync). */
  compareUnique?: boolean;
  /** Stop after this many differences. */
  maxDifferences?: number;
}

const SERVER_DATABASES = new Set(['admin', 'config', 'local', INTERNAL_DATABASE]);

/**
 * Compares two clusters namespace by namespace: collection type and options, every document
 * as serialized BSON bytes in `_id` order (a type change — Int32 to Double — or a field order
 * change is a difference), and indexes. Memory: one read batch per side at a time.
 */
export async function compareClusters(
  source: ComparableCluster,
  destination: ComparableCluster,
  options: CompareOptions = {},
): Promise<ComparisonReport> {
  const report: ComparisonReport = { namespaces: 0, documents: 0, indexes: 0, differences: [] };
  const max = options.maxDifferences ?? 20;
  const databases = options.databases ?? (await userDatabases(source, destination));
  for (const db of databases) {
    const sourceColls = await collectionsOf(source, db);
    const destColls = await collectionsOf(destination, db);
    for (const name of [...new Set([...sourceColls.keys(), ...destColls.keys()])].sort()) {
      const namespace = `${db}.${name}`;
      const differ = (problem: string) => report.differences.push({ namespace, problem });
      report.namespaces += 1;
      const s = sourceColls.get(name);
      const d = destColls.get(name);
      if (!s || !d) {
        differ(s ? 'missing on destination' : 'only on destination');
        continue;
      }
      if (s.type !== d.type) differ(`type ${s.type} vs ${d.type}`);
      if (!bytesEqual(s.options, d.options)) {
        differ(s.type === 'view' ? 'view definition differs' : 'collection options differ');
      }
      if (s.type !== 'view') {
        await compareDocuments(source, destination, db, name, report);
        await compareIndexes(source, destination, db, name, options.compareUnique ?? true, report);
      }
      if (report.differences.length >= max) return report;
    }
  }
  return report;
}

async function userDatabases(a: ComparableCluster, b: ComparableCluster): Promise<string[]> {
  const names = new Set<string>();
  for (const cluster of [a, b]) {
    for (const name of await cluster.listDatabaseNames()) {
      if (!SERVER_DATABASES.has(name)) names.add(name);
    }
  }
  return [...names].sort();
}

async function collectionsOf(
  cluster: ComparableCluster,
  db: string,
): Promise<Map<string, CollectionInfo>> {
  const infos = await cluster.listCollections(db);
  return new Map(infos.filter((c) => !c.name.startsWith('system.')).map((c) => [c.name, c]));
}

async function compareDocuments(
  source: ComparableCluster,
  destination: ComparableCluster,
  db: string,
  coll: string,
  report: ComparisonReport,
): Promise<void> {
  const namespace = `${db}.${coll}`;
  const diff = await diffDocuments(source, destination, db, coll, { maxDifferences: 1 });
  report.documents += diff.compared;
  for (const { id, problem } of diff.differences) {
    report.differences.push({
      namespace,
      problem:
        problem === 'differs'
          ? `document _id ${id} differs`
          : `document count differs (extra _id ${id} on ${problem === 'only on destination' ? 'destination' : 'source'})`,
    });
  }
}

async function compareIndexes(
  source: ComparableCluster,
  destination: ComparableCluster,
  db: string,
  coll: string,
  compareUnique: boolean,
  report: ComparisonReport,
): Promise<void> {
  const specs = await source.listIndexes(db, coll);
  report.indexes += specs.length;
  const problems = diffIndexes(specs, await destination.listIndexes(db, coll), compareUnique);
  for (const problem of problems) report.differences.push({ namespace: `${db}.${coll}`, problem });
}
