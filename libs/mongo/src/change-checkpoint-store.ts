import type { Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { RESERVED_DB, type Checkpoint, type CheckpointStore } from '@sync/engine/apply';
import { EXACT_BSON } from './exact-bson';

/**
 * The change-stream resume point, in the destination's metadata database (SPEC §4.7: all job
 * state lives there, so a restarted worker resumes where it was). One document per sync
 * instance in `resumeData`, replaced on each save.
 */
export class MongoCheckpointStore implements CheckpointStore {
  constructor(
    private readonly client: MongoClient,
    /** e.g. `changeEvents:<syncID>`: one resume point per instance. */
    private readonly id: string,
  ) {}

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
    await this.collection().replaceOne(
      { _id: this.id },
      {
        resumeToken: checkpoint.resumeToken,
        clusterTime: checkpoint.clusterTime,
        savedAt: checkpoint.savedAt,
      },
      { upsert: true },
    );
  }

  private collection() {
    return this.client.db(RESERVED_DB).collection<{ _id: string } & Document>('resumeData');
  }
}
