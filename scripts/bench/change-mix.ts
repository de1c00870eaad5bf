import {
  Double,
  Int32,
  Long,
  type AnyBulkWriteOperation,
  type Document,
  type MongoClient,
} from 'mongodb';
import { rng } from '../lib/sample-data';
import {
  collectionName,
  collectionOf,
  inLanes,
  makeDocument,
  secondsSince,
  type DatasetSpec,
} from './dataset';

/** `_id`s of documents the change load inserts: far above the dataset's, so cleanup is one range. */
export const LOAD_ID_BASE = 1_000_000_000_000;

/** One planned bulk write: the operations of one collection, and what they are. */
export interface MixBatch {
  collection: string;
  ops: AnyBulkWriteOperation<Document>[];
  inserts: number;
  updates: number;
  deletes: number;
  /** `_id`s this batch inserts (deletable once it is acknowledged). */
  added: number[];
}

/**
 * The change load's mix: inserts (30%), updates (40%, `$set` + `$inc` on dataset documents) and
 * deletes (30%, of documents the load itself inserted and that are known to exist). Used by the
 * load generator (d), by the destination's direct-apply limit (g) and by the source's
 * change-stream read limit (h), so all three see the same operations.
 */
export class MixPlanner {
  private readonly random: () => number;
  private nextId: number;
  /** Inserted `_id`s that may be deleted now, oldest first. */
  private readonly deletable: number[] = [];
  private deletableHead = 0;
  private serial = 0;

  constructor(
    private readonly spec: DatasetSpec,
    seed = 99,
    idBase = LOAD_ID_BASE,
  ) {
    this.random = rng(seed);
    this.nextId = idBase;
  }

  /** `count` operations grouped into one batch per collection (a tick of the load). */
  plan(count: number): MixBatch[] {
    const byCollection = new Map<number, MixBatch>();
    const batchOf = (k: number): MixBatch => {
      let batch = byCollection.get(k);
      if (!batch) {
        batch = {
          collection: collectionName(k),
          ops: [],
          inserts: 0,
          updates: 0,
          deletes: 0,
          added: [],
        };
        byCollection.set(k, batch);
      }
      return batch;
    };
    for (let n = 0; n < count; n++) {
      const r = this.random();
      if (r < 0.3) {
        const id = this.nextId++;
        const batch = batchOf(collectionOf(this.spec, id));
        batch.ops.push({ insertOne: { document: makeDocument(id, this.spec.documentBytes) } });
        batch.added.push(id);
        batch.inserts += 1;
      } else if (r < 0.6 && this.deletableHead < this.deletable.length) {
        const id = this.deletable[this.deletableHead++]!;
        const batch = batchOf(collectionOf(this.spec, id));
        batch.ops.push({ deleteOne: { filter: { _id: Long.fromNumber(id) } } });
        batch.deletes += 1;
      } else {
        const i = Math.floor(this.random() * this.spec.documents);
        const batch = batchOf(collectionOf(this.spec, i));
        batch.ops.push({
          updateOne: {
            filter: { _id: Long.fromNumber(i) },
            update: {
              $set: {
                ratio: new Double(this.random()),
                'flags.level': new Int32(this.serial++ % 10),
              },
              $inc: { seq: new Int32(1) },
            },
          },
        });
        batch.updates += 1;
      }
    }
    if (this.deletableHead > 100_000) {
      this.deletable.splice(0, this.deletableHead);
      this.deletableHead = 0;
    }
    return [...byCollection.values()];
  }

  /** The batch's inserts were acknowledged: their documents may be deleted from now on. */
  acknowledge(batch: MixBatch): void {
    for (const id of batch.added) this.deletable.push(id);
  }
}

/**
 * Plans `total` operations in ticks of `batchOps` per collection. A tick's inserts become
 * deletable `lagTicks` ticks later, so that with a few writes in flight in plan order a delete
 * does not overtake the insert of its document (the event counts come from the write results
 * anyway, so a delete that did overtake is only a missed event, never a wrong figure).
 */
export function planMix(
  spec: DatasetSpec,
  total: number,
  batchOps: number,
  lagTicks: number,
  seed = 7,
): MixBatch[] {
  const planner = new MixPlanner(spec, seed);
  const ticks: MixBatch[][] = [];
  const tickOps = batchOps * spec.collections;
  for (let planned = 0; planned < total; planned += tickOps) {
    ticks.push(planner.plan(Math.min(tickOps, total - planned)));
    const due = ticks[ticks.length - 1 - lagTicks];
    for (const batch of due ?? []) planner.acknowledge(batch);
  }
  return ticks.flat();
}

export interface MixRate {
  ops: number;
  inserts: number;
  updates: number;
  deletes: number;
  /** Documents the writes actually inserted, modified or deleted (each one change event). */
  effects: number;
  seconds: number;
  opsPerSec: number;
}

/**
 * Applies planned batches to `database` as unordered bulk writes, `concurrency` at a time,
 * in plan order (a client that already knows every operation: no generation inside the timing).
 */
export async function applyMix(
  client: MongoClient,
  database: string,
  batches: MixBatch[],
  concurrency: number,
): Promise<MixRate> {
  const db = client.db(database);
  let effects = 0;
  const started = process.hrtime.bigint();
  await inLanes(batches.length, concurrency, async (i) => {
    const batch = batches[i]!;
    const r = await db.collection(batch.collection).bulkWrite(batch.ops, { ordered: false });
    effects += r.insertedCount + r.modifiedCount + r.deletedCount;
  });
  const seconds = secondsSince(started);
  let inserts = 0;
  let updates = 0;
  let deletes = 0;
  for (const b of batches) {
    inserts += b.inserts;
    updates += b.updates;
    deletes += b.deletes;
  }
  const ops = inserts + updates + deletes;
  return {
    ops,
    inserts,
    updates,
    deletes,
    effects,
    seconds,
    opsPerSec: seconds > 0 ? ops / seconds : 0,
  };
}

export interface StreamReadRate {
  events: number;
  seconds: number;
  eventsPerSec: number;
  /** The same mix written to the source by the bench (unordered bulk writes): its own rate. */
  sourceWrite: MixRate;
  /**
   * The reading client's own CPU per event (µs): this process during the timed read alone,
   * the official driver receiving and decoding the stream — what any tool reading a change
   * stream with the driver pays per event.
   */
  clientCpuMicrosPerEvent: number;
}

/**
 * (h) The source's change-stream read rate for the mix: a cluster-wide change stream opened as
 * the worker opens it (showExpandedEvents, no promotion, no fullDocument lookup), the mix
 * written to the source, then the stream read from where it was opened until every event of
 * the mix arrived. Only the read is timed, so the figure is how fast the source serves the
 * history of that mix to one reader.
 */
export async function measureStreamRead(
  client: MongoClient,
  database: string,
  batches: MixBatch[],
  concurrency: number,
  timeoutMs: number,
): Promise<StreamReadRate> {
  const stream = client.watch([], {
    promoteValues: false,
    promoteLongs: false,
    promoteBuffers: false,
    bsonRegExp: true,
    showExpandedEvents: true,
    maxAwaitTimeMS: 500,
  });
  try {
    await stream.tryNext(); // opens the stream now: everything written after is in it
    const sourceWrite = await applyMix(client, database, batches, concurrency);
    const expected = sourceWrite.effects;
    let events = 0;
    const started = process.hrtime.bigint();
    const cpuBefore = process.cpuUsage();
    const deadline = Date.now() + timeoutMs;
    while (events < expected && Date.now() < deadline) {
      const event = (await stream.tryNext()) as { ns?: { db?: string } } | null;
      if (event && event.ns?.db === database) events += 1;
    }
    const seconds = secondsSince(started);
    const cpu = process.cpuUsage(cpuBefore);
    return {
      events,
      seconds,
      eventsPerSec: seconds > 0 ? events / seconds : 0,
      sourceWrite,
      clientCpuMicrosPerEvent: events > 0 ? Math.round((cpu.user + cpu.system) / events) : 0,
    };
  } finally {
    await stream.close();
  }
}
