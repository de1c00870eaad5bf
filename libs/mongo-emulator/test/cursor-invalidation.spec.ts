import { type Binary, type Db, type Document, type MongoClient, MongoServerError } from 'mongodb';
import { TestCluster } from './helpers/cluster';

interface TestDoc {
  _id: number | string;
  [key: string]: unknown;
}

/**
 * Dropping or renaming a collection kills the query cursors over it: the next getMore fails
 * with 175 QueryPlanKilled, as in jstests/core/getmore_invalidated_cursors.js and mongod's
 * RequiresCollectionStage::doRestoreState ("collection dropped. UUID ..." /
 * "collection renamed from '...' to '...'. UUID ...").
 */
describe('cursor invalidation by drop and rename', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let db: Db;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect({ retryReads: false });
  });
  afterAll(() => cluster.close());
  beforeEach(async () => {
    db = client.db(cluster.dbName(`inval_${Math.random().toString(36).slice(2, 8)}`));
    await db
      .collection<TestDoc>('test')
      .insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: i, x: i })));
  });

  function uuidText(uuid: Binary): string {
    const h = Buffer.from(uuid.buffer).toString('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  async function uuidOf(name: string): Promise<Binary> {
    const [info] = await db.listCollections({ name }).toArray();
    return (info as Document).info.uuid as Binary;
  }

  async function openFind(): Promise<{ id: unknown }> {
    const res = await db.command({ find: 'test', batchSize: 10 });
    expect(res.cursor.firstBatch).toHaveLength(10);
    return { id: res.cursor.id };
  }

  async function getMoreError(id: unknown, coll = 'test'): Promise<MongoServerError> {
    const err = await db.command({ getMore: id, collection: coll }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MongoServerError);
    return err as MongoServerError;
  }

  it('drop: the next getMore fails with QueryPlanKilled and the cursor is gone', async () => {
    const uuid = await uuidOf('test');
    const { id } = await openFind();
    await db.collection<TestDoc>('test').drop();
    const err = await getMoreError(id);
    expect(err).toMatchObject({
      code: 175,
      codeName: 'QueryPlanKilled',
      message: `collection dropped. UUID ${uuidText(uuid)}`,
    });
    await expect(db.command({ getMore: id, collection: 'test' })).rejects.toMatchObject({
      code: 43,
    });
  });

  it('through the driver cursor API', async () => {
    const cursor = db.collection<TestDoc>('test').find({}, { batchSize: 5 });
    await cursor.next();
    await db.collection<TestDoc>('test').drop();
    const err = await cursor.toArray().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 175, codeName: 'QueryPlanKilled' });
    expect((err as Error).message).toContain('collection dropped');
  });

  it('drop and re-create under the same name still kills the cursor', async () => {
    const { id } = await openFind();
    await db.collection<TestDoc>('test').drop();
    await db.collection<TestDoc>('test').insertOne({ _id: 'new' });
    expect((await getMoreError(id)).message).toMatch(/^collection dropped\. UUID /);
  });

  it('rename within the database reports the new name', async () => {
    const uuid = await uuidOf('test');
    const { id } = await openFind();
    await client.db('admin').command({
      renameCollection: `${db.databaseName}.test`,
      to: `${db.databaseName}.test_rename`,
    });
    expect(await getMoreError(id)).toMatchObject({
      code: 175,
      message: `collection renamed from '${db.databaseName}.test' to '${db.databaseName}.test_rename'. UUID ${uuidText(uuid)}`,
    });
  });

  it('dropDatabase and cross-database renames report a drop', async () => {
    const first = await openFind();
    await db.dropDatabase();
    expect((await getMoreError(first.id)).message).toMatch(/^collection dropped/);

    await db
      .collection<TestDoc>('test')
      .insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: i })));
    const second = await openFind();
    const other = `${db.databaseName}_other`;
    await client
      .db('admin')
      .command({ renameCollection: `${db.databaseName}.test`, to: `${other}.test` });
    expect((await getMoreError(second.id)).message).toMatch(/^collection dropped/);
    await client.db(other).dropDatabase();
  });

  it('a rename onto the collection with dropTarget kills cursors over the dropped target', async () => {
    await db.collection<TestDoc>('source').insertOne({ _id: 1 });
    const { id } = await openFind();
    await client.db('admin').command({
      renameCollection: `${db.databaseName}.source`,
      to: `${db.databaseName}.test`,
      dropTarget: true,
    });
    expect((await getMoreError(id)).message).toMatch(/^collection dropped/);
  });

  it('other writes, index drops and other collections do not disturb the cursor', async () => {
    await db.collection<TestDoc>('unrelated').insertOne({ _id: 1 });
    const { id } = await openFind();
    await db.collection<TestDoc>('test').updateOne({ _id: 50 }, { $set: { x: -1 } });
    await db.collection<TestDoc>('test').createIndex({ x: 1 });
    await db.collection<TestDoc>('test').dropIndex('x_1');
    await db.collection<TestDoc>('unrelated').drop();
    const more = await db.command({ getMore: id, collection: 'test', batchSize: 1000 });
    expect(more.cursor.nextBatch).toHaveLength(90);
  });

  it('aggregate pushed down entirely into the query layer fails like find', async () => {
    const res = await db.command({
      aggregate: 'test',
      pipeline: [{ $match: { x: { $gte: 0 } } }, { $sort: { _id: 1 } }, { $project: { x: 1 } }],
      cursor: { batchSize: 10 },
    });
    await db.collection<TestDoc>('test').drop();
    expect(await getMoreError(res.cursor.id)).toMatchObject({ code: 175 });
  });

  it('aggregate with a $cursor stage keeps serving the input it already loaded', async () => {
    // 100 small documents fit in one 4 MiB $cursor batch: the input is exhausted before the drop.
    const small = await db.command({
      aggregate: 'test',
      pipeline: [{ $addFields: { y: 1 } }],
      cursor: { batchSize: 10 },
    });
    await db.collection<TestDoc>('test').drop();
    const rest = await db.command({
      getMore: small.cursor.id,
      collection: 'test',
      batchSize: 1000,
    });
    expect(rest.cursor.nextBatch).toHaveLength(90);

    // 12 documents of 1 MB need three loads: the getMore that needs the next load fails.
    const big = db.collection<TestDoc>('big');
    const pad = 'x'.repeat(1_000_000);
    for (let i = 0; i < 12; i++) await big.insertOne({ _id: i, pad });
    const first = await db.command({
      aggregate: 'big',
      pipeline: [{ $addFields: { y: 1 } }],
      cursor: { batchSize: 1 },
    });
    await big.drop();
    let received = first.cursor.firstBatch.length as number;
    let failure: unknown;
    for (;;) {
      try {
        const more = await db.command({
          getMore: first.cursor.id,
          collection: 'big',
          batchSize: 1,
        });
        received += more.cursor.nextBatch.length;
        if (String(more.cursor.id) === '0') break;
      } catch (err) {
        failure = err;
        break;
      }
    }
    expect(failure).toMatchObject({ code: 175, codeName: 'QueryPlanKilled' });
    expect(received).toBeGreaterThan(1);
    expect(received).toBeLessThan(12);
  });

  it('a find over a view is killed when the base collection goes', async () => {
    await db.createCollection('v', { viewOn: 'test', pipeline: [{ $match: { x: { $gte: 0 } } }] });
    const res = await db.command({ find: 'v', batchSize: 10 });
    await db.collection<TestDoc>('test').drop();
    expect(await getMoreError(res.cursor.id, 'v')).toMatchObject({ code: 175 });
  });

  it('change streams are not affected: they report the drop', async () => {
    const stream = db.collection<TestDoc>('test').watch([], { maxAwaitTimeMS: 200 });
    expect(await stream.tryNext()).toBeNull();
    await db.collection<TestDoc>('test').drop();
    const events: Document[] = [];
    for (let i = 0; i < 20 && events.length < 2; i++) {
      const e = await stream.tryNext();
      if (e) events.push(e);
    }
    expect(events.map((e) => e.operationType)).toEqual(['drop', 'invalidate']);
    await stream.close();
  });
});
