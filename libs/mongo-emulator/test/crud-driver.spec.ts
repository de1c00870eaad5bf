import {
  Double,
  Int32,
  Long,
  ObjectId,
  type Db,
  type MongoClient,
  MongoServerError,
} from 'mongodb';
import { TestCluster } from './helpers/cluster';

const exact = { promoteValues: false, bsonRegExp: true } as const;

describe('CRUD through the official driver', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let db: Db;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect();
  });
  afterAll(async () => {
    await cluster.close();
  });
  beforeEach(async () => {
    db = client.db(cluster.dbName(`crud_${Math.random().toString(36).slice(2, 8)}`));
  });

  it('inserts with generated ObjectIds and finds with filter/sort/skip/limit/projection', async () => {
    const c = db.collection('items');
    const res = await c.insertMany([{ a: 3 }, { a: 1 }, { a: 2 }]);
    expect(res.insertedCount).toBe(3);
    expect(res.insertedIds[0]).toBeInstanceOf(ObjectId);
    const docs = await c
      .find({ a: { $gte: 2 } }, { projection: { _id: 0 } })
      .sort({ a: -1 })
      .toArray();
    expect(docs).toEqual([{ a: 3 }, { a: 2 }]);
    expect(await c.find({}).sort({ a: 1 }).skip(1).limit(1).toArray()).toEqual([
      expect.objectContaining({ a: 2 }),
    ]);
    expect(await c.countDocuments({ a: { $gt: 1 } })).toBe(2);
    expect(await c.estimatedDocumentCount()).toBe(3);
  });

  it('streams large results across getMore batches in _id order', async () => {
    const c = db.collection<{ _id: number; v: number }>('big');
    const docs = Array.from({ length: 5000 }, (_, i) => ({ _id: i, v: i % 7 }));
    await c.insertMany(docs, { ordered: false });
    const seen: number[] = [];
    for await (const d of c
      .find({ _id: { $gte: 1000, $lt: 3500 } }, { batchSize: 300 })
      .sort({ _id: 1 }))
      seen.push(d._id);
    expect(seen).toHaveLength(2500);
    expect(seen[0]).toBe(1000);
    expect(seen[2499]).toBe(3499);
    expect(await cluster.openCursors(client, `${db.databaseName}.big`)).toBe(0);
  });

  it('reports ordered and unordered duplicate key write errors like mongod', async () => {
    const c = db.collection('dups');
    await c.createIndex({ email: 1 }, { unique: true });
    await c.insertOne({ _id: 1 as never, email: 'a@x' });
    const err = await c.insertOne({ _id: 2 as never, email: 'a@x' }).catch((e) => e);
    expect(err).toBeInstanceOf(MongoServerError);
    expect(err.code).toBe(11000);
    expect(err.message).toBe(
      `E11000 duplicate key error collection: ${db.databaseName}.dups index: email_1 dup key: { email: "a@x" }`,
    );
    expect(err.keyPattern).toEqual({ email: 1 });
    expect(err.keyValue).toEqual({ email: 'a@x' });
    const bulk = await c
      .insertMany(
        [
          { _id: 3, email: 'b' },
          { _id: 1, email: 'c' },
          { _id: 4, email: 'd' },
        ] as never[],
        { ordered: false },
      )
      .catch((e) => e);
    expect(bulk.code).toBe(11000);
    expect(bulk.result.insertedCount).toBe(2);
    expect(bulk.writeErrors[0].index).toBe(1);
  });

  it('updates with operators, upserts, replacements and arrayFilters', async () => {
    const c = db.collection('upd');
    await c.insertMany([
      { _id: 1, n: 1, arr: [1, 5, 9] },
      { _id: 2, n: 2, arr: [2] },
    ] as never[]);
    const r1 = await c.updateMany({ n: { $gte: 1 } }, { $inc: { n: 10 } });
    expect([r1.matchedCount, r1.modifiedCount]).toEqual([2, 2]);
    const r2 = await c.updateOne({ _id: 9 as never }, { $set: { x: 1 } }, { upsert: true });
    expect(r2.upsertedId).toBe(9);
    const r3 = await c.updateOne(
      { _id: 1 as never },
      { $set: { 'arr.$[e]': 0 } },
      { arrayFilters: [{ e: { $gt: 4 } }] },
    );
    expect(r3.modifiedCount).toBe(1);
    expect((await c.findOne({ _id: 1 as never }))!.arr).toEqual([1, 0, 0]);
    await c.replaceOne({ _id: 2 as never }, { replaced: true });
    expect(await c.findOne({ _id: 2 as never })).toEqual({ _id: 2, replaced: true });
    const noop = await c.updateOne({ _id: 2 as never }, { $set: { replaced: true } });
    expect([noop.matchedCount, noop.modifiedCount]).toEqual([1, 0]);
    await c.updateOne({ _id: 2 as never }, [{ $set: { doubled: { $multiply: [2, 21] } } }]);
    expect((await c.findOne({ _id: 2 as never }))!.doubled).toBe(42);
  });

  it('deletes and findAndModify', async () => {
    const c = db.collection('fam');
    await c.insertMany([
      { _id: 1, v: 1 },
      { _id: 2, v: 2 },
      { _id: 3, v: 3 },
    ] as never[]);
    const before = await c.findOneAndUpdate(
      { v: { $gte: 2 } },
      { $set: { v: 20 } },
      { sort: { v: -1 } },
    );
    expect(before).toEqual({ _id: 3, v: 3 });
    const after = await c.findOneAndUpdate(
      { _id: 2 as never },
      { $inc: { v: 1 } },
      { returnDocument: 'after', projection: { _id: 0 } },
    );
    expect(after).toEqual({ v: 3 });
    const upserted = await c.findOneAndUpdate(
      { _id: 7 as never },
      { $set: { v: 7 } },
      { upsert: true, returnDocument: 'after', includeResultMetadata: true },
    );
    expect(upserted.lastErrorObject).toEqual({ n: 1, updatedExisting: false, upserted: 7 });
    expect(await c.findOneAndDelete({ _id: 1 as never })).toEqual({ _id: 1, v: 1 });
    expect((await c.deleteMany({ v: { $gte: 3 } })).deletedCount).toBe(3);
    expect(await c.countDocuments()).toBe(0);
  });

  it('keeps BSON types exact and answers distinct with flattened arrays', async () => {
    const c = db.collection('types');
    await c.insertMany([
      { _id: 1, v: new Int32(1), tags: ['a', 'b'] },
      { _id: 2, v: new Double(1.5), tags: ['b', 'c'] },
      { _id: 3, v: Long.fromNumber(7), tags: 'd' },
    ] as never[]);
    const docs = await c.find({}, exact).sort({ _id: 1 }).toArray();
    expect(docs[0].v).toBeInstanceOf(Int32);
    expect(docs[1].v).toBeInstanceOf(Double);
    expect(docs[2].v).toBeInstanceOf(Long);
    expect((await c.distinct('tags')).sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  it('runs aggregations including $match pushdown, $group and $out', async () => {
    const c = db.collection('agg');
    await c.insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: i, g: i % 5 })) as never[]);
    const groups = await c
      .aggregate([
        { $match: { _id: { $lt: 20 } } },
        { $group: { _id: '$g', n: { $sum: 1 } } },
        { $sort: { _id: 1 } },
      ])
      .toArray();
    expect(groups).toEqual([0, 1, 2, 3, 4].map((g) => ({ _id: g, n: 4 })));
    await c.aggregate([{ $match: { g: 0 } }, { $out: 'agg_out' }]).toArray();
    expect(await db.collection('agg_out').countDocuments()).toBe(10);
  });

  it('reads a view in $unionWith and $lookup through its stages (a view on a view too), as mongod does', async () => {
    await db.collection<{ _id: number; k: string; n: number }>('base').insertMany([
      { _id: 1, k: 'a', n: 1 },
      { _id: 2, k: 'b', n: 2 },
      { _id: 3, k: 'a', n: 3 },
    ]);
    await db.collection<{ _id: string }>('other').insertOne({ _id: 'o' });
    await db.createCollection('only_a', { viewOn: 'base', pipeline: [{ $match: { k: 'a' } }] });
    await db.createCollection('only_a_big', {
      viewOn: 'only_a',
      pipeline: [{ $match: { n: { $gt: 1 } } }, { $project: { k: 0 } }],
    });
    const union = (coll: string) =>
      db
        .collection('other')
        .aggregate([{ $unionWith: { coll, pipeline: [{ $addFields: { from: coll } }] } }])
        .toArray();
    expect(await union('only_a')).toEqual([
      { _id: 'o' },
      { _id: 1, k: 'a', n: 1, from: 'only_a' },
      { _id: 3, k: 'a', n: 3, from: 'only_a' },
    ]);
    expect(await union('only_a_big')).toEqual([{ _id: 'o' }, { _id: 3, n: 3, from: 'only_a_big' }]);
    // $lookup from a view too (mongod 3.4+).
    const joined = await db
      .collection('other')
      .aggregate([
        { $lookup: { from: 'only_a_big', pipeline: [{ $sort: { _id: 1 } }], as: 'big' } },
        { $lookup: { from: 'only_a', localField: '_id', foreignField: 'k', as: 'none' } },
      ])
      .toArray();
    expect(joined).toEqual([{ _id: 'o', big: [{ _id: 3, n: 3 }], none: [] }]);
    // A plain name, a missing collection: as before.
    expect(
      await db
        .collection('other')
        .aggregate([{ $unionWith: 'missing' }])
        .toArray(),
    ).toEqual([{ _id: 'o' }]);
  });

  it('rejects wrong argument types and bad hints with mongod errors', async () => {
    const e1 = await db.command({ insert: 'x', documents: 'nope' }).catch((e) => e);
    expect(e1.code).toBe(14);
    expect(e1.message).toBe(
      "BSON field 'insert.documents' is the wrong type 'string', expected type 'array'",
    );
    await db.collection('h').insertOne({ a: 1 });
    const e2 = await db
      .collection('h')
      .find({}, { hint: 'missing_1' })
      .toArray()
      .catch((e) => e);
    expect(e2.code).toBe(2);
    expect(e2.message).toBe('hint provided does not correspond to an existing index');
    const e3 = await db.command({ find: 'bad$name' }).catch((e) => e);
    expect(e3.code).toBe(73);
  });

  it('validates documents against the collection validator', async () => {
    await db.createCollection('valid', { validator: { a: { $type: 'int' } } });
    const c = db.collection('valid');
    await c.insertOne({ a: 1 });
    const err = await c.insertOne({ a: 'x' }).catch((e) => e);
    expect(err.code).toBe(121);
    expect(err.errInfo).toEqual(expect.objectContaining({ failingDocumentId: expect.anything() }));
  });
});
