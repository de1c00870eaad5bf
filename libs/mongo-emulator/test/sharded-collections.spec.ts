import { Long, MaxKey, MinKey, MongoClient, MongoServerError, ObjectId, Timestamp } from 'mongodb';
import { startShardedCluster, type EmulatedShardedCluster } from '../src';
import { hashShardKeyValue } from '../src/sharding/hashing';
import { describeEmulatorOnly } from './helpers/real-server';

const suite = describeEmulatorOnly(
  'an emulated sharded cluster; no real sharded cluster is wired into these specs',
);

suite('sharded topology: sharded collections', () => {
  let cluster: EmulatedShardedCluster;
  let client: MongoClient;
  const direct: MongoClient[] = [];

  beforeAll(async () => {
    cluster = await startShardedCluster({ name: 'sc', shards: 3, mongos: 2 });
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

  const countOn = (i: number, db: string, coll: string) =>
    direct[i].db(db).collection(coll).countDocuments();

  describe('hashed shard key values (BSONElementHasher::hash64 test vectors)', () => {
    it.each([
      [1, '5902408780260971510'],
      [0, '4854801880128277513'],
      [-1, '1140205862565771219'],
      [42, '-944302157085130861'],
      [42.123, '-944302157085130861'],
      [Long.fromNumber(42), '-944302157085130861'],
      [Number.NaN, '4854801880128277513'],
      [Number.MAX_VALUE, '921523596458303250'],
      [Long.MAX_VALUE, '921523596458303250'],
      [-Number.MAX_VALUE, '4532067210535695462'],
      [new MinKey(), '7961148599568647290'],
      [new MaxKey(), '5504842513779440750'],
      ['abc', '8478485326885698097'],
      ['', '2049396243249673340'],
      [{ a: 'abc', b: Long.fromNumber(123) }, '4771603801758380216'],
      [{}, '7980500913326740417'],
      [['bar', 'baz', 'qux'], '-2938911267422831539'],
      [[], '8849948234993459283'],
      [new ObjectId('010203040506070809101112'), '-5588663249627035708'],
      [new ObjectId('000000000000000000000000'), '-4293118519463489418'],
      [true, '6405873908747105701'],
      [false, '6289544573401934092'],
      [new Date(0), '-1178696894582842035'],
    ])('hash(%p) = %s', (value, expected) => {
      expect(hashShardKeyValue(value).toString()).toBe(expected);
    });
  });

  describe('hashed shard key', () => {
    beforeAll(async () => {
      await client.db('admin').command({ enableSharding: 'hdb' });
      await client.db('admin').command({ shardCollection: 'hdb.h', key: { k: 'hashed' } });
    });

    it('pre-splits 2 chunks per shard on the int64 hash range', async () => {
      const entry = await client
        .db('config')
        .collection('collections')
        .findOne({ _id: 'hdb.h' as never });
      expect(entry).toMatchObject({ key: { k: 'hashed' }, unique: false });
      const chunks = await client
        .db('config')
        .collection('chunks')
        .find({ uuid: entry!.uuid }, { promoteLongs: false })
        .sort({ min: 1 })
        .toArray();
      expect(chunks).toHaveLength(6);
      const bounds = chunks.slice(1).map((c) => String(c.min.k));
      expect(bounds).toEqual([
        '-6148914691236517204',
        '-3074457345618258602',
        '0',
        '3074457345618258602',
        '6148914691236517204',
      ]);
      expect(chunks.map((c) => c.shard)).toEqual([
        'sc-shard0',
        'sc-shard0',
        'sc-shard1',
        'sc-shard1',
        'sc-shard2',
        'sc-shard2',
      ]);
      expect(chunks.map((c) => c.lastmod)).toEqual(
        [0, 1, 2, 3, 4, 5].map((i) => new Timestamp({ t: 1, i })),
      );
      // The shard-key index exists on every shard.
      for (const d of direct) {
        const indexes = await d.db('hdb').collection('h').listIndexes().toArray();
        expect(indexes.map((i) => i.name)).toEqual(['_id_', 'k_hashed']);
      }
    });

    it('routes inserts by hashed key and merges reads across shards', async () => {
      const coll = client.db('hdb').collection<{ _id: number; k: unknown; v: number }>('h');
      await coll.insertMany([
        { _id: 1, k: 1, v: 10 }, // hash 5902408780260971510 -> shard2
        { _id: 2, k: -1, v: 20 }, // hash 1140205862565771219 -> shard1
        { _id: 3, k: 42, v: 30 }, // hash -944302157085130861 -> shard1
        { _id: 4, k: new ObjectId('010203040506070809101112'), v: 40 }, // -> shard0
        { _id: 5, k: 'abc', v: 50 }, // hash 8478485326885698097 -> shard2
      ]);
      expect(await countOn(0, 'hdb', 'h')).toBe(1);
      expect(await countOn(1, 'hdb', 'h')).toBe(2);
      expect(await countOn(2, 'hdb', 'h')).toBe(2);

      expect((await coll.find().sort({ v: -1 }).toArray()).map((d) => d._id)).toEqual([
        5, 4, 3, 2, 1,
      ]);
      expect(
        (await coll.find({}, { batchSize: 2 }).sort({ _id: 1 }).skip(1).limit(3).toArray()).map(
          (d) => d._id,
        ),
      ).toEqual([2, 3, 4]);
      expect(await coll.findOne({ k: 42 })).toEqual({ _id: 3, k: 42, v: 30 });
      expect(await coll.countDocuments({ v: { $gte: 20 } })).toBe(4);
      expect(await coll.estimatedDocumentCount()).toBe(5);
      expect((await coll.distinct('v')).sort((a, b) => a - b)).toEqual([10, 20, 30, 40, 50]);
      const agg = await coll
        .aggregate([
          { $match: { v: { $gt: 10 } } },
          { $group: { _id: null, total: { $sum: '$v' } } },
        ])
        .toArray();
      expect(agg).toEqual([{ _id: null, total: 140 }]);

      expect((await coll.updateMany({}, { $inc: { v: 1 } })).modifiedCount).toBe(5);
      expect((await coll.updateOne({ k: 'abc' }, { $set: { tagged: true } })).modifiedCount).toBe(
        1,
      );
      expect(
        await direct[2]
          .db('hdb')
          .collection('h')
          .findOne({ _id: 5 as never }),
      ).toMatchObject({
        tagged: true,
      });
      // Without the shard key, updateOne/deleteOne touch exactly one document.
      expect((await coll.updateOne({ v: 31 }, { $set: { w: 1 } })).modifiedCount).toBe(1);
      expect((await coll.deleteOne({ v: 41 })).deletedCount).toBe(1);
      expect(
        await coll.findOneAndUpdate({ k: -1 }, { $set: { f: 1 } }, { returnDocument: 'after' }),
      ).toMatchObject({ _id: 2, f: 1 });
      expect((await coll.deleteMany({ v: { $lt: 100 } })).deletedCount).toBe(4);
      expect(await coll.countDocuments()).toBe(0);
    });

    it('pages large broadcast finds and aggregates through router cursors; bulkWrite splits per shard', async () => {
      const coll = client.db('hdb').collection<{ _id: number; k: number; g: number }>('big');
      await client.db('admin').command({ shardCollection: 'hdb.big', key: { k: 'hashed' } });
      await coll.insertMany(Array.from({ length: 600 }, (_, i) => ({ _id: i, k: i, g: i % 7 })));
      const perShard = await Promise.all([0, 1, 2].map((i) => countOn(i, 'hdb', 'big')));
      expect(perShard.reduce((a, b) => a + b, 0)).toBe(600);
      expect(perShard.every((n) => n > 100)).toBe(true);
      const sorted = await coll
        .find({ g: { $ne: 3 } }, { batchSize: 50 })
        .sort({ _id: -1 })
        .toArray();
      expect(sorted).toHaveLength(600 - 86);
      expect(sorted.map((d) => d._id)).toEqual(
        Array.from({ length: 600 }, (_, i) => 599 - i).filter((i) => i % 7 !== 3),
      );
      const groups = await coll
        .aggregate([{ $group: { _id: '$g', n: { $sum: 1 } } }, { $sort: { _id: 1 } }], {
          batchSize: 3,
        })
        .toArray();
      expect(groups.map((g) => g.n)).toEqual([86, 86, 86, 86, 86, 85, 85]);
      const top = await coll
        .aggregate([{ $sort: { k: -1 } }, { $limit: 2 }, { $project: { _id: 1 } }])
        .toArray();
      expect(top).toEqual([{ _id: 599 }, { _id: 598 }]);
      const res = await coll.bulkWrite([
        { insertOne: { document: { _id: 1000, k: 1000, g: 0 } } },
        { insertOne: { document: { _id: 1001, k: 1001, g: 0 } } },
        { updateOne: { filter: { k: 10 }, update: { $set: { g: 99 } } } },
        { updateMany: { filter: { g: 6 }, update: { $set: { six: true } } } },
        { deleteOne: { filter: { k: 11 } } },
        { deleteMany: { filter: { g: 5 } } },
      ]);
      expect(res.insertedCount).toBe(2);
      expect(res.matchedCount).toBe(1 + 85);
      expect(res.deletedCount).toBe(1 + 85);
      expect(await coll.countDocuments()).toBe(600 + 2 - 1 - 85);
      expect(await coll.countDocuments({ six: true })).toBe(85);
      expect(await coll.findOne({ k: 10 })).toMatchObject({ g: 99 });
      await coll.drop();
      for (const d of direct) {
        expect(await d.db('hdb').listCollections({ name: 'big' }).toArray()).toEqual([]);
      }
      expect(
        await client
          .db('config')
          .collection('collections')
          .findOne({ _id: 'hdb.big' as never }),
      ).toBeNull();
    });

    it('refuses an upsert that does not target one shard', async () => {
      const err = (await client
        .db('hdb')
        .collection('h')
        .updateOne({ v: 1 }, { $set: { x: 1 } }, { upsert: true })
        .catch((e: unknown) => e)) as MongoServerError;
      expect(err).toBeInstanceOf(MongoServerError);
      expect(err.code).toBe(61);
    });

    it('refuses unique hashed keys and numInitialChunks on a range key', async () => {
      await expect(
        client
          .db('admin')
          .command({ shardCollection: 'hdb.u', key: { k: 'hashed' }, unique: true }),
      ).rejects.toMatchObject({ code: 72 });
      await expect(
        client
          .db('admin')
          .command({ shardCollection: 'hdb.r', key: { k: 1 }, numInitialChunks: 4 }),
      ).rejects.toMatchObject({ code: 72 });
    });
  });

  describe('range key: split and moveChunk', () => {
    it('splits at middle, moves the upper chunk with its documents, routes afterwards', async () => {
      await client.db('admin').command({ enableSharding: 'rdb' });
      await client.db('admin').command({ shardCollection: 'rdb.r', key: { x: 1 } });
      const dbEntry = await client
        .db('config')
        .collection('databases')
        .findOne({ _id: 'rdb' as never });
      const primary = Number(String(dbEntry!.primary).replace('sc-shard', ''));
      const other = (primary + 1) % 3;
      const coll = client.db('rdb').collection<{ _id: number; x: number }>('r');
      await coll.insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: i, x: i })));

      // Change streams on each shard, opened before the migration.
      const streams = direct.map((d) =>
        d.db('rdb').collection('r').watch([], { maxAwaitTimeMS: 50 }),
      );
      for (const s of streams) await s.tryNext();

      await client.db('admin').command({ split: 'rdb.r', middle: { x: 10 } });
      await client
        .db('admin')
        .command({ moveChunk: 'rdb.r', find: { x: 15 }, to: `sc-shard${other}` });

      expect(await countOn(primary, 'rdb', 'r')).toBe(10);
      expect(await countOn(other, 'rdb', 'r')).toBe(10);
      expect(await direct[other].db('rdb').collection('r').findOne({ x: 10 })).toEqual({
        _id: 10,
        x: 10,
      });
      const entry = await client
        .db('config')
        .collection('collections')
        .findOne({ _id: 'rdb.r' as never });
      const chunks = await client
        .db('config')
        .collection('chunks')
        .find({ uuid: entry!.uuid })
        .sort({ min: 1 })
        .toArray();
      expect(chunks.map((c) => [c.min.x, c.max.x, c.shard])).toEqual([
        [new MinKey(), 10, `sc-shard${primary}`],
        [10, new MaxKey(), `sc-shard${other}`],
      ]);
      expect(chunks[1].lastmod).toEqual(new Timestamp({ t: 2, i: 0 }));
      expect(chunks[0].lastmod).toEqual(new Timestamp({ t: 2, i: 1 }));
      // The recipient's copy has the same collection uuid.
      const info = (await direct[other].db('rdb').listCollections({ name: 'r' }).toArray())[0] as {
        info: { uuid: unknown };
      };
      expect(info.info.uuid).toEqual(entry!.uuid);

      // Migration writes are fromMigrate: no change stream on either shard sees them.
      await coll.insertOne({ _id: 100, x: 100 });
      const seen: unknown[] = [];
      for (const s of streams) {
        const ev = await s.tryNext();
        if (ev) seen.push(ev);
      }
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ operationType: 'insert', documentKey: { x: 100, _id: 100 } });
      await Promise.all(streams.map((s) => s.close()));

      expect(await direct[other].db('rdb').collection('r').countDocuments()).toBe(11);
      expect(
        (
          await coll
            .find({ x: { $gte: 5 } })
            .sort({ x: 1 })
            .toArray()
        ).length,
      ).toBe(16);
      expect((await coll.find().sort({ x: -1 }).limit(3).toArray()).map((d) => d.x)).toEqual([
        100, 19, 18,
      ]);
    });

    it('dbStats through mongos sums every shard, so a sharded collection counts whole', async () => {
      // rdb.r has chunks on two shards (previous test); rdb.u is an unsharded collection.
      await client
        .db('rdb')
        .collection<{ _id: number }>('u')
        .insertMany([{ _id: 1 }, { _id: 2 }]);
      const routed = await client.db('rdb').command({ dbStats: 1 });
      const perShard = await Promise.all(direct.map((d) => d.db('rdb').command({ dbStats: 1 })));
      for (const field of ['collections', 'objects', 'dataSize', 'indexes', 'totalSize'])
        expect(routed[field]).toBe(perShard.reduce((sum, r) => sum + (r[field] as number), 0));
      expect(routed.objects).toBe(
        (await client.db('rdb').collection('r').countDocuments()) +
          (await client.db('rdb').collection('u').countDocuments()),
      );
      expect(Object.keys(routed.raw)).toHaveLength(3);
      expect(routed.avgObjSize).toBeCloseTo(routed.dataSize / routed.objects);
      // scale applies on each shard before the sums, as mongos does.
      const scaled = await client.db('rdb').command({ dbStats: 1, scale: 1024 });
      expect(scaled.scaleFactor).toBe(1024);
      expect(scaled.dataSize).toBe(
        perShard.reduce((sum, r) => sum + Math.trunc((r.dataSize as number) / 1024), 0),
      );
    });

    it('an update that changes the shard key moves the document only as a retryable write', async () => {
      const dbEntry = await client
        .db('config')
        .collection('databases')
        .findOne({ _id: 'rdb' as never });
      const primary = Number(String(dbEntry!.primary).replace('sc-shard', ''));
      const other = (primary + 1) % 3;
      const coll = client.db('rdb').collection<{ _id: number; x: number }>('r');
      // Stays in the lower chunk: an ordinary update.
      expect((await coll.updateOne({ x: 6 }, { $set: { x: 7 } })).modifiedCount).toBe(1);
      // Moves to the upper chunk (another shard): delete + insert (retryWrites is on by default).
      expect((await coll.updateOne({ x: 5 }, { $set: { x: 50 } })).modifiedCount).toBe(1);
      expect(
        await direct[primary]
          .db('rdb')
          .collection('r')
          .findOne({ _id: 5 as never }),
      ).toBeNull();
      expect(
        await direct[other]
          .db('rdb')
          .collection('r')
          .findOne({ _id: 5 as never }),
      ).toEqual({
        _id: 5,
        x: 50,
      });
      const noRetry = new MongoClient(cluster.uri, {
        retryWrites: false,
        serverSelectionTimeoutMS: 5000,
      });
      try {
        const err = (await noRetry
          .db('rdb')
          .collection<{ _id: number; x: number }>('r')
          .updateOne({ x: 4 }, { $set: { x: 40 } })
          .catch((e: unknown) => e)) as MongoServerError;
        expect(err.code).toBe(20);
        expect(err.message).toBe(
          'Must run update to shard key field in a multi-statement transaction or with retryWrites: true.',
        );
      } finally {
        await noRetry.close();
      }
      const multi = (await coll
        .updateMany({ x: { $lt: 3 } }, { $inc: { x: 100 } })
        .catch((e: unknown) => e)) as MongoServerError;
      expect(multi.code).toBe(72);
      expect(multi.message).toBe(
        'Multi-update operations are not allowed when updating the shard key field.',
      );
      expect(await coll.findOne({ _id: 4 })).toEqual({ _id: 4, x: 4 });
    });

    it('moveChunk / split on an unsharded collection fail with NamespaceNotSharded', async () => {
      await expect(
        client.db('admin').command({ split: 'rdb.nope', middle: { x: 1 } }),
      ).rejects.toMatchObject({ code: 118, codeName: 'NamespaceNotSharded' });
      await expect(
        client.db('admin').command({ moveChunk: 'rdb.r', find: { x: 1 }, to: 'nope' }),
      ).rejects.toMatchObject({ code: 70 });
    });
  });

  describe('balancer and setAllowMigrations', () => {
    it('balancerStop/Start/Status toggle the mode', async () => {
      const admin = client.db('admin');
      expect(await admin.command({ balancerStatus: 1 })).toMatchObject({
        mode: 'full',
        inBalancerRound: false,
        numBalancerRounds: 0,
      });
      await admin.command({ balancerStop: 1 });
      expect((await admin.command({ balancerStatus: 1 })).mode).toBe('off');
      await admin.command({ balancerStart: 1 });
      expect((await admin.command({ balancerStatus: 1 })).mode).toBe('full');
    });

    it('setAllowMigrations false blocks moveChunk with 117 and shows in config.collections', async () => {
      const admin = client.db('admin');
      await admin.command({ shardCollection: 'rdb.m', key: { x: 1 } });
      await admin.command({ setAllowMigrations: 'rdb.m', allowMigrations: false });
      expect(
        await client
          .db('config')
          .collection('collections')
          .findOne({ _id: 'rdb.m' as never }),
      ).toMatchObject({ permitMigrations: false });
      await expect(
        admin.command({ moveChunk: 'rdb.m', find: { x: 1 }, to: 'sc-shard0' }),
      ).rejects.toMatchObject({
        code: 117,
        codeName: 'ConflictingOperationInProgress',
        message: 'Collection is undergoing changes so moveChunk is not allowed.',
      });
      await admin.command({ setAllowMigrations: 'rdb.m', allowMigrations: true });
      const entry = await client
        .db('config')
        .collection('collections')
        .findOne({ _id: 'rdb.m' as never });
      expect(entry).not.toHaveProperty('permitMigrations');
    });
  });
});
