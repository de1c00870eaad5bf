import {
  INTERNAL_DATABASE,
  partitionVisible,
  type ClaimGuard,
  type JobRecord,
  type JobStore,
  type NamespaceRecord,
  type PartitionRecord,
  type PersistedJob,
} from '@sync/engine';
import { BSON, type Document } from 'bson';
import type { Collection, MongoClient } from 'mongodb';
import { CLAIM_EPOCH, Fencing, isDuplicateKey } from './claim-fencing';
import { EXACT_BSON, toNumber } from './exact-bson';

/**
 * JobStore in `sync_reserved_for_internal_use` on the cluster that is the job's destination.
 * The job document (catalog included) and partition bounds are read with EXACT_BSON (a promoted
 * Int64 or Binary bound would move a partition edge, a promoted index option would change an
 * index); the plain counters are normalised to numbers and the start request is promoted as the
 * API decoded it. Every method is one write, or writes invisible until the next `saveJob`.
 *
 * Fencing (a per-shard worker's guard): every write checks the claim's lease first and carries
 * the claim epoch — `claimEpoch` in the job and partition documents, in the filter (≤ this
 * epoch) and in the document — so once a successor stamped its newer epoch, a write of this
 * worker matches nothing and throws ShardClaimLost.
 */
export class MongoJobStore implements JobStore {
  private readonly fencing: Fencing;

  constructor(
    private readonly client: MongoClient,
    private readonly syncID: string,
    guard?: ClaimGuard,
  ) {
    this.fencing = new Fencing(guard);
  }

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
      const { [CLAIM_EPOCH]: _epoch, ...fields } = doc;
      const p = {
        ...fields,
        set: toNumber(doc.set),
        index: toNumber(doc.index),
        copiedBytes: toNumber(doc.copiedBytes),
        copiedDocuments: toNumber(doc.copiedDocuments),
      } as unknown as PartitionRecord;
      if (partitionVisible(job, p)) partitions.push(p);
      else garbage.push(doc._id);
    }
    if (garbage.length > 0) {
      const epoch = this.fencing.check();
      await this.collection('partitions').deleteMany({
        _id: { $in: garbage as never[] },
        ...this.fencing.filter(epoch),
      });
    }
    return { job, partitions };
  }

  async saveJob(job: JobRecord): Promise<void> {
    const epoch = this.fencing.check();
    try {
      await this.collection('jobs').replaceOne(
        { _id: job._id as never, ...this.fencing.filter(epoch) },
        this.stamped(job as unknown as Document, epoch),
        { upsert: true },
      );
    } catch (error) {
      if (epoch !== undefined && isDuplicateKey(error))
        throw this.fencing.refused('saving the job document');
      throw error;
    }
  }

  async addPartitions(partitions: PartitionRecord[]): Promise<void> {
    for (let i = 0; i < partitions.length; i += 1000) {
      const epoch = this.fencing.check();
      try {
        await this.collection('partitions').bulkWrite(
          partitions.slice(i, i + 1000).map((p) => ({
            replaceOne: {
              filter: { _id: p._id as never, ...this.fencing.filter(epoch) },
              replacement: this.stamped(p as unknown as Document, epoch),
              upsert: true,
            },
          })),
          { ordered: false },
        );
      } catch (error) {
        if (epoch !== undefined && isDuplicateKey(error))
          throw this.fencing.refused('writing partitions');
        throw error;
      }
    }
  }

  async markPartitionDone(id: string, copiedBytes: number, copiedDocuments: number): Promise<void> {
    const epoch = this.fencing.check();
    const partitions = this.collection('partitions');
    const done = await partitions.updateOne(
      { _id: id as never, ...this.fencing.filter(epoch) },
      {
        $set: {
          status: 'done',
          copiedBytes,
          copiedDocuments,
          ...(epoch !== undefined ? { [CLAIM_EPOCH]: epoch } : {}),
        },
      },
    );
    if (done.matchedCount === 0)
      await this.fencing.confirm(partitions, { _id: id }, epoch, 'marking a partition copied');
  }

  /** The job document first: without it the partitions are garbage whatever happens next. */
  async deleteJob(): Promise<void> {
    const epoch = this.fencing.check();
    const jobs = this.collection('jobs');
    const done = await jobs.deleteOne({ _id: this.syncID as never, ...this.fencing.filter(epoch) });
    if (done.deletedCount === 0)
      await this.fencing.confirm(jobs, { _id: this.syncID }, epoch, 'deleting the job');
    await this.collection('partitions').deleteMany({
      syncID: this.syncID,
      ...this.fencing.filter(epoch),
    });
  }

  /** The document as written: with the writer's claim epoch when it holds a claim. */
  private stamped(doc: Document, epoch: number | undefined): Document {
    return epoch === undefined ? doc : { ...doc, [CLAIM_EPOCH]: epoch };
  }
}

function normaliseJob(raw: Document): JobRecord {
  delete raw[CLAIM_EPOCH];
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
