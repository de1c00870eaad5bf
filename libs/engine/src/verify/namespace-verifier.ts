import type { Document } from 'bson';
import { documentIdentity } from '../apply/doc-key';
import type { CollectionInfo, IdRange, SourceCluster } from '../ports/source-cluster';
import { bytesEqual, compareRange, idText, rawEqual, rawId } from './document-diff';
import { diffIndexes } from './index-diff';
import { listingByName } from '../catalog/namespace-catalog';
import { retryInPlace, type InPlaceRetryOptions } from '../faults/retry-in-place';
import type { CopyShare } from '../shards/topology';

/** What the verifier reads on either side (the destination is seen through the same port). */
export type VerifiableCluster = Pick<
  SourceCluster,
  | 'listCollections'
  | 'listIndexes'
  | 'listIndexesMany'
  | 'read'
  | 'readRaw'
  | 'readByIds'
  | 'digestWhole'
>;

/** One synced namespace to verify: its name on both sides and the `_id` ranges to digest. */
export interface VerifyTarget {
  /** The catalog's key of the namespace (the collection UUID): dirty documents' identities. */
  key?: string;
  database: string;
  collection: string;
  type: 'collection' | 'view';
  /** Source collection UUID: the source read fails instead of hashing another collection. */
  uuid?: string;
  /** The copy's partitions (`{}`: the whole collection). */
  ranges: IdRange[];
  /** Compare only these source indexes (`buildIndexes: never`: `_id_`); absent: all. */
  indexNames?: string[];
  /** Destination indexes the sync built on purpose (a shard key's supporting index). */
  ignoreDestinationIndexes?: string[];
  /** Indexes left out on both sides (relaxed until commit while the sync runs). */
  skipIndexes?: string[];
  /** Documents per read batch of a digest (default: the reader's). */
  batchSize?: number;
  /** A per-shard worker's share of the documents (verify/shared-view.ts); absent: all. */
  share?: CopyShare;
  /** Another worker verifies the documents: only type, options and indexes are compared. */
  metadataOnly?: boolean;
  /** Still being copied: only its copied partitions' ranges are checked, no metadata yet. */
  copying?: boolean;
  /** The collection's estimated bytes (the catalog's): small ones are checked several at once. */
  estimatedBytes?: number;
  /** It has a default collation: its `_id` order is the collation's (never digested in a batch). */
  collated?: boolean;
}

export interface NamespaceVerdict {
  namespace: string;
  documents: { source: number; destination: number };
  /** Empty when the namespace matches. */
  problems: string[];
  /** Sample `_id`s (canonical Extended JSON) of documents that differ, are missing or extra. */
  ids: string[];
  /** Ranges whose digests differ (what a re-check reads again). */
  mismatchedRanges: IdRange[];
}

export interface NamespaceCheckOptions {
  /** Compare `unique` flags (false while unique indexes are relaxed during the sync). */
  compareUnique: boolean;
  /** Sample `_id`s named per namespace (default 5). */
  maxSamples?: number;
  signal?: AbortSignal;
  /** Collection listings, per side and database, shared by the namespaces of one pass. */
  listings?: ListingCache;
  /** Index listings of the pass's collections, read several at once where a side can. */
  indexes?: IndexListingCache;
  /** A range's digest that fails transiently is read again on that side (default 5 tries). */
  retry?: InPlaceRetryOptions;
  /**
   * A range whose digests differ is compared document by document, listing up to this many
   * differing `_id`s (`differing`, `complete`): the live pass then re-checks those documents
   * alone instead of the whole range. Default: `maxSamples`.
   */
  listDifferences?: number;
}

/**
 * `listCollections` once per database and side during a pass, each listing by name: a pass
 * checks every collection of a database against it, and a scan per collection was quadratic in
 * the collections of one database (a tenant per collection puts them all in one).
 */
export class ListingCache {
  private readonly cache = new Map<string, Promise<Map<string, CollectionInfo>>>();

  /** The collection or view `name` of `database` on that side, as listed; undefined: none. */
  async find(
    cluster: VerifiableCluster,
    side: string,
    database: string,
    name: string,
  ): Promise<CollectionInfo | undefined> {
    const key = `${side}|${database}`;
    let listing = this.cache.get(key);
    if (!listing) {
      listing = cluster.listCollections(database).then(listingByName);
      this.cache.set(key, listing);
    }
    return (await listing).get(name);
  }
}

/** Collections whose indexes one batched read (`listIndexesMany`) asks for. */
export const INDEX_LISTING_BATCH = 100;

const ASKED: Promise<Document[] | null> = Promise.resolve(null);

/**
 * The indexes of a pass's collections. Where a side reads several collections' indexes at once
 * (`listIndexesMany`), the collections announced for the pass are asked up to
 * INDEX_LISTING_BATCH at a time, per side and database, in the order announced. The rest asks
 * `listIndexes` itself: a collection not announced, or asked a second time in the pass, and one
 * the batch could not answer. With many small collections the round trips, not the bytes,
 * are the metadata check's cost: two per collection without this.
 */
export class IndexListingCache {
  /** Announced collections by database, and per side|database how far batches have reached. */
  private readonly announced = new Map<string, { list: string[]; members: Set<string> }>();
  private readonly reached = new Map<string, number>();
  /** side|database|collection → its batch's answer (ASKED once taken). */
  private readonly answers = new Map<string, Promise<Document[] | null>>();

  announce(database: string, collection: string): void {
    let entry = this.announced.get(database);
    if (!entry) this.announced.set(database, (entry = { list: [], members: new Set() }));
    if (entry.members.has(collection)) return;
    entry.members.add(collection);
    entry.list.push(collection);
  }

  async get(
    cluster: VerifiableCluster,
    side: string,
    database: string,
    collection: string,
  ): Promise<Document[]> {
    const key = `${side}|${database}|${collection}`;
    let answer = this.answers.get(key);
    if (!answer && cluster.listIndexesMany && this.announced.get(database)?.members.has(collection))
      answer = this.batch(cluster, side, database, collection).get(key);
    if (answer) {
      this.answers.set(key, ASKED); // taken: its indexes are not held for the rest of the pass
      const indexes = await answer;
      if (indexes) return indexes;
    }
    return cluster.listIndexes(database, collection);
  }

  /** One read for `collection` and the next announced ones of its database not yet asked. */
  private batch(
    cluster: VerifiableCluster,
    side: string,
    database: string,
    collection: string,
  ): Map<string, Promise<Document[] | null>> {
    const { list } = this.announced.get(database)!;
    const at = `${side}|${database}`;
    const prefix = `${at}|`;
    const group = [collection];
    let i = this.reached.get(at) ?? 0;
    for (; i < list.length && group.length < INDEX_LISTING_BATCH; i++) {
      const name = list[i]!;
      if (name !== collection && !this.answers.has(prefix + name)) group.push(name);
    }
    this.reached.set(at, i);
    const read = cluster.listIndexesMany!(database, group).catch(() => group.map(() => null));
    const out = new Map<string, Promise<Document[] | null>>();
    group.forEach((name, n) => {
      const answer = read.then((all) => all[n] ?? null);
      this.answers.set(prefix + name, answer);
      out.set(prefix + name, answer);
    });
    return out;
  }
}

/** Collection type, options and indexes of one namespace: the problems found. */
export async function checkMetadata(
  source: VerifiableCluster,
  destination: VerifiableCluster,
  target: VerifyTarget,
  options: NamespaceCheckOptions,
): Promise<string[]> {
  const listings = options.listings ?? new ListingCache();
  const find = (cluster: VerifiableCluster, side: string) =>
    listings.find(cluster, side, target.database, target.collection);
  const [s, d] = await Promise.all([find(source, 'source'), find(destination, 'destination')]);
  if (!s || !d) return [s ? 'missing on destination' : 'missing on source'];
  const problems: string[] = [];
  if (s.type !== d.type) problems.push(`type ${s.type} vs ${d.type}`);
  if (!bytesEqual(s.options, d.options)) {
    problems.push(s.type === 'view' ? 'view definition differs' : 'collection options differ');
  }
  if (s.type === 'view') return problems;
  const indexes = options.indexes ?? new IndexListingCache();
  const [sourceIndexes, destinationIndexes] = await Promise.all([
    indexes.get(source, 'source', target.database, target.collection),
    indexes.get(destination, 'destination', target.database, target.collection),
  ]);
  const skipped = (spec: Document) => (target.skipIndexes ?? []).includes(String(spec.name));
  const wanted = (spec: Document) =>
    !skipped(spec) && (!target.indexNames || target.indexNames.includes(String(spec.name)));
  const expected = sourceIndexes.filter(wanted);
  // Only an index the source does not have (by name) can be one the sync built on purpose.
  const ignored = (spec: Document) =>
    skipped(spec) ||
    ((target.ignoreDestinationIndexes ?? []).includes(String(spec.name)) &&
      !expected.some((s) => s.name === spec.name));
  problems.push(
    ...diffIndexes(
      expected,
      destinationIndexes.filter((spec) => !ignored(spec)),
      options.compareUnique,
    ),
  );
  return problems;
}

/**
 * One range compared on both sides (`compareRange`: one read of each); on a difference, the
 * `_id`s that explain it.
 */
export async function checkRange(
  source: VerifiableCluster,
  destination: VerifiableCluster,
  target: VerifyTarget,
  range: IdRange,
  options: NamespaceCheckOptions,
): Promise<{
  source: number;
  destination: number;
  ids: string[];
  problems: string[];
  /** Every differing `_id` when `complete` (the comparison listed them all). */
  differing: unknown[];
  complete: boolean;
}> {
  const { database, collection } = target;
  const listed = Math.max(options.maxSamples ?? 5, options.listDifferences ?? 0);
  const compared = await retryInPlace(
    `comparison of ${database}.${collection}`,
    () =>
      compareRange(source, destination, database, collection, {
        range,
        maxDifferences: listed,
        ...(target.batchSize ? { batchSize: target.batchSize } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
        ...(target.uuid ? { uuid: target.uuid } : {}),
      }),
    options.retry,
    options.signal,
  );
  const shown = compared.differences.slice(0, options.maxSamples ?? 5);
  return {
    source: compared.source,
    destination: compared.destination,
    ids: shown.map((x) => x.id),
    problems: shown.map((x) => `document _id ${x.id} ${x.problem}`),
    differing: compared.differences.map((x) => x.value),
    complete: compared.complete,
  };
}

/** Documents per `readByIds` of a document re-check (one `$in` per side). */
export const IDS_PER_READ = 200;

/**
 * The documents with these `_id`s on both sides (one `$in` read each), compared by exact BSON
 * bytes: for each `_id`, whether both sides agree (both absent agrees: a delete applied).
 */
export async function checkDocuments(
  source: VerifiableCluster,
  destination: VerifiableCluster,
  target: VerifyTarget,
  ids: unknown[],
  options: NamespaceCheckOptions,
): Promise<{ equal: boolean[]; read: number; problems: string[]; ids: string[] }> {
  const { database, collection } = target;
  const ns = `${database}.${collection}`;
  const signal = options.signal ? { signal: options.signal } : {};
  const [s, d] = await Promise.all([
    retryInPlace(
      `documents of ${ns} on the source`,
      () =>
        source.readByIds!(database, collection, ids, {
          ...signal,
          ...(target.uuid ? { uuid: target.uuid } : {}),
        }),
      options.retry,
      options.signal,
    ),
    retryInPlace(
      `documents of ${ns} on the destination`,
      () => destination.readByIds!(database, collection, ids, signal),
      options.retry,
      options.signal,
    ),
  ]);
  const byId = (docs: Uint8Array[]) => new Map(docs.map((raw) => [idKey(rawId(raw)), raw]));
  const sourceDocs = byId(s);
  const destinationDocs = byId(d);
  const problems: string[] = [];
  const differing: string[] = [];
  const equal = ids.map((id) => {
    const key = idKey(id);
    const a = sourceDocs.get(key);
    const b = destinationDocs.get(key);
    if (!a && !b) return true;
    const problem = !b ? 'missing on destination' : !a ? 'only on destination' : 'differs';
    if (a && b && rawEqual(a, b)) return true;
    const text = idText(id);
    differing.push(text);
    problems.push(`document _id ${text} ${problem}`);
    return false;
  });
  return { equal, read: s.length, problems, ids: differing };
}

/** One `_id` as MongoDB's `_id` index keys it (numbers of any type by value). */
function idKey(id: unknown): string {
  return documentIdentity('', '', { _id: id });
}
