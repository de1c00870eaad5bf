import { Timestamp, type Db, type Document, type MongoClient } from 'mongodb';
import { TestCluster } from '../helpers/cluster';

/** Documents with any `_id` type (the driver's default schema wants ObjectId). */
type Loose = any;

async function errorOf(p: Promise<unknown>): Promise<Document> {
  return p.then(
    () => ({ message: 'no error' }),
    (e: Document) => e,
  );
}

describe('conformance: DDL and change events through the driver', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let db: Db;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect();
    db = client.db(cluster.dbName('conf_ddl'));
  });
  afterAll(() => cluster.close());

  it('converts an index to unique with prepareUnique then unique (MongoDB 6.0+)', async () => {
    const c = db.collection<Loose>('apples');
    await c.insertMany([
      { _id: 1, type: 'Delicious' },
      { _id: 2, type: 'Macintosh' },
      { _id: 3, type: 'Delicious' },
    ]);
    await c.createIndex({ type: 1 });
    const early = await errorOf(
      db.command({ collMod: 'apples', index: { keyPattern: { type: 1 }, unique: true } }),
    );
    expect([early.code, early.codeName]).toEqual([72, 'InvalidOptions']);
    const prepared = await db.command({
      collMod: 'apples',
      index: { keyPattern: { type: 1 }, prepareUnique: true },
    });
    expect(prepared).toMatchObject({ prepareUnique_old: false, prepareUnique_new: true, ok: 1 });
    // A prepared index rejects new duplicates...
    const dup = await errorOf(c.insertOne({ _id: 4, type: 'Macintosh' }));
    expect([dup.code, dup.message]).toEqual([
      11000,
      `E11000 duplicate key error collection: ${db.databaseName}.apples index: type_1 dup key: { type: "Macintosh" }`,
    ]);
    expect((await errorOf(c.updateOne({ _id: 2 }, { $set: { type: 'Delicious' } }))).code).toBe(
      11000,
    );
    // ...but keeps the ones it has, and documents holding them can still be updated.
    await c.updateOne({ _id: 3 }, { $set: { note: 'still a duplicate' } });
    for (const dryRun of [true, false]) {
      const conflict = await errorOf(
        db.command({ collMod: 'apples', index: { keyPattern: { type: 1 }, unique: true }, dryRun }),
      );
      expect(conflict).toMatchObject({
        code: 359,
        codeName: 'CannotConvertIndexToUnique',
        message:
          'Cannot convert the index to unique. Please resolve conflicting documents before running collMod again.',
      });
      expect(conflict.errorResponse.violations).toEqual([{ ids: [1, 3] }]);
    }
    await c.deleteOne({ _id: 3 });
    const done = await db.command({ collMod: 'apples', index: { name: 'type_1', unique: true } });
    expect(done).toMatchObject({ unique_new: true, ok: 1 });
    const idx = (await c.listIndexes().toArray()).find((i) => i.name === 'type_1');
    expect(idx).toMatchObject({ key: { type: 1 }, unique: true });
  });

  it('reports lost history for startAtOperationTime before the node started (286)', async () => {
    const cs = db
      .collection('h')
      .watch([], { startAtOperationTime: new Timestamp({ t: 1, i: 1 }) });
    const err = await errorOf(cs.tryNext());
    await cs.close();
    expect([err.code, err.codeName]).toEqual([286, 'ChangeStreamHistoryLost']);
    expect(err.errorLabels).toContain('NonResumableChangeStreamError');
  });

  it('describes $addToSet as the whole array and $push as appended elements (7.0)', async () => {
    const c = db.collection<Loose>('sets');
    await c.insertOne({ _id: 1, s: [1, 2] });
    const cs = c.watch();
    await cs.tryNext();
    await c.updateOne({ _id: 1 }, { $addToSet: { s: { $each: [3, 4] } } });
    await c.updateOne({ _id: 1 }, { $push: { s: 5 } } as Document);
    const a = await cs.next();
    const p = await cs.next();
    await cs.close();
    expect(a.operationType === 'update' && a.updateDescription).toEqual({
      updatedFields: { s: [1, 2, 3, 4] },
      removedFields: [],
      truncatedArrays: [],
    });
    expect(p.operationType === 'update' && p.updateDescription).toEqual({
      updatedFields: { 's.4': 5 },
      removedFields: [],
      truncatedArrays: [],
    });
  });

  it('adds disambiguatedPaths for numeric field names and dotted names (6.1+)', async () => {
    const c = db.collection<Loose>('paths');
    await c.insertOne({ _id: 1, arr: [{ x: 1 }], o: { '0': { y: 1 }, k: 1 }, '1': 1 });
    const cs = c.watch([], { showExpandedEvents: true });
    await cs.tryNext();
    await c.updateOne(
      { _id: 1 },
      { $set: { 'arr.0.x': 2, 'o.0.y': 3, '1': 2 }, $unset: { 'o.k': 1 } },
    );
    await c.updateOne({ _id: 1 }, [
      { $replaceWith: { $setField: { field: 'a.b', input: '$$ROOT', value: 5 } } },
    ]);
    const first = await cs.next();
    const second = await cs.next();
    await cs.close();
    expect(first.operationType === 'update' && first.updateDescription).toEqual({
      updatedFields: { 'arr.0.x': 2, 'o.0.y': 3, '1': 2 },
      removedFields: ['o.k'],
      truncatedArrays: [],
      // An array index alone, or a numeric top-level name, is not ambiguous.
      disambiguatedPaths: { 'o.0.y': ['o', '0', 'y'] },
    });
    expect(second.operationType === 'update' && second.updateDescription).toEqual({
      updatedFields: { 'a.b': 5 },
      removedFields: [],
      truncatedArrays: [],
      disambiguatedPaths: { 'a.b': ['a.b'] },
    });
  });

  it('serves views: find, aggregate, count, listCollections type view, writes refused (166)', async () => {
    await db.collection('base').insertMany([{ a: 1 }, { a: 2 }, { a: 1 }]);
    await db.command({ create: 'ones', viewOn: 'base', pipeline: [{ $match: { a: 1 } }] });
    const v = db.collection('ones');
    expect(await v.countDocuments()).toBe(2);
    expect(await v.find({}, { projection: { _id: 0 } }).toArray()).toEqual([{ a: 1 }, { a: 1 }]);
    expect(await v.aggregate([{ $count: 'n' }]).toArray()).toEqual([{ n: 2 }]);
    const [info] = await db.listCollections({ name: 'ones' }).toArray();
    expect(info).toEqual({
      name: 'ones',
      type: 'view',
      options: { viewOn: 'base', pipeline: [{ $match: { a: 1 } }] },
      info: { readOnly: true },
    });
    const err = await errorOf(v.insertOne({ a: 1 }));
    expect([err.code, err.codeName, err.message]).toEqual([
      166,
      'CommandNotSupportedOnView',
      `Namespace ${db.databaseName}.ones is a view, not a collection`,
    ]);
  });
});
