import { MongoClient, MongoServerError, type ChangeStream, type Document } from 'mongodb';
import { TestCluster } from './helpers/cluster';

/**
 * Creating collections inside a multi-document transaction on a replica set (MongoDB 4.4+),
 * through the driver; runnable against a real server (`EMULATOR_CONFORMANCE_URI`). Expected
 * behaviour from MongoDB's manual ("Create Collections and Indexes in a Transaction": explicit
 * creation needs read concern local, implicit creation any transaction read concern), mongod's
 * jstests (core/txns/create_collection.js, commands_in_txns_read_concern.js, create_indexes.js,
 * change_streams/ddl_create_index_txn.js) and the driver's transactions spec tests
 * (create-collection, create-index).
 */
type TestDoc = { _id: number; [key: string]: unknown };

describe('transactions: creating collections (replica set)', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let other: MongoClient;
  let dbName: string;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect();
    other = await cluster.connect();
    dbName = cluster.dbName('txncreate');
    // The database exists (a collection creation in a transaction may also create it).
    await coll('seed').insertOne({ _id: 0 });
  });
  afterAll(async () => {
    await other.close();
    await client.close();
    await cluster.close();
  });

  const coll = (c: MongoClient | string, name?: string) =>
    typeof c === 'string'
      ? client.db(dbName).collection<TestDoc>(c)
      : c.db(dbName).collection<TestDoc>(name!);

  const names = async (c = other) =>
    (await c.db(dbName).listCollections({}, { nameOnly: true }).toArray()).map((x) => x.name);

  const failure = async (p: Promise<unknown>): Promise<MongoServerError> => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MongoServerError);
    return err as MongoServerError;
  };

  it('create: the collection appears only at the commit; the transaction writes into it', async () => {
    const session = client.startSession();
    session.startTransaction();
    await client.db(dbName).createCollection('explicit', { session });
    await coll('explicit').insertOne({ _id: 1 }, { session });
    expect(await coll('explicit').find({}, { session }).toArray()).toEqual([{ _id: 1 }]);
    expect(await names()).not.toContain('explicit');
    await session.commitTransaction();
    expect(await names()).toContain('explicit');
    expect(await coll(other, 'explicit').find().toArray()).toEqual([{ _id: 1 }]);
    await session.endSession();
  });

  it('insert creates the collection implicitly inside the transaction; an abort leaves nothing', async () => {
    const session = client.startSession();
    session.startTransaction();
    await coll('implicitAborted').insertOne({ _id: 1 }, { session });
    expect(await names()).not.toContain('implicitAborted');
    await session.abortTransaction();
    expect(await names()).not.toContain('implicitAborted');

    session.startTransaction();
    await coll('implicit').insertOne({ _id: 1 }, { session });
    await coll('implicit').updateOne({ _id: 2 }, { $set: { v: 1 } }, { upsert: true, session });
    expect(await names()).not.toContain('implicit');
    await session.commitTransaction();
    expect(await coll(other, 'implicit').find().sort({ _id: 1 }).toArray()).toEqual([
      { _id: 1 },
      { _id: 2, v: 1 },
    ]);
    await session.endSession();
  });

  it('create of an existing collection fails with 48 NamespaceExists and aborts the transaction', async () => {
    await client.db(dbName).createCollection('taken');
    const session = client.startSession();
    session.startTransaction();
    await coll('other1').insertOne({ _id: 1 }, { session });
    const err = await failure(client.db(dbName).command({ create: 'taken' }, { session }));
    expect(err.code).toBe(48);
    expect(err.codeName).toBe('NamespaceExists');
    const commit = await failure(session.commitTransaction());
    expect(commit.code).toBe(251);
    expect(await names()).not.toContain('other1');
    await session.endSession();
  });

  it('explicit create needs read concern local (72 InvalidOptions); implicit creation does not', async () => {
    const session = client.startSession();
    session.startTransaction({ readConcern: { level: 'snapshot' } });
    const err = await failure(client.db(dbName).createCollection('snapCreate', { session }));
    expect(err.code).toBe(72);
    await session.abortTransaction();

    session.startTransaction({ readConcern: { level: 'snapshot' } });
    await coll('snapImplicit').insertOne({ _id: 1 }, { session });
    await session.commitTransaction();
    expect(await names()).toContain('snapImplicit');

    session.startTransaction({ readConcern: { level: 'local' } });
    await client.db(dbName).createCollection('localCreate', { session });
    await session.commitTransaction();
    expect(await names()).toContain('localCreate');
    await session.endSession();
  });

  it('createIndexes: allowed on a collection the transaction creates, 263 on an existing one', async () => {
    const session = client.startSession();
    session.startTransaction();
    await coll('indexed').createIndex({ t: 1 }, { session });
    await coll('indexed').insertOne({ _id: 1, t: 1 }, { session });
    await session.commitTransaction();
    const indexes = await coll(other, 'indexed').listIndexes().toArray();
    expect(indexes.map((i) => i.name)).toEqual(['_id_', 't_1']);

    session.startTransaction();
    const err = await failure(coll('indexed').createIndex({ u: 1 }, { session }));
    expect(err.code).toBe(263);
    expect(err.codeName).toBe('OperationNotSupportedInTransaction');
    await session.abortTransaction();
    await session.endSession();
  });

  it('the commit writes the create as a "c" operation at the head of its applyOps', async () => {
    const session = client.startSession();
    session.startTransaction();
    await coll('logged').insertOne({ _id: 1 }, { session });
    await session.commitTransaction();
    const [entry] = await client
      .db('local')
      .collection('oplog.rs')
      .find({ op: 'c', ns: 'admin.$cmd', 'o.applyOps.ns': `${dbName}.logged` })
      .sort({ $natural: -1 })
      .limit(1)
      .toArray();
    const ops = entry.o.applyOps as Document[];
    expect(ops.map((o) => [o.op, o.ns])).toEqual([
      ['c', `${dbName}.$cmd`],
      ['i', `${dbName}.logged`],
    ]);
    expect(ops[0].o.create).toBe('logged');
    expect(ops[0].ui).toEqual(ops[1].ui);
    await session.endSession();
  });

  it('change streams: the create event (showExpandedEvents only) comes with the commit', async () => {
    const next = async (stream: ChangeStream, n: number): Promise<Document[]> => {
      const out: Document[] = [];
      while (out.length < n) {
        const e = await stream.tryNext();
        if (e) out.push(e);
      }
      return out;
    };
    const expanded = other.db(dbName).watch([], { showExpandedEvents: true });
    const plain = other.db(dbName).watch();
    await expanded.tryNext();
    await plain.tryNext();
    const session = client.startSession();
    session.startTransaction();
    await coll('streamed').insertOne({ _id: 1 }, { session });
    expect(await expanded.tryNext()).toBeNull();
    await session.commitTransaction();
    const events = await next(expanded, 2);
    expect(events.map((e) => [e.operationType, e.ns])).toEqual([
      ['create', { db: dbName, coll: 'streamed' }],
      ['insert', { db: dbName, coll: 'streamed' }],
    ]);
    expect(events[0].clusterTime).toEqual(events[1].clusterTime);
    expect(events[0].collectionUUID).toEqual(events[1].collectionUUID);
    expect(events[0].operationDescription.idIndex).toEqual({ v: 2, key: { _id: 1 }, name: '_id_' });
    const [first] = await next(plain, 1);
    expect(first.operationType).toBe('insert');
    await expanded.close();
    await plain.close();
    await session.endSession();
  });
});
