import { Long, type MongoClient } from 'mongodb';
import { TestCluster } from './helpers/cluster';

type Counters = { deleted: Long; inserted: Long; returned: Long; updated: Long };

/**
 * serverStatus().metrics.document: NumberLong counters of the documents a node's commands
 * returned (find/aggregate/getMore batches), inserted, updated (matched) and deleted.
 * Runs against a real server too (with EMULATOR_CONFORMANCE_URI), counting deltas; the server
 * should then be otherwise idle.
 */
describe('serverStatus metrics.document and metrics.commands', () => {
  let cluster: TestCluster;
  let client: MongoClient;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect();
  });

  afterAll(async () => {
    await cluster?.close();
  });

  async function counters(): Promise<Counters> {
    // promoteLongs: false keeps NumberLongs as Long (the driver turns them into numbers).
    const status = await client.db('admin').command({ serverStatus: 1 }, { promoteLongs: false });
    return status.metrics.document as Counters;
  }

  function delta(after: Counters, before: Counters): Record<keyof Counters, number> {
    const out = {} as Record<keyof Counters, number>;
    for (const k of ['deleted', 'inserted', 'returned', 'updated'] as const)
      out[k] = after[k].toNumber() - before[k].toNumber();
    return out;
  }

  it('are NumberLongs', async () => {
    const c = await counters();
    for (const k of ['deleted', 'inserted', 'returned', 'updated'] as const)
      expect(c[k]).toBeInstanceOf(Long);
  });

  it('count documents inserted, updated (matched), deleted and returned', async () => {
    const coll = client.db(cluster.dbName('metrics')).collection<{ _id: number; a?: number }>('c');
    await coll.insertOne({ _id: 0 }); // creates the collection outside the measured span
    const before = await counters();
    await coll.insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3 }, { _id: 4 }]);
    // Matched, not modified: the already-set document counts as updated too.
    await coll.updateMany({ _id: { $in: [1, 2] } }, { $set: { a: 1 } });
    await coll.updateOne({ _id: 1 }, { $set: { a: 1 } });
    await coll.updateOne({ _id: 9 }, { $set: { a: 9 } }, { upsert: true });
    await coll.deleteMany({ _id: { $in: [3, 4] } });
    await coll.findOneAndDelete({ _id: 9 });
    await coll.findOneAndUpdate({ _id: 2 }, { $set: { a: 2 } });
    // Returned: 3 documents by find (a batch of 2, then getMore), 2 by aggregate.
    expect(await coll.find({}, { batchSize: 2 }).toArray()).toHaveLength(3);
    expect(await coll.aggregate([{ $match: { a: { $exists: true } } }]).toArray()).toHaveLength(2);
    expect(delta(await counters(), before)).toEqual({
      inserted: 4 + 1,
      updated: 2 + 1 + 1,
      deleted: 2 + 1,
      returned: 3 + 2,
    });
  });

  /**
   * metrics.commands: per command name `{failed, total}` NumberLongs, as mongod keeps them
   * (deltas, as for metrics.document).
   */
  describe('metrics.commands', () => {
    type Counts = Record<string, { failed: Long; total: Long }>;
    const commands = async (): Promise<Counts> =>
      (await client.db('admin').command({ serverStatus: 1 }, { promoteLongs: false })).metrics
        .commands as Counts;
    const ran = (after: Counts, before: Counts, name: string) => ({
      total: after[name]!.total.toNumber() - (before[name]?.total.toNumber() ?? 0),
      failed: after[name]!.failed.toNumber() - (before[name]?.failed.toNumber() ?? 0),
    });

    it('count each command run, and the runs that failed, by name', async () => {
      const coll = client.db(cluster.dbName('cmdmetrics')).collection<{ _id: number }>('c');
      const db = client.db(cluster.dbName('cmdmetrics'));
      await coll.insertOne({ _id: 1 });
      const before = await commands();
      await coll.insertOne({ _id: 2 });
      await coll.insertOne({ _id: 1 }).catch(() => undefined); // a duplicate key: a write error, not a failed command
      await coll.find({}).toArray();
      await coll.listIndexes().toArray();
      await db
        .collection('nope')
        .listIndexes()
        .toArray()
        .catch(() => undefined); // NamespaceNotFound
      const after = await commands();
      expect(after.insert!.total).toBeInstanceOf(Long);
      expect(ran(after, before, 'insert')).toEqual({ total: 2, failed: 0 });
      expect(ran(after, before, 'find')).toEqual({ total: 1, failed: 0 });
      expect(ran(after, before, 'listIndexes')).toEqual({ total: 2, failed: 1 });
    });
  });
});
