import { Binary, type Db, type Document, type MongoClient, MongoServerError, UUID } from 'mongodb';
import { TestCluster } from './helpers/cluster';

interface TestDoc {
  _id: number | string;
  [key: string]: unknown;
}

/**
 * The `collectionUUID` command option (MongoDB 6.0+), checked against mongod's
 * checkCollectionUUIDMismatch and CollectionUUIDMismatchInfo (jstests/core/collection_uuid_*.js).
 */
describe('collectionUUID', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let db: Db;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect({ retryWrites: false, retryReads: false });
  });
  afterAll(() => cluster.close());
  beforeEach(async () => {
    db = client.db(cluster.dbName(`uuid_${Math.random().toString(36).slice(2, 8)}`));
    await db.collection<TestDoc>('coll').insertOne({ _id: 0 });
  });

  async function uuidOf(d: Db, name: string): Promise<Binary> {
    const [info] = await d.listCollections({ name }).toArray();
    return (info as Document).info.uuid as Binary;
  }

  async function failure(d: Db, cmd: Document): Promise<MongoServerError> {
    const err = await d.command(cmd).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MongoServerError);
    return err as MongoServerError;
  }

  function expectMismatch(
    err: Document,
    dbName: string,
    uuid: Binary,
    expected: string,
    actual: string | null,
  ): void {
    expect(err.code).toBe(361);
    expect(err.codeName ?? 'CollectionUUIDMismatch').toBe('CollectionUUIDMismatch');
    expect(err.errmsg ?? err.message).toBe('Collection UUID does not match that specified');
    expect(err.db).toBe(dbName);
    expect(Buffer.from((err.collectionUUID as Binary).buffer)).toEqual(Buffer.from(uuid.buffer));
    expect(err.expectedCollection).toBe(expected);
    expect(err.actualCollection).toBe(actual);
  }

  it('find: succeeds with the right UUID and fails with 361 otherwise', async () => {
    const uuid = await uuidOf(db, 'coll');
    const ok = await db.command({ find: 'coll', collectionUUID: uuid });
    expect(ok.cursor.firstBatch).toEqual([{ _id: 0 }]);

    const unknown = new UUID();
    expectMismatch(
      await failure(db, { find: 'coll', collectionUUID: unknown }),
      db.databaseName,
      unknown,
      'coll',
      null,
    );

    await db.collection<TestDoc>('coll_2').insertOne({ _id: 1 });
    expectMismatch(
      await failure(db, { find: 'coll_2', collectionUUID: uuid }),
      db.databaseName,
      uuid,
      'coll_2',
      'coll',
    );

    // The named collection need not exist; a view never matches.
    expectMismatch(
      await failure(db, { find: 'missing', collectionUUID: uuid }),
      db.databaseName,
      uuid,
      'missing',
      'coll',
    );
    await db.createCollection('view', { viewOn: 'coll', pipeline: [] });
    expectMismatch(
      await failure(db, { find: 'view', collectionUUID: uuid }),
      db.databaseName,
      uuid,
      'view',
      'coll',
    );

    // actualCollection only names collections of the same database.
    const other = client.db(`${db.databaseName}_2`);
    await other.collection<TestDoc>('coll_3').insertOne({ _id: 2 });
    expectMismatch(
      await failure(other, { find: 'coll_3', collectionUUID: uuid }),
      other.databaseName,
      uuid,
      'coll_3',
      null,
    );
    await other.dropDatabase();
  });

  it('aggregate: checks the UUID of the aggregated collection', async () => {
    const uuid = await uuidOf(db, 'coll');
    const ok = await db.command({
      aggregate: 'coll',
      pipeline: [{ $match: {} }],
      cursor: {},
      collectionUUID: uuid,
    });
    expect(ok.cursor.firstBatch).toEqual([{ _id: 0 }]);
    await db.collection<TestDoc>('other').insertOne({ _id: 1 });
    expectMismatch(
      await failure(db, { aggregate: 'other', pipeline: [], cursor: {}, collectionUUID: uuid }),
      db.databaseName,
      uuid,
      'other',
      'coll',
    );
  });

  it('insert, update and delete report the mismatch as a write error and write nothing', async () => {
    const uuid = await uuidOf(db, 'coll');
    const good = await db.command({
      insert: 'coll',
      documents: [{ _id: 1 }],
      collectionUUID: uuid,
    });
    expect(good).toMatchObject({ n: 1, ok: 1 });

    const ins = await db.command({
      insert: 'fresh',
      documents: [{ _id: 1 }, { _id: 2 }],
      ordered: false,
      collectionUUID: uuid,
    });
    expect(ins.n).toBe(0);
    expect(ins.writeErrors).toHaveLength(2);
    expect(ins.writeErrors.map((e: Document) => e.index)).toEqual([0, 1]);
    expectMismatch(ins.writeErrors[0], db.databaseName, uuid, 'fresh', 'coll');
    // The collection was not created implicitly.
    expect(await db.listCollections({ name: 'fresh' }).toArray()).toEqual([]);

    const ordered = await db.command({
      insert: 'fresh',
      documents: [{ _id: 1 }, { _id: 2 }],
      collectionUUID: new UUID(),
    });
    expect(ordered.writeErrors).toHaveLength(1);

    const upd = await db.command({
      update: 'fresh',
      updates: [{ q: { _id: 1 }, u: { $set: { a: 1 } }, upsert: true }],
      collectionUUID: uuid,
    });
    expect(upd).toMatchObject({ n: 0, nModified: 0 });
    expectMismatch(upd.writeErrors[0], db.databaseName, uuid, 'fresh', 'coll');
    expect(await db.listCollections({ name: 'fresh' }).toArray()).toEqual([]);

    const del = await db.command({
      delete: 'coll',
      deletes: [{ q: {}, limit: 0 }],
      collectionUUID: new UUID(),
    });
    expect(del.n).toBe(0);
    expect(del.writeErrors[0].code).toBe(361);
    expect(await db.collection<TestDoc>('coll').countDocuments()).toBe(2);

    const delOk = await db.command({
      delete: 'coll',
      deletes: [{ q: { _id: 1 }, limit: 1 }],
      collectionUUID: uuid,
    });
    expect(delOk).toMatchObject({ n: 1, ok: 1 });
  });

  it('count and listIndexes reject collectionUUID as an unknown field, like their strict IDL', async () => {
    const uuid = await uuidOf(db, 'coll');
    const count = await failure(db, { count: 'coll', collectionUUID: uuid });
    expect(count).toMatchObject({
      code: 40415,
      message: "BSON field 'count.collectionUUID' is an unknown field.",
    });
    const list = await failure(db, { listIndexes: 'coll', collectionUUID: uuid });
    expect(list).toMatchObject({
      code: 40415,
      message: "BSON field 'listIndexes.collectionUUID' is an unknown field.",
    });
  });

  it('validates the type like the IDL uuid type', async () => {
    await expect(db.command({ find: 'coll', collectionUUID: 'abc' })).rejects.toMatchObject({
      code: 14,
      message:
        "BSON field 'find.collectionUUID' is the wrong type 'string', expected type 'binData'",
    });
    await expect(
      db.command({ find: 'coll', collectionUUID: new Binary(Buffer.alloc(16), 0) }),
    ).rejects.toMatchObject({
      code: 14,
      message:
        "BSON field 'find.collectionUUID' is the wrong binData type 'general', expected type 'UUID'",
    });
    await expect(
      db.command({ find: 'coll', collectionUUID: new Binary(Buffer.alloc(4), 4) }),
    ).rejects.toMatchObject({ code: 207, codeName: 'InvalidUUID' });
  });
});
