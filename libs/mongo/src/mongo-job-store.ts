import {
  INTERNAL_DATABASE,
  type JobRecord,
  type JobStore,
  type NamespaceRecord,
  type PartitionRecord,
  type PersistedJob,
} from '@sync/engine';
import type { Document } from 'bson';
import type { Collection, MongoClient } from 'mongodb';
import { EXACT_BSON, toNumber } from './exact-bson';

/**
 * JobStore in `sync_reserved_for_internal_use` on the cluster that is the job's destination.
 * Namespace options/indexes and partition bounds are read with EXACT_BSON (a promoted Int64 or
 * Binary bound would move a partition edge); the few plain counters are normalised to numbers.
 */
export class MongoJobStore implements JobStore {
  constructor(
    private readonly client: MongoClient,
    private readonly syncID: string,
  ) {}

  private collection(name: 'jobs' | 'namespaces' | 'partitions'): Collection<Document> {
    return this.client.db(INTERNAL_DATABASE).collection(name);
  }

  async load(): Promise<PersistedJob | null> {
    const job = await this.collection('jobs').findOne({ _id: this.syncID as never });
    if (!job) return null;
    const namespaces = await this.collection('namespaces')
      .find({ syncID: this.syncID }, EXACT_BSON)
      .toArray();
    const partitions = await this.collection('partitions')
      .find({ syncID: this.syncID }, EXACT_BSON)
      .sort({ database: 1, collection: 1, index: 1 })
      .toArray();
    return {
      job: job as unknown as JobRecord,
      namespaces: namespaces.map(
        (n) =>
          ({
            ...n,
            estimatedBytes: toNumber(n.estimatedBytes),
            estimatedCount: toNumber(n.estimatedCount),
          }) as unknown as NamespaceRecord,
      ),
      partitions: partitions.map(
        (p) =>
          ({
            ...p,
            index: toNumber(p.index),
            copiedBytes: toNumber(p.copiedBytes),
            copiedDocuments: toNumber(p.copiedDocuments),
          }) as unknown as PartitionRecord,
      ),
    };
  }

  async saveJob(job: JobRecord): Promise<void> {
    await this.collection('jobs').replaceOne(
      { _id: job._id as never },
      job as unknown as Document,
      { upsert: true },
    );
  }

  async saveNamespaces(namespaces: NamespaceRecord[]): Promise<void> {
    if (namespaces.length === 0) return;
    await this.collection('namespaces').bulkWrite(
      namespaces.map((ns) => ({
        replaceOne: {
          filter: { _id: ns._id as never },
          replacement: ns as unknown as Document,
          upsert: true,
        },
      })),
      { ordered: false },
    );
  }

  async deleteNamespaces(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.collection('namespaces').deleteMany({ _id: { $in: ids as never[] } });
  }

  /** Replaces the job's whole partition set (a re-run of partitioning must not leave stale ranges). */
  async savePartitions(partitions: PartitionRecord[]): Promise<void> {
    await this.collection('partitions').deleteMany({ syncID: this.syncID });
    for (let i = 0; i < partitions.length; i += 1000) {
      await this.collection('partitions').insertMany(
        partitions.slice(i, i + 1000) as unknown as Document[],
        {
          ordered: false,
        },
      );
    }
  }

  async markPartitionDone(id: string, copiedBytes: number, copiedDocuments: number): Promise<void> {
    await this.collection('partitions').updateOne(
      { _id: id as never },
      { $set: { status: 'done', copiedBytes, copiedDocuments } },
    );
  }
}
