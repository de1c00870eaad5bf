import type { Document, Timestamp } from 'bson';
import type { CopyPhase, JobRecord, NamespaceCopy, NamespaceRecord } from '../ports/job-store';
import type { CollectionInfo, SourceCluster } from '../ports/source-cluster';
import { sharedDocument, sharedDocuments } from './shared-documents';

/** A namespace: database plus collection. */
export interface NamespaceName {
  db: string;
  coll: string;
}

/** 32 lowercase hex digits of a UUID given as a bson Binary, a Buffer or a hex string. */
export function uuidHex(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value.replace(/-/g, '').toLowerCase();
  const v = value as { buffer?: Uint8Array; toString?: (enc: string) => string };
  if (v.buffer instanceof Uint8Array) return Buffer.from(v.buffer).toString('hex');
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
  return undefined;
}

/** Database and collection as one map key (a NUL byte cannot occur in either name). */
function nameKey(db: string, coll: string): string {
  return `${db}\0${coll}`;
}

export function viewKey(db: string, name: string): string {
  return `view:${db}.${name}`;
}

/** A database's listing by collection name (the first of a name, as a scan would find it). */
export function listingByName(infos: readonly CollectionInfo[]): Map<string, CollectionInfo> {
  const byName = new Map<string, CollectionInfo>();
  for (const info of infos) if (!byName.has(info.name)) byName.set(info.name, info);
  return byName;
}

/** The key a listed collection or view is known by in the catalog. */
export function keyOf(database: string, info: CollectionInfo): string {
  if (info.type === 'view' || !info.uuid) return viewKey(database, info.name);
  return info.uuid;
}

/**
 * The one builder of namespace records (planning, and collections that enter the sync later):
 * reads indexes and size estimates of a listed collection. `listedAt` must be a source time
 * read BEFORE `info` was listed. `estimate`, when the caller already knows the collection's size
 * well enough (a small database's totals), saves the `collStats` round trip; `knownIndexes`
 * (read in a batch with other collections') the `listIndexes` one.
 */
export async function describeNamespace(
  source: SourceCluster,
  database: string,
  info: CollectionInfo,
  listedAt: Timestamp,
  estimate?: { bytes: number; count: number },
  /** Its indexes, when the caller read them already (read after `listedAt`, as here). */
  knownIndexes?: Document[],
): Promise<NamespaceRecord> {
  const key = keyOf(database, info);
  const options = sharedDocument(info.options);
  // Each record one literal of every field in one order (no spread of a shared part): records
  // made so share V8's hidden classes.
  if (info.type === 'view') {
    return {
      key,
      database,
      collection: info.name,
      type: 'view',
      options,
      indexes: [],
      relaxedIndexes: [],
      estimatedBytes: 0,
      estimatedCount: 0,
      capped: false,
      listedAt,
      copy: 'none',
    };
  }
  const [indexes, stats] = await Promise.all([
    knownIndexes ?? source.listIndexes(database, info.name),
    estimate ?? source.collectionStats(database, info.name),
  ]);
  return {
    key,
    database,
    collection: info.name,
    type: 'collection',
    options,
    indexes: sharedDocuments(indexes),
    relaxedIndexes: [],
    estimatedBytes: stats.bytes,
    estimatedCount: stats.count,
    capped: info.options.capped === true,
    listedAt,
    copy: 'pending',
  };
}

/** Lookups over the job's catalog (the records live in the job document). */
export class NamespaceCatalog {
  /** Records by key, rebuilt whenever the records array is replaced (keys never change). */
  private index: { of: NamespaceRecord[]; byKey: Map<string, NamespaceRecord> } | null = null;

  constructor(private readonly job: () => JobRecord) {}

  get records(): NamespaceRecord[] {
    return this.job().namespaces;
  }

  /** O(1): every document event is routed through here. */
  byKey(key: string): NamespaceRecord | undefined {
    const records = this.records;
    if (this.index?.of !== records) {
      this.index = { of: records, byKey: new Map(records.map((r) => [r.key, r])) };
    }
    return this.index.byKey.get(key);
  }

  /**
   * O(1) too: a source without collection UUIDs in its events routes every document event by
   * name, and a scan per event would cost change application time in proportion to the catalog
   * (100,000 comparisons an event at 100,000 namespaces). The first record of the array with
   * that name, as a scan would find it.
   */
  byName(db: string, coll: string): NamespaceRecord | undefined {
    const records = this.records;
    if (this.names?.of !== records) {
      const byName = new Map<string, NamespaceRecord>();
      for (const r of records) {
        const name = nameKey(r.database, r.collection);
        if (!byName.has(name)) byName.set(name, r);
      }
      this.names = { of: records, byName };
    }
    const found = this.names.byName.get(nameKey(db, coll));
    // Names change in place only through `rename`, which drops the index; a record renamed
    // some other way is never answered for its old name.
    return found && found.database === db && found.collection === coll ? found : undefined;
  }

  /** Names by record, rebuilt when the records array is replaced or a record renamed. */
  private names: { of: NamespaceRecord[]; byName: Map<string, NamespaceRecord> } | null = null;

  /** A record moved to another name in place (a rename within its database). */
  rename(key: string, to: NamespaceName): void {
    const record = this.byKey(key);
    if (!record) throw new Error(`rename: no catalog record ${key}`);
    record.database = to.db;
    record.collection = to.coll;
    this.names = null;
  }

  /** Records of one database (dropDatabase). */
  inDatabase(db: string): NamespaceRecord[] {
    return this.records.filter((r) => r.database === db);
  }

  remove(key: string): NamespaceRecord | undefined {
    const job = this.job();
    const record = this.byKey(key);
    if (record) job.namespaces = job.namespaces.filter((r) => r.key !== key);
    return record;
  }

  add(record: NamespaceRecord): void {
    const job = this.job();
    job.namespaces = [...job.namespaces.filter((r) => r.key !== record.key), record];
  }

  /** Collections whose copy has not finished (initial copy, or entered the sync later). */
  pendingCopies(): NamespaceRecord[] {
    const { phase } = this.job();
    return this.records.filter((r) => r.type === 'collection' && copyOf(r, phase) === 'pending');
  }
}

/** A record's copy status as of the job's phase (`initial` resolved: see NamespaceCopy). */
export type CopyStatus = Exclude<NamespaceCopy, 'initial'>;

/** A record's copy status as of the job's phase. */
export function copyOf(record: Pick<NamespaceRecord, 'copy'>, phase: CopyPhase): CopyStatus {
  if (record.copy === 'initial') return phase === 'copied' ? 'done' : 'pending';
  return record.copy;
}

/** Options that `create` accepts; listing-only fields are dropped. */
export function createOptions(options: Document): Document {
  const { uuid: _uuid, ...rest } = options;
  return rest;
}

export function nsString(ns: { database: string; collection: string } | NamespaceName): string {
  return 'db' in ns ? `${ns.db}.${ns.coll}` : `${ns.database}.${ns.collection}`;
}
