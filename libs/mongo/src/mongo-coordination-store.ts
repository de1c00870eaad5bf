import {
  INTERNAL_DATABASE,
  type BarrierRecord,
  type ClaimGuard,
  type CoordinationRecord,
  type CoordinationStore,
  type WorkerClaim,
} from '@sync/engine';
import type { Document } from 'bson';
import type { Collection, MongoClient } from 'mongodb';
import { Fencing, isDuplicateKey } from './claim-fencing';
import { EXACT_BSON, toNumber } from './exact-bson';
import { normaliseNamespaces, normaliseRequest } from './mongo-job-store';

const ID = 'sync';

/**
 * The per-shard sync's shared record (`coordination`, `_id: "sync"`), its DDL barriers
 * (`barriers`, by resume token) and the shard claims (`workers`), on the destination. Every
 * method is one atomic write; read with EXACT_BSON, since the shared plan holds index specs and
 * chunk bounds that must round-trip.
 *
 * Fencing (with a guard: a per-shard worker): the shared documents record each worker's claim
 * epoch (`claimEpochs.<shard id>`); every write of this worker checks its lease first and
 * carries its epoch in the filter, so once a successor stamped a newer one (`fence`) the write
 * matches nothing and throws ShardClaimLost.
 */
export class MongoCoordinationStore implements CoordinationStore {
  private readonly fencing: Fencing;

  constructor(
    private readonly client: MongoClient,
    guard?: ClaimGuard,
  ) {
    this.fencing = new Fencing(guard);
  }

  private collection(
    name:
      'coordination' | 'barriers' | 'workers' | 'jobs' | 'partitions' | 'catalog' | 'resumeData',
  ): Collection<Document> {
    return this.client.db(INTERNAL_DATABASE).collection(name);
  }

  /**
   * One atomic write judged by the destination's clock ($$NOW): the filter matches this
   * instance's claim or a stale one (heartbeat older than $$NOW − staleMs), the pipeline update
   * stamps the heartbeat with $$NOW and increments the epoch when the instance changes. A
   * fresh claim of another instance matches nothing and the upsert collides with it (11000).
   */
  async claim(worker: string, instance: string, staleMs: number): Promise<WorkerClaim> {
    const held = await this.claimWrite(worker, instance, staleMs, true);
    if (!held) throw new Error(`the claim of shard ${worker} vanished while it was claimed`);
    return held;
  }

  /**
   * A standby's attempt: the same write without the upsert, so it never creates a claim and,
   * while the holder is fresh, matches nothing (writes nothing).
   */
  async takeOver(worker: string, instance: string, staleMs: number): Promise<WorkerClaim | null> {
    return this.claimWrite(worker, instance, staleMs, false);
  }

  async readClaim(worker: string): Promise<WorkerClaim | null> {
    const held = await this.collection('workers').findOne({ _id: worker as never });
    return held ? toClaim(held) : null;
  }

  private async claimWrite(
    worker: string,
    instance: string,
    staleMs: number,
    upsert: boolean,
  ): Promise<WorkerClaim | null> {
    const workers = this.collection('workers');
    let held: Document | null = null;
    try {
      held = await workers.findOneAndUpdate(
        {
          _id: worker as never,
          $or: [
            { instance },
            // Stale by the destination's clock, after the LONGER of the two instances' stale
            // limits: a holder launched with a longer lease still holds it until then.
            {
              $expr: {
                $lt: [
                  '$heartbeatAt',
                  {
                    $subtract: ['$$NOW', { $max: [staleMs, { $ifNull: ['$staleMs', staleMs] }] }],
                  },
                ],
              },
            },
          ],
        },
        [
          {
            $set: {
              epoch: {
                $cond: [
                  { $eq: ['$instance', instance] },
                  '$epoch',
                  { $add: [{ $ifNull: ['$epoch', 0] }, 1] },
                ],
              },
              instance,
              heartbeatAt: '$$NOW',
              staleMs,
            },
          },
        ],
        { upsert, returnDocument: 'after' },
      );
    } catch (error) {
      // Held by a live process: the upsert collides with its document.
      if (!isDuplicateKey(error)) throw error;
    }
    held ??= await workers.findOne({ _id: worker as never });
    return held ? toClaim(held) : null;
  }

  async fence(worker: string, epoch: number): Promise<void> {
    const stamp = { $max: { claimEpoch: epoch } };
    const shared = { $max: { [`claimEpochs.${worker}`]: epoch } };
    await this.collection('jobs').updateOne({ _id: worker as never }, stamp);
    await this.collection('partitions').updateMany({ syncID: worker }, stamp);
    await this.collection('catalog').updateMany({ syncID: worker }, stamp);
    await this.collection('resumeData').updateMany(
      { _id: { $regex: `^changeEvents:${escapeRegex(worker)}\\|` } as never },
      stamp,
    );
    await this.collection('coordination').updateOne({ _id: ID as never }, shared);
    await this.collection('barriers').updateMany({}, shared);
  }

  async load(): Promise<CoordinationRecord | null> {
    const raw = await this.collection('coordination').findOne({ _id: ID as never }, EXACT_BSON);
    if (!raw) return null;
    const plan = raw.plan as Document;
    return {
      ...(raw as unknown as CoordinationRecord),
      request: normaliseRequest(raw.request as Document),
      ...(raw.reversals !== undefined ? { reversals: toNumber(raw.reversals) } : {}),
      plan: {
        ...(plan as unknown as CoordinationRecord['plan']),
        estimatedTotalBytes: toNumber(plan.estimatedTotalBytes),
        namespaces: normaliseNamespaces(plan.namespaces as Document[]),
      },
    };
  }

  /** Replaces the record (a new sync): the creator's epoch is the only one it keeps. */
  async create(record: CoordinationRecord): Promise<void> {
    const epoch = this.fencing.check();
    const field = this.epochField();
    await this.collection('barriers').deleteMany(this.fencing.filter(epoch, field));
    try {
      await this.collection('coordination').replaceOne(
        { _id: ID as never, ...this.fencing.filter(epoch, field) },
        {
          ...(record as unknown as Document),
          ...(epoch !== undefined ? { claimEpochs: { [this.fencing.guard!.worker]: epoch } } : {}),
        },
        { upsert: true },
      );
    } catch (error) {
      if (epoch !== undefined && isDuplicateKey(error))
        throw this.fencing.refused('creating the shared record');
      throw error;
    }
  }

  async set(fields: Partial<Omit<CoordinationRecord, '_id'>>): Promise<void> {
    await this.updateRecord({ $set: fields }, 'a write of the shared record');
  }

  async markStep(step: string, worker: string): Promise<void> {
    await this.updateRecord(
      { $addToSet: { [`commitSteps.${step}`]: worker } },
      `recording commit step ${step}`,
    );
  }

  async forgetSteps(steps: readonly string[], worker: string): Promise<void> {
    if (steps.length === 0) return;
    await this.updateRecord(
      { $pull: Object.fromEntries(steps.map((step) => [`commitSteps.${step}`, worker])) },
      "forgetting an earlier commit's steps",
    );
  }

  async arrive(barrier: string, worker: string): Promise<BarrierRecord> {
    const epoch = this.fencing.check();
    const field = this.epochField();
    try {
      const doc = await this.collection('barriers').findOneAndUpdate(
        { _id: barrier as never, ...this.fencing.filter(epoch, field) },
        {
          $addToSet: { arrived: worker },
          $setOnInsert: { released: false },
          ...(epoch !== undefined ? { $max: { [field]: epoch } } : {}),
        },
        { upsert: true, returnDocument: 'after' },
      );
      return doc as unknown as BarrierRecord;
    } catch (error) {
      if (epoch !== undefined && isDuplicateKey(error))
        throw this.fencing.refused('arriving at a barrier');
      throw error;
    }
  }

  async barrier(barrier: string): Promise<BarrierRecord | null> {
    const doc = await this.collection('barriers').findOne({ _id: barrier as never });
    return doc as unknown as BarrierRecord | null;
  }

  async release(barrier: string): Promise<void> {
    const epoch = this.fencing.check();
    const field = this.epochField();
    const barriers = this.collection('barriers');
    const done = await barriers.updateOne(
      { _id: barrier as never, ...this.fencing.filter(epoch, field) },
      { $set: { released: true }, ...(epoch !== undefined ? { $max: { [field]: epoch } } : {}) },
    );
    if (done.matchedCount === 0)
      await this.fencing.confirm(barriers, { _id: barrier }, epoch, 'releasing a barrier', field);
  }

  /** One fenced update of the shared record (a missing record matches nothing, as before). */
  private async updateRecord(update: Document, what: string): Promise<void> {
    const epoch = this.fencing.check();
    const field = this.epochField();
    const coordination = this.collection('coordination');
    const done = await coordination.updateOne(
      { _id: ID as never, ...this.fencing.filter(epoch, field) },
      epoch !== undefined ? { ...update, $max: { [field]: epoch } } : update,
    );
    if (done.matchedCount === 0)
      await this.fencing.confirm(coordination, { _id: ID }, epoch, what, field);
  }

  /** Where the shared documents record this worker's claim epoch. */
  private epochField(): string {
    return `claimEpochs.${this.fencing.guard?.worker ?? ''}`;
  }
}

function toClaim(held: Document): WorkerClaim {
  return {
    _id: String(held._id),
    instance: String(held.instance),
    heartbeatAt: held.heartbeatAt as Date,
    // A claim written before epochs existed counts as epoch 0.
    epoch: toNumber(held.epoch),
  };
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
