import { type Db, type MongoClient, MongoServerError } from 'mongodb';
import { TestCluster } from './helpers/cluster';

/**
 * `$sample`, as mongod runs it: first in the pipeline, asking for under 5 % of a collection of
 * more than 100 documents, a pseudo-random cursor (no scan: what makes partition planning of a
 * huge collection cheap); otherwise a scan and a random choice. Either way: `size` distinct
 * documents of the collection, the rest of the pipeline applied to them.
 */
describe('$sample through the official driver', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let db: Db;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect();
    db = client.db(cluster.dbName('sample'));
    await db
      .collection<{ _id: number; v: number }>('big')
      .insertMany(Array.from({ length: 4_000 }, (_, i) => ({ _id: i, v: i % 7 })));
    // Gaps: a random cursor still finds distinct, existing documents.
    await db.collection<{ _id: number }>('big').deleteMany({ _id: { $gte: 1_000, $lt: 2_000 } });
    await db
      .collection<{ _id: number }>('small')
      .insertMany(Array.from({ length: 80 }, (_, i) => ({ _id: i })));
  });
  afterAll(async () => {
    await cluster.close();
  });

  const sampled = async (coll: string, size: number): Promise<number[]> =>
    (
      await db
        .collection(coll)
        .aggregate<{ _id: number }>([
          { $sample: { size } },
          { $project: { _id: 1 } },
          { $sort: { _id: 1 } },
        ])
        .toArray()
    ).map((d) => d._id);

  it.each([
    ['a random cursor (40 of 3,000)', 'big', 40],
    ['a scan (1,000 of 3,000: over 5 %)', 'big', 1_000],
    ['a scan (10 of a collection of 80)', 'small', 10],
  ])('%s: size distinct documents, the later stages applied', async (_how, coll, size) => {
    const ids = await sampled(coll, size);
    expect(ids).toHaveLength(size);
    expect(new Set(ids).size).toBe(size);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    for (const id of ids) {
      expect(id).toBeGreaterThanOrEqual(0);
      expect(id >= 1_000 && id < 2_000).toBe(false);
    }
  });

  it('asks for more than the collection holds: every document once', async () => {
    expect(await sampled('small', 500)).toEqual(Array.from({ length: 80 }, (_, i) => i));
  });

  it('a bad specification is refused with the server codes', async () => {
    const codeOf = (spec: unknown) =>
      db
        .collection('big')
        .aggregate([{ $sample: spec }])
        .toArray()
        .then(
          () => 0,
          (e: unknown) => (e instanceof MongoServerError ? e.code : -1),
        );
    expect(await codeOf({ size: -1 })).toBe(28747);
    expect(await codeOf({ size: 'x' })).toBe(28746);
    expect(await codeOf({})).toBe(28749);
    expect(await codeOf({ size: 1, other: 1 })).toBe(28748);
  });
});
