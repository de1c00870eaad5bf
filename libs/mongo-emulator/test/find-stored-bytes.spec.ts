import {
  BSON,
  Binary,
  Decimal128,
  Double,
  Int32,
  Long,
  MongoClient,
  ObjectId,
  Timestamp,
  type Document,
} from 'mongodb';
import { startShardedCluster, type EmulatedShardedCluster } from '../src';
import { TestCluster } from './helpers/cluster';
import { describeEmulatorOnly } from './helpers/real-server';

/**
 * A find answers with the documents as stored, byte for byte: the emulator sends a stored
 * document's bytes without decoding it (mongod does the same), through first batches and
 * getMores, with filters, sorts and limits; a projection still shapes what is returned.
 */
const EXACT = { promoteValues: false, promoteLongs: false, promoteBuffers: false } as const;

function documents(): Document[] {
  return Array.from({ length: 7 }, (_, i) => ({
    _id: i % 2 ? new Int32(i) : Long.fromNumber(i),
    d: new Double(i + 0.5),
    dec: Decimal128.fromString(`${i}.10`),
    bin: new Binary(Buffer.from([i, 255, 0]), 4),
    ts: new Timestamp({ t: 100 + i, i: 1 }),
    oid: new ObjectId('0123456789abcdef0123456' + i),
    nested: { z: 'last', a: [new Int32(i), null, { deep: true }] },
    s: 'é'.repeat(i),
  }));
}

const bytesOf = (docs: Document[]) => docs.map((d) => Buffer.from(BSON.serialize(d)));

async function rawFind(
  client: MongoClient,
  ns: { db: string; coll: string },
  filter: Document,
  options: Document = {},
): Promise<Buffer[]> {
  const cursor = client
    .db(ns.db)
    .collection(ns.coll)
    .find(filter, { raw: true, batchSize: 2, ...options });
  return (await cursor.toArray()).map((b) => Buffer.from(b as unknown as Uint8Array));
}

function checkFinds(
  client: () => MongoClient,
  ns: () => { db: string; coll: string },
  inserted: () => Buffer[],
): void {
  it('a full scan returns every document byte for byte, over several batches', async () => {
    const got = await rawFind(client(), ns(), {}, { sort: { _id: 1 } });
    expect(got).toEqual(inserted());
  });

  it('a filter, a sort, a skip and a limit return the stored bytes of what they select', async () => {
    const got = await rawFind(
      client(),
      ns(),
      { d: { $gte: 1.5 } },
      { sort: { d: -1 }, skip: 1, limit: 4 },
    );
    expect(got).toEqual([...inserted()].slice(1).reverse().slice(1, 5));
    const byId = await rawFind(client(), ns(), { _id: { $in: [3, 4, 99] } }, { sort: { _id: 1 } });
    expect(byId).toEqual([inserted()[3], inserted()[4]]);
  });

  it('a projection still returns the projected documents', async () => {
    const got = await client()
      .db(ns().db)
      .collection(ns().coll)
      .find({ _id: 5 } as Document, { projection: { nested: 1, s: 1 }, ...EXACT })
      .toArray();
    expect(got).toEqual([{ _id: new Int32(5), nested: documents()[5]!.nested, s: 'ééééé' }]);
  });
}

describe('find returns stored documents byte for byte (replica set)', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  const ns = { db: '', coll: 'stored' };

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect();
    ns.db = cluster.dbName('stored_bytes');
    await client.db(ns.db).collection(ns.coll).insertMany(documents());
  });
  afterAll(() => cluster.close());

  checkFinds(
    () => client,
    () => ns,
    () => bytesOf(documents()),
  );
});

describeEmulatorOnly('an emulated sharded cluster')(
  'find returns stored documents byte for byte (through mongos, two shards)',
  () => {
    let cluster: EmulatedShardedCluster;
    let client: MongoClient;
    const ns = { db: 'stored_bytes', coll: 'stored' };

    beforeAll(async () => {
      cluster = await startShardedCluster({ name: 'sb', shards: 2, mongos: 1 });
      client = new MongoClient(cluster.uri, { serverSelectionTimeoutMS: 5000 });
      await client.connect();
      const admin = client.db('admin');
      await admin.command({ enableSharding: ns.db });
      await admin.command({ shardCollection: `${ns.db}.${ns.coll}`, key: { _id: 1 } });
      await admin.command({ split: `${ns.db}.${ns.coll}`, middle: { _id: 3 } });
      await admin.command({
        moveChunk: `${ns.db}.${ns.coll}`,
        find: { _id: 5 },
        to: cluster.shards[1]!._id,
      });
      await client.db(ns.db).collection(ns.coll).insertMany(documents());
    });
    afterAll(async () => {
      await client?.close();
      await cluster?.stop();
    });

    checkFinds(
      () => client,
      () => ns,
      () => bytesOf(documents()),
    );
  },
);
