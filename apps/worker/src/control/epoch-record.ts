import { MongoClient } from 'mongodb';

/** Where a worker keeps the highest coordinator epoch it has taken a command at. */
export interface EpochRecord {
  load(): Promise<number>;
  raise(epoch: number): Promise<void>;
}

/** The coordinator's own epoch counter lives there too (cluster1's internal database). */
const DATABASE = 'sync_reserved_for_internal_use';
const COLLECTION = 'workerEpochs';

/**
 * The fence survives a restart: the highest epoch is kept on cluster1 — where the coordinator
 * counts its epochs, next to the job state — under the worker's id, raised with `$max` (never
 * lowered, whatever order two writes land in), majority-acknowledged before the command runs.
 */
export class MongoEpochRecord implements EpochRecord {
  private client: Promise<MongoClient> | null = null;

  constructor(
    private readonly uri: string,
    private readonly workerId: string,
  ) {}

  private collection() {
    this.client ??= MongoClient.connect(this.uri, { serverSelectionTimeoutMS: 10_000 }).catch(
      (error: unknown) => {
        this.client = null;
        throw error;
      },
    );
    return this.client.then((c) =>
      c.db(DATABASE).collection<{ _id: string; epoch: number }>(COLLECTION),
    );
  }

  async load(): Promise<number> {
    const record = await (await this.collection()).findOne({ _id: this.workerId });
    return typeof record?.epoch === 'number' ? record.epoch : 0;
  }

  async raise(epoch: number): Promise<void> {
    await (
      await this.collection()
    ).updateOne(
      { _id: this.workerId },
      { $max: { epoch } },
      { upsert: true, writeConcern: { w: 'majority' } },
    );
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    await client?.then((c) => c.close()).catch(() => undefined);
  }
}
