import {
  INTERNAL_DATABASE,
  type DdlAnnouncement,
  type SyncHalt,
  type WatermarkSnapshot,
  type WatermarkStore,
  type WorkerWatermark,
} from '@sync/engine';
import { BSON, Binary, type Document, type Timestamp } from 'bson';
import type { Collection, MongoClient } from 'mongodb';
import { EXACT_BSON } from './exact-bson';

/** The halt record's `_id` in the watermarks collection (no shard id starts with `$`). */
const HALT = '$halt';

/**
 * A per-shard sync's watermarks (`watermarks`, one document per worker, raised with `$max`) and
 * DDL announcements (`ddlAnnouncements`, by resume token), on the destination beside the shared
 * coordination record. Read with EXACT_BSON: an announcement holds the change event itself.
 */
export class MongoWatermarkStore implements WatermarkStore {
  constructor(private readonly client: MongoClient) {}

  private collection(name: 'watermarks' | 'ddlAnnouncements'): Collection<Document> {
    return this.client.db(INTERNAL_DATABASE).collection(name);
  }

  async publish(mark: WorkerWatermark): Promise<void> {
    await this.collection('watermarks').updateOne(
      { _id: mark.worker as never },
      {
        $max: { readThrough: mark.readThrough, appliedBefore: mark.appliedBefore },
        ...(mark.needs ? { $set: { needs: mark.needs } } : { $unset: { needs: '' } }),
      },
      { upsert: true },
    );
  }

  async announce(ddl: Omit<DdlAnnouncement, 'applied'>): Promise<void> {
    await this.collection('ddlAnnouncements').updateOne(
      { _id: ddl.token as never },
      {
        $set: {
          worker: ddl.worker,
          clusterTime: ddl.clusterTime,
          // As BSON bytes: an event may hold `$`-prefixed names (a validator's $jsonSchema).
          event: new Binary(BSON.serialize(ddl.event)),
        },
        $setOnInsert: { applied: false },
      },
      { upsert: true },
    );
  }

  async markApplied(token: string): Promise<void> {
    await this.collection('ddlAnnouncements').updateOne(
      { _id: token as never },
      { $set: { applied: true } },
    );
  }

  async snapshot(since?: Timestamp): Promise<WatermarkSnapshot> {
    // Marks first: a mark past T was written after T's announcement, so the read below sees it.
    const rows = await this.collection('watermarks').find({}, EXACT_BSON).toArray();
    const ddl = await this.collection('ddlAnnouncements')
      .find(since ? { clusterTime: { $gte: since } } : {}, EXACT_BSON)
      .sort({ clusterTime: 1, _id: 1 })
      .toArray();
    const halt = rows.find((r) => (r._id as unknown) === HALT);
    return {
      marks: rows
        .filter((r) => (r._id as unknown) !== HALT)
        .map((r) => ({
          worker: String(r._id),
          readThrough: r.readThrough as Timestamp,
          appliedBefore: r.appliedBefore as Timestamp,
          ...(r.needs ? { needs: r.needs as Timestamp } : {}),
        })),
      ddl: ddl.map((d) => ({
        token: String(d._id),
        worker: String(d.worker),
        clusterTime: d.clusterTime as Timestamp,
        event: BSON.deserialize((d.event as Binary).buffer, EXACT_BSON) as Document,
        applied: d.applied === true,
      })),
      ...(halt
        ? {
            halt: {
              worker: String(halt.worker),
              name: String(halt.name),
              message: String(halt.message),
            },
          }
        : {}),
    };
  }

  async halt(halt: SyncHalt): Promise<void> {
    await this.collection('watermarks').updateOne(
      { _id: HALT as never },
      { $setOnInsert: { ...halt } },
      { upsert: true },
    );
  }

  async clear(): Promise<void> {
    await this.collection('watermarks').deleteMany({});
    await this.collection('ddlAnnouncements').deleteMany({});
  }
}
