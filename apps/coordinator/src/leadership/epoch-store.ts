import type { MongoClient } from 'mongodb';

/** Durable, increasing fencing numbers: one per leadership term. */
export interface EpochStore {
  next(leaderId: string): Promise<number>;
}

export const LEADERSHIP_DATABASE = 'sync_reserved_for_internal_use';
export const LEADERSHIP_COLLECTION = 'leadership';

/**
 * The epoch lives on the destination (cluster1), next to the job state, so it survives a Redis
 * that restarts empty: `$inc` by one write each time a replica becomes leader.
 */
export class MongoEpochStore implements EpochStore {
  constructor(private readonly client: () => Promise<MongoClient>) {}

  async next(leaderId: string): Promise<number> {
    const client = await this.client();
    const record = await client
      .db(LEADERSHIP_DATABASE)
      .collection<{ _id: string; epoch: number; leader: string; at: Date }>(LEADERSHIP_COLLECTION)
      .findOneAndUpdate(
        { _id: 'coordinator' },
        { $inc: { epoch: 1 }, $set: { leader: leaderId, at: new Date() } },
        { upsert: true, returnDocument: 'after', writeConcern: { w: 'majority' } },
      );
    if (!record || typeof record.epoch !== 'number') throw new Error('no epoch was recorded');
    return record.epoch;
  }
}
