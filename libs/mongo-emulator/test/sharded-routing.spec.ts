import { MaxKey, MinKey, MongoClient, MongoServerError, Timestamp } from 'mongodb';
import { startShardedCluster, type EmulatedShardedCluster } from '../src';
import { describeEmulatorOnly } from './helpers/real-server';

const suite = describeEmulatorOnly(
  'an emulated sharded cluster; no real sharded cluster is wired into these specs',
);

suite('sharded topology: mongos routing of unsharded collections', () => {
  let cluster: EmulatedShardedCluster;
  let client: MongoClient;
  const direct: MongoClient[] = [];

  beforeAll(async () => {
    cluster = await startShardedCluster({ name: 'c0', shards: 3, mongos: 2 });
    client = new MongoClient(cluster.uri, { serverSelectionTimeoutMS: 5000 });
    await client.connect();
    for (const shard of cluster.shards) {
      const c = new MongoClient(shard.uri, { serverSelectionTimeoutMS: 5000 });
      await c.connect();
      direct.push(c);
    }
  });

  afterAll(async () => {
    await client?.close();
    await Promise.all(direct.map((c) => c.close()));
    await cluster?.stop();
  });

  it('lists both routers in the uri and is seen as a Sharded topology', async () => {
    expect(cluster.uri).toMatch(/^mongodb:\/\/127\.0\.0\.1:\d+,127\.0\.0\.1:\d+\/$/);
    const hello = await client.db('admin').command({ hello: 1 });
    expect(hello.msg).toBe('isdbgrid');
    expect(hello.isWritablePrimary).toBe(true);
    expect(hello.setName).toBeUndefined();
    expect(hello.hosts).toBeUndefined();
    expect(hello.maxWireVersion).toBe(21);
    // The driver's SDAM classifies a hello with msg "isdbgrid" as a Mongos server.
    const topology = (
      client as unknown as {
        topology: { description: { type: string; servers: Map<string, { type: string }> } };
      }
    ).topology.description;
    expect(topology.type).toBe('Sharded');
    expect([...topology.servers.values()].map((s) => s.type)).toEqual(['Mongos', 'Mongos']);
  });

  it('listShards and config.shards describe every shard', async () => {
    const res = await client.db('admin').command({ listShards: 1 });
    expect(res.shards).toHaveLength(3);
    res.shards.forEach((s: Record<string, unknown>, i: number) => {
      expect(s._id).toBe(`c0-shard${i}`);
      expect(s.host).toBe(`c0-shard${i}/${cluster.shards[i].replicaSet.node.host}`);
      expect(s.state).toBe(1);
      expect(s.topologyTime).toBeInstanceOf(Timestamp);
    });
    const docs = await client.db('config').collection('shards').find().sort({ _id: -1 }).toArray();
    expect(docs.map((d) => d._id)).toEqual(['c0-shard2', 'c0-shard1', 'c0-shard0']);
    await expect(client.db('test').command({ listShards: 1 })).rejects.toMatchObject({
      code: 13,
    });
  });

  it('gives each new database a round-robin primary shard and keeps its data there', async () => {
    const names = ['rr_a', 'rr_b', 'rr_c', 'rr_d'];
    for (const name of names)
      await client
        .db(name)
        .collection<{ _id: number; db: string }>('c')
        .insertOne({ _id: 1, db: name });
    const entries = await client
      .db('config')
      .collection<{ _id: string; primary: string; version: object }>('databases')
      .find({ _id: { $in: names } })
      .sort({ _id: 1 })
      .toArray();
    const primaries = entries.map((e) => e.primary as string);
    expect(new Set(primaries.slice(0, 3)).size).toBe(3);
    expect(primaries[3]).toBe(primaries[0]);
    for (const e of entries) {
      expect(Object.keys(e.version).sort()).toEqual(['lastMod', 'timestamp', 'uuid']);
      const shardIndex = Number(String(e.primary).replace('c0-shard', ''));
      // The document is on the primary shard, and only there.
      direct.forEach((d, i) => {
        expect(
          d
            .db(e._id as unknown as string)
            .collection('c')
            .countDocuments(),
        ).resolves.toBe(i === shardIndex ? 1 : 0);
      });
      expect(
        await direct[shardIndex]
          .db(e._id as unknown as string)
          .collection('c')
          .findOne(),
      ).toEqual({ _id: 1, db: e._id });
    }
  });

  it('routes CRUD, cursors, aggregate, count, distinct and DDL to the primary shard', async () => {
    const db = client.db('routed');
    const coll = db.collection<{ _id: number; g: number }>('items');
    await coll.insertMany(Array.from({ length: 250 }, (_, i) => ({ _id: i, g: i % 5 })));
    // find with getMore through mongos (router cursor ids)
    const all = await coll.find({}, { batchSize: 7 }).sort({ _id: -1 }).toArray();
    expect(all).toHaveLength(250);
    expect(all[0]._id).toBe(249);
    const agg = await coll
      .aggregate([{ $group: { _id: '$g', n: { $sum: 1 } } }, { $sort: { _id: 1 } }], {
        batchSize: 2,
      })
      .toArray();
    expect(agg).toEqual([0, 1, 2, 3, 4].map((g) => ({ _id: g, n: 50 })));
    expect(await coll.countDocuments({ g: 1 })).toBe(50);
    expect(await coll.estimatedDocumentCount()).toBe(250);
    expect((await coll.distinct('g')).sort()).toEqual([0, 1, 2, 3, 4]);
    await coll.updateMany({ g: 0 }, { $set: { zero: true } });
    expect(await coll.countDocuments({ zero: true })).toBe(50);
    await coll.deleteMany({ g: 4 });
    const fam = await coll.findOneAndUpdate(
      { _id: 1 },
      { $inc: { g: 10 } },
      { returnDocument: 'after' },
    );
    expect(fam).toEqual({ _id: 1, g: 11 });
    await coll.createIndex({ g: 1 }, { name: 'g_1' });
    expect((await coll.listIndexes().toArray()).map((i) => i.name)).toEqual(['_id_', 'g_1']);
    await db.createCollection('other');
    expect(
      (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort(),
    ).toEqual(['items', 'other']);
    const stats = await db.command({ collStats: 'items' });
    expect(stats.count).toBe(200);
    await coll.rename('renamed');
    expect(await db.collection('renamed').countDocuments()).toBe(200);
    await db.collection('renamed').drop();

    const entry = await client
      .db('config')
      .collection('databases')
      .findOne({ _id: 'routed' as never });
    const shardIndex = Number(String(entry!.primary).replace('c0-shard', ''));
    const onShard = direct[shardIndex].db('routed');
    expect((await onShard.listCollections().toArray()).map((c) => c.name)).toEqual(['other']);
  });

  it('merges listDatabases across shards without local', async () => {
    const res = await client.db('admin').command({ listDatabases: 1 });
    const names = res.databases.map((d: { name: string }) => d.name);
    expect(names).toEqual(
      expect.arrayContaining(['admin', 'config', 'rr_a', 'rr_b', 'rr_c', 'rr_d']),
    );
    expect(names).not.toContain('local');
    expect(names).toEqual([...names].sort());
    expect(res.totalSize).toBe(
      res.databases.reduce((s: number, d: { sizeOnDisk: number }) => s + d.sizeOnDisk, 0),
    );
    const dbs = await client.db('admin').admin().listDatabases({ nameOnly: true });
    expect(dbs.databases.map((d) => d.name)).toEqual(names);
  });

  it('dropDatabase removes the config.databases entry', async () => {
    await client.db('to_drop').collection('x').insertOne({ a: 1 });
    expect(
      await client
        .db('config')
        .collection('databases')
        .countDocuments({ _id: 'to_drop' as never }),
    ).toBe(1);
    await client.db('to_drop').dropDatabase();
    expect(
      await client
        .db('config')
        .collection('databases')
        .find({ _id: 'to_drop' as never })
        .toArray(),
    ).toEqual([]);
  });

  it('a getMore with an unknown router cursor id fails with CursorNotFound', async () => {
    const err = await client
      .db('routed')
      .command({ getMore: 12345n as never, collection: 'x' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MongoServerError);
  });

  it('replica-set-only commands are absent on mongos', async () => {
    await expect(client.db('admin').command({ replSetGetStatus: 1 })).rejects.toMatchObject({
      code: 59,
      codeName: 'CommandNotFound',
    });
  });

  it('shardCollection with a range key creates the index on an empty collection and one chunk', async () => {
    await client.db('admin').command({ enableSharding: 'shk' });
    const res = await client
      .db('admin')
      .command({ shardCollection: 'shk.users', key: { region: 1, uid: 1 } });
    expect(res).toMatchObject({ collectionsharded: 'shk.users', ok: 1 });
    const indexes = await client.db('shk').collection('users').listIndexes().toArray();
    expect(indexes.map((i) => i.key)).toEqual([{ _id: 1 }, { region: 1, uid: 1 }]);
    const collEntry = await client
      .db('config')
      .collection('collections')
      .findOne({ _id: 'shk.users' as never });
    expect(collEntry).toMatchObject({
      _id: 'shk.users',
      key: { region: 1, uid: 1 },
      unique: false,
      noBalance: false,
    });
    const info = (await client.db('shk').listCollections({ name: 'users' }).toArray())[0] as {
      info: { uuid: unknown };
    };
    expect(collEntry!.uuid).toEqual(info.info.uuid);
    const chunks = await client
      .db('config')
      .collection('chunks')
      .find({ uuid: collEntry!.uuid })
      .toArray();
    const dbEntry = await client
      .db('config')
      .collection('databases')
      .findOne({ _id: 'shk' as never });
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toMatchObject({
      min: { region: new MinKey(), uid: new MinKey() },
      max: { region: new MaxKey(), uid: new MaxKey() },
      shard: dbEntry!.primary,
      lastmod: new Timestamp({ t: 1, i: 0 }),
    });
    await client.db('shk').collection('users').insertOne({ region: 'eu', uid: 1 });
    expect(await client.db('shk').collection('users').countDocuments()).toBe(1);
  });

  it('shardCollection refuses a non-empty collection without a shard-key index (72 InvalidOptions)', async () => {
    await client.db('shk').collection('full').insertOne({ k: 1 });
    const err = (await client
      .db('admin')
      .command({ shardCollection: 'shk.full', key: { k: 1 } })
      .catch((e: unknown) => e)) as MongoServerError;
    expect(err).toBeInstanceOf(MongoServerError);
    expect(err.code).toBe(72);
    expect(err.codeName).toBe('InvalidOptions');
    expect(err.message).toBe(
      'Please create an index that starts with the proposed shard key before sharding the collection. ',
    );
    await client.db('shk').collection('full').createIndex({ k: 1, other: 1 });
    await expect(
      client.db('admin').command({ shardCollection: 'shk.full', key: { k: 1 } }),
    ).resolves.toMatchObject({ collectionsharded: 'shk.full' });
  });

  it('shards a collection that does not exist yet on {_id: 1} through its own _id index', async () => {
    await expect(
      client.db('admin').command({ shardCollection: 'shk.byid', key: { _id: 1 } }),
    ).resolves.toMatchObject({ collectionsharded: 'shk.byid' });
    const indexes = await client.db('shk').collection('byid').listIndexes().toArray();
    expect(indexes.map((i) => [i.name, i.key])).toEqual([['_id_', { _id: 1 }]]);
  });
});

suite('sharded topology: users are cluster-wide', () => {
  let cluster: EmulatedShardedCluster;
  const clients: MongoClient[] = [];

  beforeAll(async () => {
    cluster = await startShardedCluster({
      name: 'auth',
      shards: 2,
      users: [
        { user: 'root', password: 'pw', roles: ['root'] },
        { user: 'app', password: 'apw', roles: ['readWriteAnyDatabase'] },
      ],
    });
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await cluster?.stop();
  });

  async function connect(uri: string): Promise<MongoClient> {
    const c = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });
    clients.push(c);
    await c.connect();
    return c;
  }

  it('authenticates on the router and on each shard with the same users', async () => {
    const root = await connect(cluster.uriWithCredentials('root', 'pw'));
    const app = await connect(cluster.uriWithCredentials('app', 'apw'));
    await app.db('a1').collection('c').insertOne({ x: 1 });
    await app.db('a2').collection('c').insertOne({ x: 2 });
    expect(await app.db('a2').collection('c').countDocuments()).toBe(1);
    await expect(app.db('admin').command({ listShards: 1 })).rejects.toMatchObject({ code: 13 });
    expect((await root.db('admin').command({ listShards: 1 })).shards).toHaveLength(2);
    const anonymous = await connect(cluster.uri);
    await expect(anonymous.db('a1').collection('c').findOne()).rejects.toMatchObject({
      code: 13,
    });
    for (const shard of cluster.shards) {
      const direct = await connect(shard.replicaSet.uriWithCredentials('app', 'apw'));
      await expect(direct.db('admin').command({ ping: 1 })).resolves.toMatchObject({ ok: 1 });
    }
  });
});
