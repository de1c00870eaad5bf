import type { Document } from 'bson';
import type { MongoClient } from 'mongodb';
import type { ClaimGuard } from '@sync/engine';
import { RESERVED_DB, type Checkpoint, type CheckpointStore } from '@sync/engine/apply';
import { CLAIM_EPOCH, Fencing, isDuplicateKey } from './claim-fencing';
import { EXACT_BSON } from './exact-bson';

/**
 * The change-stream resume point, in the destination's metadata database (all job
 * state lives there, so a restarted worker resumes where it was). One document per sync
 * instance in `resumeData`, replaced on each save.
 *
 * Fencing (a per-shard worker's guard): a save checks the claim's lease first and carries the
 * claim epoch (`claimEpoch`, ≤ this epoch in the filter), so once a successor stamped its newer
 * epoch, a save of this worker matches nothing and throws ShardClaimLost.
 */
export class MongoCheckpointStore implements CheckpointStore {
  private readonly fencing: Fencing;

  constructor(
    private readonly client: MongoClient,
    /** e.g. `changeEvents:<syncID>|r0`: one resume point per instance and direction. */
    private readonly id: string,
    guard?: ClaimGuard,
  ) {
    this.fencing = new Fencing(guard);
  }

  async load(): Promise<Checkpoint | null> {
    const doc = await this.collection().findOne({ _id: this.id }, EXACT_BSON);
    if (!doc) return null;
    return {
      resumeToken: doc.resumeToken as Document,
      clusterTime: doc.clusterTime,
      savedAt: doc.savedAt as Date,
    };
  }

  async save(checkpoint: Checkpoint): Promise<void> {
    const epoch = this.fencing.check();
    try {
      await this.collection().replaceOne(
        { _id: this.id, ...this.fencing.filter(epoch) },
        {
          resumeToken: checkpoint.resumeToken,
          clusterTime: checkpoint.clusterTime,
          savedAt: checkpoint.savedAt,
          ...(epoch !== undefined ? { [CLAIM_EPOCH]: epoch } : {}),
        },
        { upsert: true },
      );
    } catch (error) {
      if (epoch !== undefined && isDuplicateKey(error))
        throw this.fencing.refused('saving the checkpoint');
      throw error;
    }
  }

  private collection() {
    return this.client.db(RESERVED_DB).collection<{ _id: string } & Document>('resumeData');
  }
}
