import type { Document, FindCursor, MongoClient } from 'mongodb';
import { TestCluster } from '../helpers/cluster';

/**
 * Guards against pathologies that would distort the benchmark: range reads that scan the
 * collection instead of the index, and streaming reads that lose documents across batches.
 * Work is asserted as examined keys/documents (deterministic), never as elapsed time — speed
 * itself is measured by `npm run bench`. The emulator counts them in its collection metrics; a
 * real server reports them in `explain('executionStats')`.
 */
describe('conformance: index-served ranges and streaming reads', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let dbName: string;

  beforeAll(async () => {
    cluster = await TestCluster.start({ historySize: 1000 });
    client = await cluster.connect();
    dbName = cluster.dbName('speed');
  });
  afterAll(() => cluster.close());

  /** Keys and documents examined by reading `cursor()` through. */
  async function examined(
    coll: string,
    cursor: () => FindCursor<Document>,
  ): Promise<{ docs: number; keys: number }> {
    if (cluster.real) {
      const { executionStats } = await cursor().explain('executionStats');
      return { docs: executionStats.totalDocsExamined, keys: executionStats.totalKeysExamined };
    }
    const metrics = cluster.rs.node.catalog.getCollection(dbName, coll)!.metrics;
    const before = { ...metrics };
    for await (const _ of cursor());
    return {
      docs: metrics.docsExamined - before.docsExamined,
      keys: metrics.keysExamined - before.keysExamined,
    };
  }

  it('accepts a 10k-document unordered insert in one command', async () => {
    const pad = 'x'.repeat(1000);
    const res = await client
      .db(dbName)
      .collection('wide')
      .insertMany(
        Array.from({ length: 10_000 }, (_, i) => ({ i, pad })),
        { ordered: false },
      );
    expect(res.insertedCount).toBe(10_000);
    expect(await client.db(dbName).collection('wide').countDocuments()).toBe(10_000);
  });

  it('streams a full find and serves an _id range with hint+min/max from the index', async () => {
    const c = client.db(dbName).collection<{ _id: number; v: number }>('narrow');
    for (let s = 0; s < 40_000; s += 20_000)
      await c.insertMany(
        Array.from({ length: 20_000 }, (_, i) => ({ _id: s + i, v: i })),
        { ordered: false },
      );
    let n = 0;
    for await (const _ of c.find({}, { batchSize: 5000 })) n++;
    expect(n).toBe(40_000);

    const range = () =>
      c.find({}).hint({ _id: 1 }).min({ _id: 20_000 }).max({ _id: 20_200 }) as FindCursor<Document>;
    n = 0;
    for await (const _ of range()) n++;
    expect(n).toBe(200);
    // 0.5% of the collection: the read touches the range (plus one boundary key), not 40k.
    const work = await examined('narrow', range);
    expect(work.docs).toBeLessThanOrEqual(201);
    expect(work.keys).toBeLessThanOrEqual(202);
  });
});
