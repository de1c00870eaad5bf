import { startReplicaSet } from '@sync/mongo-emulator';
import { BSON, Double, Int32, Long, MongoClient, Timestamp, type Document } from 'mongodb';
import { MongoSourceCluster } from './mongo-source-cluster';
import { digestDocuments } from '@sync/engine';
import { rawDocumentCursor, readRawBuffered, readsRepliesDirectly } from './raw-cursor';

type Cluster = Awaited<ReturnType<typeof startReplicaSet>>;
type AnyId = { _id: number | string | Document } & Document;

/**
 * The commit's last check (`sourceQuiet`: which user writes reached the source after the commit
 * point) and the verifier's batched digests — through the real driver against the emulator.
 */
describe('MongoSourceCluster (emulator, real driver)', () => {
  let cluster: Cluster;
  let client: MongoClient;
  let source: MongoSourceCluster;

  beforeAll(async () => {
    cluster = await startReplicaSet();
    client = await new MongoClient(cluster.uri).connect();
    source = new MongoSourceCluster(client, cluster.host);
  });
  afterAll(async () => {
    await client.close();
    await cluster.stop();
  });

  it('readRaw: every document once in _id order, batches bounded by count and by bytes', async () => {
    const docs = Array.from({ length: 10 }, (_, i) => ({ _id: i, pad: 'x'.repeat(1000) }));
    await client.db('batches').collection<AnyId>('c').insertMany(docs);
    const expected = docs.map((d) => Buffer.from(BSON.serialize(d)));
    const size = expected[0]!.byteLength;
    const read = async (batchSize: number, maxBatchBytes?: number) => {
      const batches: Buffer[][] = [];
      const options = {
        range: {},
        batchSize,
        sortById: true,
        ...(maxBatchBytes ? { maxBatchBytes } : {}),
      };
      for await (const batch of source.readRaw('batches', 'c', options)) {
        const documents = batch.documents.map((d) => Buffer.from(d));
        expect(batch.bytes).toBe(documents.reduce((n, d) => n + d.byteLength, 0));
        batches.push(documents);
      }
      expect(batches.flat()).toEqual(expected);
      return batches.map((b) => b.length);
    };
    // Served batches within the bounds go on as served; larger ones are cut.
    expect(await read(4)).toEqual([4, 4, 2]);
    // By bytes: a batch ends with the document that reaches the bound.
    expect(await read(4, 2 * size)).toEqual([2, 2, 2, 2, 2]);
    expect(await read(100, 3 * size - 1)).toEqual([3, 3, 3, 1]);
  });

  it('names the user writes after the point, not those before it nor internal ones', async () => {
    const users = client.db('app').collection<{ _id: number; v?: number }>('users');
    await users.insertOne({ _id: 1 });
    const point = await source.writeNoop('test: commit point');
    await users.updateOne({ _id: 1 }, { $set: { v: 1 } });
    await client.db('sync_reserved_for_internal_use').collection('workers').insertOne({ w: 1 });
    await users.deleteOne({ _id: 1 });
    const writes = await source.writesAfter(point, 20);
    expect(writes.map((w) => [w.namespace, w.operation, w.id])).toEqual([
      ['app.users', 'update', '{"$numberInt":"1"}'],
      ['app.users', 'delete', '{"$numberInt":"1"}'],
    ]);
    expect(writes.every((w) => (w.clusterTime as Timestamp).compare(point) > 0)).toBe(true);
    expect(await source.writesAfter(await source.writeNoop('test: later point'), 20)).toEqual([]);
  });

  it('ends while the source keeps writing its own metadata (claims renewed after a reverse)', async () => {
    const point = await source.writeNoop('test: commit point');
    // A claim renewal every 20 ms: the change stream is never idle.
    let renewing = true;
    const claims = client
      .db('sync_reserved_for_internal_use')
      .collection<{ _id: string; at?: Date }>('claims');
    const renew = (async () => {
      while (renewing) {
        await claims.updateOne({ _id: 'shard0' }, { $set: { at: new Date() } }, { upsert: true });
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    try {
      await new Promise((r) => setTimeout(r, 300)); // renewals after the point, before the check
      // Before, every tryNext found a renewal, so the end was never seen: it read forever.
      expect(await source.writesAfter(point, 20)).toEqual([]);
    } finally {
      renewing = false;
      await renew;
    }
  }, 20_000);

  it('hashes each collection as its own read in _id order would be, in one aggregate for all', async () => {
    const db = client.db('tenants');
    // Mixed _id types inserted out of order, nested fields in a chosen order, exact number types.
    await db.collection<AnyId>('a').insertMany([
      { _id: 'b', v: new Int32(1), n: { z: 1, a: 2 } },
      { _id: new Int32(3), v: new Double(1) },
      { _id: { x: 1 }, v: Long.fromNumber(1) },
      { _id: new Double(2.5), v: null },
    ]);
    await db.collection<AnyId>('b').insertMany([{ _id: 1 }, { _id: 0, s: 'x' }]);
    await db.createCollection('empty');
    const names = ['b', 'a', 'missing', 'empty'];
    const status = () => client.db('admin').command({ serverStatus: 1 });
    const aggregates = async () => Number((await status()).metrics.commands.aggregate?.total ?? 0);
    const before = await aggregates();
    const together = await source.digestWhole('tenants', names);
    expect((await aggregates()) - before).toBe(1);
    // Each collection read alone in `_id` order, raw, and hashed as digestWhole must.
    const alone = await Promise.all(
      names.map(async (name) => {
        const batches: Uint8Array[][] = [];
        const read = { range: {}, batchSize: 1, sortById: true };
        for await (const batch of source.readRaw('tenants', name, read))
          batches.push(batch.documents);
        return digestDocuments(batches);
      }),
    );
    expect(together).toEqual(alone);
    expect(together.map((d) => d.count)).toEqual([2, 4, 0, 0]);
    // A different numeric type is a different hash.
    await db.collection('b').updateOne({ _id: 1 } as Document, { $set: { k: new Double(1) } });
    const typed = await source.digestWhole('tenants', ['b']);
    await db.collection('b').updateOne({ _id: 1 } as Document, { $set: { k: new Int32(1) } });
    expect((await source.digestWhole('tenants', ['b']))[0]!.hash).not.toBe(typed[0]!.hash);
  });

  it("reads several small collections' documents in one aggregate, byte for byte, with each name's UUID after the read", async () => {
    const db = client.db('copied_together');
    // Every BSON type that a re-encoding could change, in a chosen field order.
    await db.collection<AnyId>('b').insertMany([
      { _id: 2, z: new Double(1), a: new Int32(1), l: Long.fromNumber(5), n: -0 },
      { _id: 'x', nested: { y: [new Double(0.5), null] } },
    ]);
    await db.collection<AnyId>('a').insertOne({ _id: 1, v: 'a' });
    await db.createCollection('empty');
    const names = ['b', 'a', 'missing', 'empty'];
    const status = () => client.db('admin').command({ serverStatus: 1 });
    const count = async (name: string) =>
      Number((await status()).metrics.commands[name]?.total ?? 0);
    const [aggregates, finds] = [await count('aggregate'), await count('find')];
    const after = await source.clusterTime();
    const read = await source.readWholeMany('copied_together', names, {
      maxBytes: 1024 * 1024,
      afterClusterTime: after,
    });
    expect((await count('aggregate')) - aggregates).toBe(1);
    expect((await count('find')) - finds).toBe(0);
    const listed = await source.listCollections('copied_together');
    const uuidOf = (name: string) => listed.find((c) => c.name === name)?.uuid ?? null;
    expect(read!.uuids).toEqual([uuidOf('b'), uuidOf('a'), null, uuidOf('empty')]);
    expect(read!.uuids[0]).toMatch(/^[0-9a-f]{32}$/);
    // Each collection's documents are the bytes a read alone returns.
    for (const [i, name] of names.entries()) {
      const alone: Buffer[] = [];
      for await (const batch of source.readRaw('copied_together', name, {
        range: {},
        batchSize: 100,
      }))
        alone.push(...batch.documents.map((d) => Buffer.from(d)));
      const together = read!.documents[i]!.map((d) => Buffer.from(d));
      expect(together.map((d) => d.toString('hex')).sort()).toEqual(
        alone.map((d) => d.toString('hex')).sort(),
      );
    }
    expect(read!.documents.map((d) => d.length)).toEqual([2, 1, 0, 0]);
    // More than maxBytes: null (the caller reads each alone).
    expect(await source.readWholeMany('copied_together', ['b', 'a'], { maxBytes: 10 })).toBeNull();
  });

  it("lists several collections' indexes in one aggregate, exactly as listIndexes does", async () => {
    const db = client.db('indexed');
    await db.collection<AnyId>('a').insertOne({ _id: 1 });
    // Options in a chosen order and exact number types: the specs must come back byte-equal.
    await db.command({
      createIndexes: 'a',
      indexes: [
        {
          key: { z: new Int32(1), a: new Double(-1) },
          name: 'za',
          unique: true,
          partialFilterExpression: { z: { $gt: new Int32(0) } },
        },
      ],
    });
    await db.collection('a').createIndex({ t: 1 }, { expireAfterSeconds: 60, sparse: true });
    await db.createCollection('b');
    await db.collection('c').createIndex({ s: 'hashed' });
    const names = ['c', 'missing', 'a', 'b'];
    const status = () => client.db('admin').command({ serverStatus: 1 });
    const count = async (name: string) =>
      Number((await status()).metrics.commands[name]?.total ?? 0);
    const [aggregatesBefore, listingsBefore] = [
      await count('aggregate'),
      await count('listIndexes'),
    ];
    const together = await source.listIndexesMany('indexed', names);
    expect((await count('aggregate')) - aggregatesBefore).toBe(1);
    expect((await count('listIndexes')) - listingsBefore).toBe(0);
    // No entry (a missing collection; a clustered one, which has no _id index): null, left to
    // listIndexes.
    expect(together.map((list) => list === null)).toEqual([false, true, false, false]);
    for (const [i, name] of names.entries()) {
      if (together[i] === null) continue;
      const alone = await source.listIndexes('indexed', name);
      expect(together[i]!.map((spec) => BSON.serialize(spec))).toEqual(
        alone.map((spec) => BSON.serialize(spec)),
      );
    }
    expect(together[2]!.map((spec) => spec.name)).toEqual(['_id_', 'za', 't_1']);
  });

  it("reads several collections' sizes in one aggregate, the figures collStats gives", async () => {
    const db = client.db('sized');
    await db
      .collection<AnyId>('a')
      .insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: i, pad: 'x'.repeat(i * 10) })));
    await db.collection<AnyId>('b').insertOne({ _id: 'only' });
    await db.createCollection('empty');
    const names = ['b', 'a', 'empty'];
    const status = () => client.db('admin').command({ serverStatus: 1 });
    const count = async (name: string) =>
      Number((await status()).metrics.commands[name]?.total ?? 0);
    const [aggregatesBefore, statsBefore] = [await count('aggregate'), await count('collStats')];
    const together = await source.collectionStatsMany('sized', names);
    expect((await count('aggregate')) - aggregatesBefore).toBe(1);
    expect((await count('collStats')) - statsBefore).toBe(0);
    const alone = [];
    for (const name of names) alone.push(await source.collectionStats('sized', name));
    expect(together).toEqual(alone);
    expect(together.map((s) => s?.count)).toEqual([1, 30, 0]);
    expect(together[1]!.bytes).toBeGreaterThan(30 * 10);

    // A collection that is not there fails the whole read: every entry is left to collStats.
    expect(await source.collectionStatsMany('sized', ['a', 'missing'])).toEqual([null, null]);
  });

  it('raw reads survive primary state-change errors: their topologyVersion is decoded', async () => {
    // mongod appends its topologyVersion to a NotWritablePrimary reply. A raw read once had the
    // driver decode that reply raw too: the server's topology version became undecoded bytes in
    // the driver's SDAM, and the next such error threw a TypeError inside the driver.
    const ids = client.db('faults').collection<{ _id: number }>('raw');
    await ids.insertMany([{ _id: 1 }, { _id: 2 }]);
    const failing = await new MongoClient(cluster.uri, { appName: 'raw-reads' }).connect();
    try {
      const reader = new MongoSourceCluster(failing, cluster.host);
      await client.db('admin').command({
        configureFailPoint: 'failCommand',
        mode: { times: 3 },
        data: { failCommands: ['find'], errorCode: 10107, appName: 'raw-reads' },
      });
      for (let i = 0; i < 3; i++) {
        const error = await reader.readByIds('faults', 'raw', [1, 2]).catch((e: unknown) => e);
        expect(error).toMatchObject({ name: 'MongoServerError', code: 10107 });
        expect((error as { topologyVersion: unknown }).topologyVersion).toEqual({
          processId: expect.objectContaining({ _bsontype: 'ObjectId' }),
          counter: expect.anything(),
        });
      }
      const documents = await reader.readByIds('faults', 'raw', [1, 2]);
      expect(documents.every((d) => d instanceof Uint8Array)).toBe(true);
      expect(documents).toHaveLength(2);
    } finally {
      await client.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
      await failing.close();
    }
  });

  it('reads raw documents byte for byte over many replies, straight from each reply', async () => {
    const docs: Document[] = Array.from({ length: 250 }, (_, i) => ({
      _id: i,
      n: new Int32(i),
      l: Long.fromNumber(i * 1_000_000_007),
      d: new Double(i + 0.5),
      nested: { a: [new Int32(1), 'two', { three: new Double(3) }] },
      pad: 'x'.repeat(i % 17),
    }));
    await client.db('raw').collection('many').insertMany(docs);
    const read: Uint8Array[] = [];
    for await (const batch of source.readRaw('raw', 'many', { range: {}, batchSize: 40 }))
      read.push(...batch.documents);
    expect(read.map((d) => Buffer.from(d).toString('hex'))).toEqual(
      docs.map((d) => Buffer.from(BSON.serialize(d)).toString('hex')),
    );
    // The driver in use keeps its replies as readRawBuffered expects (else it falls back to
    // readBufferedDocuments: still right, but a document object per document again).
    const cursor = rawDocumentCursor(client.db('raw'), { find: 'many', batchSize: 7 });
    try {
      expect(await cursor.hasNext()).toBe(true);
      expect(readsRepliesDirectly(cursor)).toBe(true);
      const first = readRawBuffered(cursor);
      expect(first).toHaveLength(7);
      expect(readRawBuffered(cursor)).toEqual([]); // consumed: the next hasNext runs a getMore
      expect(await cursor.hasNext()).toBe(true);
      expect(BSON.deserialize(readRawBuffered(cursor)[0]!)._id).toBe(7);
    } finally {
      await cursor.close();
    }
  });
});
