import {
  INTERNAL_DATABASE,
  type BarrierRecord,
  type CoordinationRecord,
  type CoordinationStore,
  type WorkerClaim,
} from '@sync/engine';
import type { Document } from 'bson';
import type { Collection, MongoClient } from 'mongodb';
import { EXACT_BSON, toNumber } from './exact-bson';
import { normaliseNamespaces, normaliseRequest } from './mongo-job-store';

const ID = 'sync';

/**
 * The per-shard sync's shared record (`coordination`, `_id: "sync"`) and its DDL barriers
 * (`barriers`, by resume token), on the destination. Every method is one atomic write; read
 * with EXACT_BSON, since the shared plan holds index specs and chunk bounds that must round-trip.
 */
export class MongoCoordinationStore implements CoordinationStore {
  constructor(private readonly client: MongoClient) {}

  private collection(name: 'coordination' | 'barriers' | 'workers'): Collection<Document> {
    return this.client.db(INTERNAL_DATABASE).collection(name);
  }

  async claim(worker: string, instance: string, now: Date, staleBefore: Date): Promise<WorkerClaim> {
    const workers = this.collection('workers');
    try {
      await workers.updateOne(
        {
          _id: worker as never,
          $or: [{ instance }, { heartbeatAt: { $lt: staleBefore } }],
        },
        { $set: { instance, heartbeatAt: now } },
        { upsert: true },
      );
    } catch (error) {
      // Held by a live process: the upsert collides with its document.
      if ((error as { code?: unknown }).code !== 11000) throw error;
    }
    const held = await workers.findOne({ _id: worker as never });
    return held as unknown as WorkerClaim;
  }

  async load(): Promise<CoordinationRecord | null> {
    const raw = await this.collection('coordination').findOne({ _id: ID as never }, EXACT_BSON);
    if (!raw) return null;
    const plan = raw.plan as Document;
    return {
      ...(raw as unknown as CoordinationRecord),
      request: normaliseRequest(raw.request as Document),
      plan: {
        ...(plan as unknown as CoordinationRecord['plan']),
        estimatedTotalBytes: toNumber(plan.estimatedTotalBytes),
        namespaces: normaliseNamespaces(plan.namespaces as Document[]),
      },
    };
  }

  async create(record: CoordinationRecord): Promise<void> {
    await this.collection('barriers').deleteMany({});
    await this.collection('coordination').replaceOne(
      { _id: ID as never },
      record as unknown as Document,
      { upsert: true },
    );
  }

  async set(fields: Partial<Omit<CoordinationRecord, '_id'>>): Promise<void> {
    await this.collection('coordination').updateOne({ _id: ID as never }, { $set: fields });
  }

  async markStep(step: string, worker: string): Promise<void> {
    await this.collection('coordination').updateOne(
      { _id: ID as never },
      { $addToSet: { [`commitSteps.${step}`]: worker } },
    );
  }

  async arrive(barrier: string, worker: string): Promise<BarrierRecord> {
    const doc = await this.collection('barriers').findOneAndUpdate(
      { _id: barrier as never },
      { $addToSet: { arrived: worker }, $setOnInsert: { released: false } },
      { upsert: true, returnDocument: 'after' },
    );
    return doc as unknown as BarrierRecord;
  }

  async barrier(barrier: string): Promise<BarrierRecord | null> {
    const doc = await this.collection('barriers').findOne({ _id: barrier as never });
    return doc as unknown as BarrierRecord | null;
  }

  async release(barrier: string): Promise<void> {
    await this.collection('barriers').updateOne(
      { _id: barrier as never },
      { $set: { released: true } },
    );
  }
}
