import { Decimal128, Int32, Long, ObjectId, type MongoClient, MongoServerError } from 'mongodb';
import { order, rng } from './sample-data';

const USER_WRITES_BLOCKED = 371;

/**
 * What ended an application writer: the server's code name; UserWritesBlocked also when only
 * its code 371 came (a router reports a shard's refusal of a shard-key-changing update as a
 * write error of its own, with the shard's code alone).
 */
export function writeErrorName(error: unknown): string {
  if (!(error instanceof MongoServerError)) return String(error);
  if (error.codeName === 'UserWritesBlocked' || error.code === USER_WRITES_BLOCKED)
    return 'UserWritesBlocked';
  return error.codeName ?? `code ${String(error.code)}`;
}

export interface WriterStats {
  inserts: number;
  updates: number;
  deletes: number;
  refused: number;
  lastError?: string;
}

/**
 * The application: keeps changing the source (inserts, nested $set, $inc on several numeric
 * types, $push/$pull, replacements, deletes) until stopped or until the source refuses writes.
 */
export class BackgroundWriter {
  readonly stats: WriterStats = { inserts: 0, updates: 0, deletes: 0, refused: 0 };
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly random = rng(7);

  constructor(
    private readonly client: MongoClient,
    private readonly customers: number,
  ) {}

  start(opsPerTick = 20, tickMs = 50): void {
    this.running = true;
    this.loop = this.run(opsPerTick, tickMs);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  private async run(opsPerTick: number, tickMs: number): Promise<void> {
    const shop = this.client.db('shop');
    const orders = shop.collection('orders');
    const customers = shop.collection('customers');
    while (this.running) {
      try {
        for (let k = 0; k < opsPerTick && this.running; k++) await this.oneWrite(orders, customers);
      } catch (err) {
        // Refusal after commit is the expected end; anything else is recorded for the caller.
        this.stats.lastError = writeErrorName(err);
        if (this.stats.lastError === 'UserWritesBlocked') this.stats.refused += 1;
        this.running = false;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, tickMs));
    }
  }

  private async oneWrite(
    orders: ReturnType<ReturnType<MongoClient['db']>['collection']>,
    customers: ReturnType<ReturnType<MongoClient['db']>['collection']>,
  ): Promise<void> {
    const r = this.random();
    const id = new Int32(Math.floor(this.random() * this.customers));
    if (r < 0.35) {
      await orders.insertOne(order(Math.floor(this.random() * 1e6), this.random, this.customers));
      this.stats.inserts += 1;
    } else if (r < 0.55) {
      await customers.updateOne(
        { _id: id },
        {
          $set: { 'address.city': 'Porto', 'name.middle': 'Q' },
          $inc: { 'loyalty.points': new Long(5) },
        },
      );
      this.stats.updates += 1;
    } else if (r < 0.7) {
      await customers.updateOne({ _id: id }, {
        $push: { tags: { $each: ['vip'], $slice: -3 } },
        $inc: { visits: new Int32(1) },
      } as never);
      this.stats.updates += 1;
    } else if (r < 0.8) {
      await customers.updateOne({ _id: id }, {
        $pull: { tags: 'newsletter' },
        $unset: { 'name.middle': '' },
      } as never);
      this.stats.updates += 1;
    } else if (r < 0.9) {
      await orders.updateOne(
        { status: 'placed' },
        { $set: { status: 'paid', paidAmount: Decimal128.fromString('9.99') } },
      );
      this.stats.updates += 1;
    } else {
      const victim = await orders.findOne({ status: 'delivered' }, { projection: { _id: 1 } });
      if (victim) {
        await orders.deleteOne({ _id: victim._id as ObjectId });
        this.stats.deletes += 1;
      }
    }
  }
}
