import { BSON } from 'bson';
import type { JobRecord, NamespaceRecord, PartitionRecord } from '../ports/job-store';
import type { SourceCluster } from '../ports/source-cluster';

export interface PartitioningOptions {
  /** Target bytes per partition: big enough to amortise a cursor, small enough to parallelise. */
  targetBytes: number;
  maxPartitions: number;
  /** Sampled `_id`s per wanted partition; more samples give more even ranges. */
  oversampling: number;
}

export const DEFAULT_PARTITIONING: PartitioningOptions = {
  targetBytes: 32 * 1024 * 1024,
  maxPartitions: 512,
  oversampling: 10,
};

/** A new partition (pending, nothing copied) of collection `key` in partition set `set`. */
export function newPartition(
  of: { syncID: string; key: string; set: number },
  index: number,
  bounds: { min?: unknown; max?: unknown } = {},
  natural = false,
): PartitionRecord {
  return {
    // Joined, not a template: one flat string kept per partition (a template's chain of
    // concatenations cost ~30 bytes more each, at 100,000 namespaces ~3 MB).
    _id: [of.syncID, of.key, of.set, index].join('|'),
    syncID: of.syncID,
    key: of.key,
    set: of.set,
    index,
    ...('min' in bounds ? { min: bounds.min } : {}),
    ...('max' in bounds ? { max: bounds.max } : {}),
    natural,
    status: 'pending',
    copiedBytes: 0,
    copiedDocuments: 0,
  };
}

/**
 * `_id` ranges for one collection, copied in parallel. Split points are quantiles of a
 * server-sorted `$sample` of `_id`s: one cheap random sample, no full scan, and the SERVER orders
 * mixed-type `_id`s (MongoDB's cross-type order) so the engine never reimplements BSON comparison.
 * Ranges are half-open [min, max) and are read with `min()/max()` index bounds, which, unlike
 * `$gte/$lt`, are not type-bracketed: together they cover every `_id` of every type.
 * Capped collections are one natural-order partition (insertion order is what they mean).
 */
export async function planPartitions(
  source: SourceCluster,
  ns: NamespaceRecord,
  where: {
    syncID: string;
    /** The partition set these ranges form (NamespaceRecord.partitionSet once switched on). */
    set: number;
    /** The collection's current name on the source (sampling reads it). */
    sourceName?: { db: string; coll: string };
  },
  options: PartitioningOptions = DEFAULT_PARTITIONING,
): Promise<PartitionRecord[]> {
  if (ns.type !== 'collection') return [];
  const sampleFrom = where.sourceName ?? { db: ns.database, coll: ns.collection };
  const of = { syncID: where.syncID, key: ns.key, set: where.set };
  const make = (index: number, bounds: { min?: unknown; max?: unknown }, natural = false) =>
    newPartition(of, index, bounds, natural);
  if (ns.capped) return [make(0, {}, true)];
  const wanted = partitionsWanted(ns, options);
  if (wanted <= 1) return [make(0, {})];
  const sample = uniqueSorted(
    await source.sampleSortedIds(
      sampleFrom.db,
      sampleFrom.coll,
      Math.min(ns.estimatedCount, wanted * options.oversampling),
    ),
  );
  const splits = uniqueSorted(
    Array.from(
      { length: wanted - 1 },
      (_, k) => sample[Math.floor(((k + 1) * sample.length) / wanted)],
    ).filter((id) => id !== undefined),
  );
  if (splits.length === 0) return [make(0, {})];
  const partitions = [make(0, { max: splits[0] })];
  for (let i = 1; i < splits.length; i++)
    partitions.push(make(i, { min: splits[i - 1], max: splits[i] }));
  partitions.push(make(splits.length, { min: splits[splits.length - 1] }));
  return partitions;
}

function partitionsWanted(ns: NamespaceRecord, options: PartitioningOptions): number {
  return Math.min(
    options.maxPartitions,
    Math.ceil(ns.estimatedBytes / options.targetBytes),
    Math.max(1, ns.estimatedCount),
  );
}

/**
 * Whether `planPartitions` plans this namespace without reading the source: a view (no
 * partitions), a capped collection (one natural-order partition) or one too small to split.
 */
export function plannedWithoutReads(
  ns: NamespaceRecord,
  options: PartitioningOptions = DEFAULT_PARTITIONING,
): boolean {
  return ns.type !== 'collection' || !!ns.capped || partitionsWanted(ns, options) <= 1;
}

/** Drops adjacent duplicates of an already sorted list (`$sample` may repeat documents). */
function uniqueSorted(ids: unknown[]): unknown[] {
  const out: unknown[] = [];
  let previous: string | null = null;
  for (const id of ids) {
    const key = Buffer.from(BSON.serialize({ id })).toString('hex');
    if (key !== previous) out.push(id);
    previous = key;
  }
  return out;
}

/** Partition sets planned and written, not yet named by the job (switchOnSets does). */
export interface PlannedSets {
  /** The set of each planned namespace, by key. */
  sets: Map<string, number>;
  /** The job's next free set number after them. */
  next: number;
  partitions: PartitionRecord[];
}

/**
 * The partitions of the collections planned without reads (`plannedWithoutReads`: small or
 * capped, one partition each) that have no set yet, their sets numbered in catalog order from
 * `first`. The caller writes them, then a job write names their sets. Null: none to plan.
 */
export async function planReadless(
  source: SourceCluster,
  records: NamespaceRecord[],
  first: number,
  syncID: string,
  options: PartitioningOptions = DEFAULT_PARTITIONING,
): Promise<PlannedSets | null> {
  const sets = new Map<string, number>();
  const partitions: PartitionRecord[] = [];
  let next = first;
  for (const record of records) {
    if (record.type !== 'collection' || record.partitionSet !== undefined) continue;
    if (!plannedWithoutReads(record, options)) continue;
    const set = next++;
    sets.set(record.key, set);
    partitions.push(...(await planPartitions(source, record, { syncID, set }, options)));
  }
  return sets.size > 0 ? { sets, next, partitions } : null;
}

/** Inside the job write that names them: the planned sets switched on. */
export function switchOnSets(job: JobRecord, planned: PlannedSets): void {
  job.nextPartitionSet = planned.next;
  for (const ns of job.namespaces) {
    const set = planned.sets.get(ns.key);
    if (set !== undefined) ns.partitionSet = set;
  }
}
