import {
  INTERNAL_DATABASE,
  partitionVisible,
  type JobRecord,
  type JobStore,
  type NamespaceRecord,
  type PartitionRecord,
  type PersistedJob,
} from '@sync/engine';
import { BSON, type Document } from 'bson';
import type { Collection, MongoClient } from 'mongodb';
import { EXACT_BSON, toNumber } from './exact-bson';

/**
 * JobStore in `sync_reserved_for_internal_use` on the cluster that is the job's destination.
 * The job document (catalog included) and partition bounds are read with EXACT_BSON (a promoted
 * Int64 or Binary bound would move a partition edge, a promoted index option would change an
 * index); the plain counters are normalised to numbers and the start request is promoted as the
 * API decoded it. Every method is one write, or writes invisible until the next `saveJob`.
 */
export class MongoJobStore implements JobStore {
  constructor(
    private readonly client: MongoClient,
    private readonly syncID: string,
  ) {}

  private collection(name: 'jobs' | 'partitions'): Collection<Document> {
    return this.client.db(INTERNAL_DATABASE).collection(name);
  }

  async load(): Promise<PersistedJob | null> {
    const raw = await this.collection('jobs').findOne({ _id: this.syncID as never }, EXACT_BSON);
    if (!raw) return null;
    const job = normaliseJob(raw);
    const all = await this.collection('partitions')
      .find({ syncID: this.syncID }, EXACT_BSON)
      .sort({ key: 1, set: 1, index: 1 })
      .toArray();
    const partitions: PartitionRecord[] = [];
    const garbage: unknown[] = [];
    for (const doc of all) {
      const p = {
        ...doc,
        set: toNumber(doc.set),
        index: toNumber(doc.index),
        copiedBytes: toNumber(doc.copiedBytes),
        copiedDocuments: toNumber(doc.copiedDocuments),
      } as unknown as PartitionRecord;
      if (partitionVisible(job, p)) partitions.push(p);
      else garbage.push(doc._id);
    }
    if (garbage.length > 0) {
      await this.collection('partitions').deleteMany({ _id: { $in: garbage as never[] } });
    }
    return { job, partitions };
  }

  async saveJob(job: JobRecord): Promise<void> {
    await this.collection('jobs').replaceOne(
      { _id: job._id as never },
      job as unknown as Document,
      { upsert: true },
    );
  }

  async addPartitions(partitions: PartitionRecord[]): Promise<void> {
    for (let i = 0; i < partitions.length; i += 1000) {
      await this.collection('partitions').bulkWrite(
        partitions.slice(i, i + 1000).map((p) => ({
          replaceOne: {
            filter: { _id: p._id as never },
            replacement: p as unknown as Document,
            upsert: true,
          },
        })),
        { ordered: false },
      );
    }
  }

  async markPartitionDone(id: string, copiedBytes: number, copiedDocuments: number): Promise<void> {
    await this.collection('partitions').updateOne(
      { _id: id as never },
      { $set: { status: 'done', copiedBytes, copiedDocuments } },
    );
  }

  /** The job document first: without it the partitions are garbage whatever happens next. */
  async deleteJob(): Promise<void> {
    await this.collection('jobs').deleteOne({ _id: this.syncID as never });
    await this.collection('partitions').deleteMany({ syncID: this.syncID });
  }
}

function normaliseJob(raw: Document): JobRecord {
  const job = raw as unknown as JobRecord;
  job.request = normaliseRequest(raw.request as Document);
  job.estimatedTotalBytes = toNumber(raw.estimatedTotalBytes);
  job.nextPartitionSet = toNumber(raw.nextPartitionSet);
  job.reversals = toNumber(raw.reversals);
  job.namespaces = normaliseNamespaces(raw.namespaces as Document[] | undefined);
  return job;
}

/** The request is API input (plain JSON numbers): decode it the way the API did. */
export function normaliseRequest(raw: Document): JobRecord['request'] {
  return BSON.deserialize(BSON.serialize(raw)) as JobRecord['request'];
}

/** Catalog records read with EXACT_BSON, their plain counters as numbers. */
export function normaliseNamespaces(raw: Document[] | undefined): NamespaceRecord[] {
  return (raw ?? []).map(
    (n) =>
      ({
        ...n,
        estimatedBytes: toNumber(n.estimatedBytes),
        estimatedCount: toNumber(n.estimatedCount),
        ...(n.partitionSet !== undefined ? { partitionSet: toNumber(n.partitionSet) } : {}),
      }) as unknown as NamespaceRecord,
  );
}
