import { BSON, type Document, type MongoClient } from 'mongodb';

/** Read options that keep every BSON value exactly as stored. */
export const EXACT_READ = {
  promoteValues: false,
  promoteLongs: false,
  promoteBuffers: false,
  bsonRegExp: true,
} as const;

const INTERNAL_DATABASES = new Set(['admin', 'config', 'local', 'sync_reserved_for_internal_use']);

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

/**
 * Compares two clusters namespace by namespace: collection options, every document as
 * serialized BSON bytes (so a type change — Int32 to Double — is a difference), and indexes.
 */
export async function compareClusters(
  source: MongoClient,
  destination: MongoClient,
  options: CompareOptions = {},
): Promise<ComparisonReport> {
  const report: ComparisonReport = { namespaces: 0, documents: 0, indexes: 0, differences: [] };
  const max = options.maxDifferences ?? 20;
  const databases = options.databases ?? (await userDatabases(source, destination));
  for (const db of databases) {
    const sourceColls = await collectionsOf(source, db);
    const destColls = await collectionsOf(destination, db);
    for (const name of new Set([...sourceColls.keys(), ...destColls.keys()])) {
      const ns = `${db}.${name}`;
      report.namespaces += 1;
      const s = sourceColls.get(name);
      const d = destColls.get(name);
      if (!s || !d) {
        report.differences.push({ namespace: ns, problem: s ? 'missing on destination' : 'only on destination' });
        continue;
      }
      if (s.type !== d.type) report.differences.push({ namespace: ns, problem: `type ${s.type} vs ${d.type}` });
      if (s.type === 'view') {
        if (!bytesEqual(s.options ?? {}, d.options ?? {})) {
          report.differences.push({ namespace: ns, problem: 'view definition differs' });
        }
        continue;
      }
      await compareDocuments(source, destination, db, name, report);
      await compareIndexes(source, destination, db, name, options.compareUnique ?? true, report);
      if (report.differences.length >= max) return report;
    }
  }
  return report;
}

async function userDatabases(a: MongoClient, b: MongoClient): Promise<string[]> {
  const names = new Set<string>();
  for (const client of [a, b]) {
    const { databases } = await client.db('admin').admin().listDatabases({ nameOnly: true });
    for (const { name } of databases) if (!INTERNAL_DATABASES.has(name)) names.add(name);
  }
  return [...names].sort();
}

async function collectionsOf(client: MongoClient, db: string): Promise<Map<string, Document>> {
  const infos = await client.db(db).listCollections({}, { nameOnly: false }).toArray();
  return new Map(infos.filter((c) => !c.name.startsWith('system.')).map((c) => [c.name, c]));
}

async function compareDocuments(
  source: MongoClient,
  destination: MongoClient,
  db: string,
  coll: string,
  report: ComparisonReport,
): Promise<void> {
  const ns = `${db}.${coll}`;
  const read = (client: MongoClient) =>
    client.db(db).collection(coll).find({}, { ...EXACT_READ, sort: { _id: 1 }, batchSize: 1000 });
  const a = read(source);
  const b = read(destination);
  try {
    for (;;) {
      const [x, y] = await Promise.all([a.tryNext(), b.tryNext()]);
      if (!x && !y) return;
      if (!x || !y) {
        report.differences.push({ namespace: ns, problem: `document count differs (extra ${describeId(x ?? y)} on ${x ? 'source' : 'destination'})` });
        return;
      }
      report.documents += 1;
      if (!bytesEqual(x, y)) {
        report.differences.push({ namespace: ns, problem: `document ${describeId(x)} differs` });
        return;
      }
    }
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}

async function compareIndexes(
  source: MongoClient,
  destination: MongoClient,
  db: string,
  coll: string,
  compareUnique: boolean,
  report: ComparisonReport,
): Promise<void> {
  const normalise = (specs: Document[]) =>
    new Map(
      specs.map((spec) => {
        const { v: _v, ns: _ns, ...rest } = spec;
        if (!compareUnique) delete rest.unique;
        return [spec.name as string, rest];
      }),
    );
  const s = normalise(await source.db(db).collection(coll).listIndexes().toArray());
  const d = normalise(await destination.db(db).collection(coll).listIndexes().toArray());
  for (const [name, spec] of s) {
    report.indexes += 1;
    const other = d.get(name);
    if (!other) report.differences.push({ namespace: `${db}.${coll}`, problem: `index ${name} missing on destination` });
    else if (!bytesEqual(spec, other)) report.differences.push({ namespace: `${db}.${coll}`, problem: `index ${name} differs` });
  }
  for (const name of d.keys()) {
    if (!s.has(name)) report.differences.push({ namespace: `${db}.${coll}`, problem: `index ${name} only on destination` });
  }
}

function bytesEqual(a: Document, b: Document): boolean {
  return Buffer.from(BSON.serialize(a)).equals(Buffer.from(BSON.serialize(b)));
}

function describeId(doc: Document | null): string {
  return doc ? `_id ${BSON.EJSON.stringify({ v: doc._id }, { relaxed: false }).slice(5, -1)}` : '';
}
