import { Binary, type Db, type Document, type MongoClient } from 'mongodb';
import { TestCluster } from './helpers/cluster';

describe('DDL through the official driver', () => {
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
    db = client.db(cluster.dbName(`ddl_${Math.random().toString(36).slice(2, 8)}`));
  });

  it('creates collections with options and lists them exactly', async () => {
    await db.createCollection('capped', { capped: true, size: 4096, max: 10 });
    await db.createCollection('plain');
    await db.createCollection('v', { viewOn: 'plain', pipeline: [{ $match: { a: 1 } }] });
    const infos = (await db.listCollections().toArray()) as Document[];
    const byName = Object.fromEntries(infos.map((i) => [i.name, i]));
    expect(byName.capped).toEqual({
      name: 'capped',
      type: 'collection',
      options: { capped: true, size: 4096, max: 10 },
      info: { readOnly: false, uuid: expect.any(Binary) },
      idIndex: { v: 2, key: { _id: 1 }, name: '_id_' },
    });
    expect(byName.capped.info.uuid.sub_type).toBe(4);
    expect(byName.v).toEqual({
      name: 'v',
      type: 'view',
      options: { viewOn: 'plain', pipeline: [{ $match: { a: 1 } }] },
      info: { readOnly: true },
    });
    expect(await db.listCollections({ type: 'view' }, { nameOnly: true }).toArray()).toEqual([
      { name: 'v', type: 'view' },
    ]);
    const dup = await db.command({ create: 'plain', capped: true, size: 1000 }).catch((e) => e);
    expect(dup.code).toBe(48);
    // Identical options: idempotent in 7.0.
    expect((await db.command({ create: 'plain' })).ok).toBe(1);
  });

  it('runs reads through views and refuses writes on them', async () => {
    await db.collection('base').insertMany([
      { a: 1, b: 1 },
      { a: 2, b: 2 },
      { a: 1, b: 3 },
    ]);
    await db.createCollection('ones', {
      viewOn: 'base',
      pipeline: [{ $match: { a: 1 } }, { $project: { _id: 0 } }],
    });
    const view = db.collection('ones');
    expect(await view.find({ b: { $gt: 1 } }).toArray()).toEqual([{ a: 1, b: 3 }]);
    expect(await view.countDocuments()).toBe(2);
    expect(await view.distinct('b')).toEqual([1, 3]);
    const err = await view.insertOne({ a: 1 }).catch((e) => e);
    expect(err.code).toBe(166);
  });

  it('creates, lists and drops indexes with mongod conflicts and errors', async () => {
    const c = db.collection('ix');
    await c.insertMany([
      { a: 1, b: 1 },
      { a: 1, b: 2 },
    ]);
    const reply = await db.command({
      createIndexes: 'ix',
      indexes: [{ key: { b: -1 }, name: 'b_-1', sparse: true }],
    });
    expect(reply).toEqual(
      expect.objectContaining({
        numIndexesBefore: 1,
        numIndexesAfter: 2,
        createdCollectionAutomatically: false,
        ok: 1,
      }),
    );
    const again = await db.command({
      createIndexes: 'ix',
      indexes: [{ key: { b: -1 }, name: 'b_-1', sparse: true }],
    });
    expect(again.note).toBe('all indexes already exist');
    expect(
      (
        await db
          .command({ createIndexes: 'ix', indexes: [{ key: { b: -1 }, name: 'other' }] })
          .catch((e) => e)
      ).code,
    ).toBe(85);
    expect(
      (
        await db
          .command({ createIndexes: 'ix', indexes: [{ key: { c: 1 }, name: 'b_-1' }] })
          .catch((e) => e)
      ).code,
    ).toBe(86);
    expect(
      (await db.command({ createIndexes: 'ix', indexes: [{ key: {}, name: 'x' }] }).catch((e) => e))
        .code,
    ).toBe(67);
    const uniq = await c.createIndex({ a: 1 }, { unique: true }).catch((e) => e);
    expect(uniq.code).toBe(11000);
    await c.createIndex(
      { at: 1 },
      { expireAfterSeconds: 3600, collation: { locale: 'en', strength: 2 } },
    );
    expect(await c.listIndexes().toArray()).toEqual([
      { v: 2, key: { _id: 1 }, name: '_id_' },
      { v: 2, key: { b: -1 }, name: 'b_-1', sparse: true },
      {
        v: 2,
        key: { at: 1 },
        name: 'at_1',
        expireAfterSeconds: 3600,
        collation: { locale: 'en', strength: 2 },
      },
    ]);
    expect((await c.dropIndex('nope').catch((e) => e)).code).toBe(27);
    await c.dropIndex('b_-1');
    await db.command({ dropIndexes: 'ix', index: { at: 1 } });
    expect((await c.listIndexes().toArray()).map((i) => i.name)).toEqual(['_id_']);
    expect(
      (
        await db
          .collection('missing')
          .listIndexes()
          .toArray()
          .catch((e) => e)
      ).code,
    ).toBe(26);
  });

  it('modifies collections and indexes with collMod', async () => {
    const c = db.collection('mod');
    await c.createIndex({ a: 1 });
    const hidden = await db.command({
      collMod: 'mod',
      index: { keyPattern: { a: 1 }, hidden: true },
    });
    expect(hidden).toEqual(expect.objectContaining({ hidden_old: false, hidden_new: true, ok: 1 }));
    expect((await c.listIndexes().toArray())[1]).toEqual({
      v: 2,
      key: { a: 1 },
      name: 'a_1',
      hidden: true,
    });
    await db.command({
      collMod: 'mod',
      validator: { x: { $exists: true } },
      validationAction: 'error',
    });
    expect((await c.insertOne({ y: 1 }).catch((e) => e)).code).toBe(121);
    await db.command({ collMod: 'mod', changeStreamPreAndPostImages: { enabled: true } });
    const [info] = (await db.listCollections({ name: 'mod' }).toArray()) as Document[];
    expect(info.options).toEqual({
      validator: { x: { $exists: true } },
      validationAction: 'error',
      changeStreamPreAndPostImages: { enabled: true },
    });
    expect((await db.command({ collMod: 'nope', validator: {} }).catch((e) => e)).code).toBe(26);
  });

  it('renames collections within and across databases, keeping documents and indexes', async () => {
    const other = client.db(`${db.databaseName}_b`);
    await db.collection('src').insertMany([
      { _id: 1, k: 'a' },
      { _id: 2, k: 'b' },
    ] as never[]);
    await db.collection('src').createIndex({ k: 1 }, { unique: true });
    await db.collection('src').rename('dst');
    expect(await db.collection('dst').countDocuments()).toBe(2);
    await client
      .db('admin')
      .command({ renameCollection: `${db.databaseName}.dst`, to: `${other.databaseName}.moved` });
    expect(await other.collection('moved').find().toArray()).toEqual([
      { _id: 1, k: 'a' },
      { _id: 2, k: 'b' },
    ]);
    expect((await other.collection('moved').listIndexes().toArray()).map((i) => i.name)).toEqual([
      '_id_',
      'k_1',
    ]);
    const admin = client.db('admin');
    expect(
      (
        await admin
          .command({ renameCollection: `${db.databaseName}.none`, to: `${db.databaseName}.x` })
          .catch((e) => e)
      ).code,
    ).toBe(26);
    await db.collection('t1').insertOne({});
    await db.collection('t2').insertOne({});
    expect(
      (
        await admin
          .command({ renameCollection: `${db.databaseName}.t1`, to: `${db.databaseName}.t2` })
          .catch((e) => e)
      ).code,
    ).toBe(48);
    await admin.command({
      renameCollection: `${db.databaseName}.t1`,
      to: `${db.databaseName}.t2`,
      dropTarget: true,
    });
    expect((await db.listCollections().toArray()).map((c) => c.name).sort()).toEqual(['t2']);
  });

  it('drops collections (ok when missing, as 7.0) and databases, and reports stats', async () => {
    const c = db.collection('stats');
    await c.insertMany(Array.from({ length: 100 }, (_, i) => ({ i, pad: 'x'.repeat(100) })));
    const stats = await db.command({ collStats: 'stats' });
    expect(stats).toEqual(
      expect.objectContaining({
        ns: `${db.databaseName}.stats`,
        count: 100,
        nindexes: 1,
        capped: false,
        ok: 1,
      }),
    );
    expect(stats.size).toBeGreaterThan(100 * 100);
    expect(stats.avgObjSize).toBe(Math.trunc(stats.size / 100));
    const [viaAgg] = await c.aggregate([{ $collStats: { storageStats: {} } }]).toArray();
    expect(viaAgg!.storageStats.count).toBe(100);
    const dbs = await client.db('admin').admin().listDatabases();
    const mine = dbs.databases.find((d) => d.name === db.databaseName)!;
    expect(mine.sizeOnDisk).toBeGreaterThan(0);
    expect(dbs.databases.map((d) => d.name)).toEqual(
      expect.arrayContaining(['admin', 'config', 'local']),
    );
    expect((await db.command({ dbStats: 1 })).objects).toBe(100);
    expect(await db.collection('never').drop()).toBe(true);
    expect(await c.drop()).toBe(true);
    await db.collection('again').insertOne({});
    await db.dropDatabase();
    expect(
      (await client.db('admin').admin().listDatabases()).databases.map((d) => d.name),
    ).not.toContain(db.databaseName);
  });
});
