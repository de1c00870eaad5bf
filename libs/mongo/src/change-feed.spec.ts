import { startReplicaSet } from '@sync/mongo-emulator';
import {
  HistoryLostError,
  RawDocument,
  documentOf,
  type ChangeEvent,
  type ChangeFeedCursor,
} from '@sync/engine/apply';
import {
  BSON,
  BSONRegExp,
  Double,
  Int32,
  Long,
  MongoClient,
  Timestamp,
  type Document,
} from 'mongodb';
import { MongoChangeFeed, decodeEvent } from './change-feed';

type Cluster = Awaited<ReturnType<typeof startReplicaSet>>;

const CRUD = new Set(['insert', 'update', 'replace', 'delete']);

describe('decodeEvent', () => {
  const event = {
    _id: { _data: '82AB' },
    operationType: 'insert',
    clusterTime: new Timestamp({ t: 5, i: 1 }),
    fullDocument: { _id: new Int32(1), n: new Double(1), l: Long.fromNumber(2) },
    ns: { db: 'd', coll: 'c' },
    documentKey: { _id: new Int32(1) },
  };

  it('keeps fullDocument as its bytes and decodes the rest exactly', () => {
    const bytes = BSON.serialize(event);
    const decoded = decodeEvent(bytes);
    expect(decoded.fullDocument).toBeInstanceOf(RawDocument);
    const raw = decoded.fullDocument as RawDocument;
    expect(Buffer.compare(raw.bytes, BSON.serialize(event.fullDocument))).toBe(0);
    // Every other field, in order, as the whole event decodes without promotion.
    const exact = { promoteValues: false, promoteLongs: false, promoteBuffers: false };
    const whole = BSON.deserialize(bytes, exact);
    delete whole.fullDocument;
    const rest: Document = { ...decoded };
    delete rest.fullDocument;
    expect(Object.keys(rest)).toEqual(Object.keys(whole));
    expect(rest).toEqual(whole);
    expect(rest.documentKey._id).toBeInstanceOf(Int32);
    // Decoded on demand, types exact.
    expect(documentOf(raw)._id).toBeInstanceOf(Int32);
    expect(documentOf(raw).n).toBeInstanceOf(Double);
    expect(documentOf(raw).l).toBeInstanceOf(Long);
  });

  it('decodes an event without a fullDocument (or a null one) whole', () => {
    const update = { ...event, operationType: 'update', fullDocument: null };
    expect(decodeEvent(BSON.serialize(update))).toEqual(
      BSON.deserialize(BSON.serialize(update), { promoteValues: false }),
    );
    const { fullDocument: _, ...remove } = { ...event, operationType: 'delete' };
    expect(decodeEvent(BSON.serialize(remove)).fullDocument).toBeUndefined();
  });

  it('refuses an event without its resume token', () => {
    const { _id: _, ...withoutToken } = event;
    expect(() => decodeEvent(BSON.serialize(withoutToken))).toThrow(/resume token/);
  });
});

describe('MongoChangeFeed (emulator, real driver)', () => {
  let cluster: Cluster;
  let client: MongoClient;
  let n = 0;
  let coll: string;
  const open: ChangeFeedCursor[] = [];

  beforeAll(async () => {
    cluster = await startReplicaSet();
    client = await new MongoClient(cluster.uri).connect();
  });
  beforeEach(() => {
    coll = `c${++n}`;
  });
  afterEach(async () => {
    await client
      .db('admin')
      .command({ configureFailPoint: 'failGetMoreAfterCursorCheckout', mode: 'off' });
    await client.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
    for (const cursor of open.splice(0)) await cursor.close().catch(() => undefined);
  });
  afterAll(async () => {
    await client.close();
    await cluster.stop();
  });

  const now = async (): Promise<Timestamp> =>
    (await client.db('admin').command({ ping: 1 })).operationTime as Timestamp;

  async function openAt(start: Timestamp): Promise<ChangeFeedCursor> {
    const cursor = await new MongoChangeFeed(client, { maxAwaitTimeMS: 50 }).open({
      startAtOperationTime: start,
    });
    open.push(cursor);
    return cursor;
  }

  /** Events of this test's collection until `count` arrived (or 40 empty batches). */
  async function read(cursor: ChangeFeedCursor, count: number): Promise<ChangeEvent[]> {
    const events: ChangeEvent[] = [];
    for (let empty = 0; events.length < count && empty < 40;) {
      const batch = await cursor.next();
      const mine = batch.events.filter((e) => e.ns?.coll === coll && CRUD.has(e.operationType));
      if (mine.length === 0) empty += 1;
      events.push(...mine);
    }
    return events;
  }

  it('hands out an insert’s document as the bytes the source stores', async () => {
    const start = await now();
    const c = client.db('feed').collection(coll);
    // Exact numeric types, an embedded document, a regular expression.
    const document = {
      _id: new Int32(1),
      b: new Double(2),
      l: Long.fromNumber(3),
      e: { z: new Int32(1), a: new BSONRegExp('^x', 'i') },
    };
    await client.db('feed').command({ insert: coll, documents: [document] });
    await c.updateOne({ _id: new Int32(1) } as Document, { $set: { b: new Double(4) } });
    const cursor = await openAt(start);
    const [insert, update] = await read(cursor, 2);
    const stored = (await c.findOne({ _id: new Int32(1) } as Document, {
      raw: true,
    })) as unknown as Buffer;
    expect(insert!.operationType).toBe('insert');
    expect(insert!.fullDocument).toBeInstanceOf(RawDocument);
    const raw = (insert!.fullDocument as RawDocument).bytes;
    expect(Buffer.compare(raw, BSON.serialize(document))).toBe(0);
    expect(insert!.documentKey!._id).toBeInstanceOf(Int32);
    expect(update!.operationType).toBe('update');
    expect(update!.fullDocument).toBeUndefined();
    expect(update!.updateDescription!.updatedFields!.b).toEqual(new Double(4));
    expect(update!.updateDescription!.updatedFields!.b).toBeInstanceOf(Double);
    // The source now holds the update: its bytes differ from the insert's by that value only.
    expect(BSON.deserialize(stored, { promoteValues: false }).b).toEqual(new Double(4));
  });

  it('moves its position forward on an idle stream', async () => {
    const cursor = await openAt(await now());
    const first = await cursor.next();
    await client.db('feed').collection<{ _id: number }>(`${coll}_other`).insertOne({ _id: 1 });
    let later = await cursor.next();
    for (let i = 0; i < 20 && (later.events.length > 0 || !later.highWaterTime); i++)
      later = await cursor.next();
    expect(first.resumeToken).toBeDefined();
    expect(later.highWaterTime).toBeDefined();
    expect(later.highWaterTime!.compare(first.highWaterTime ?? new Timestamp({ t: 0, i: 0 }))).toBe(
      1,
    );
  });

  it('resumes after a resumable getMore error: nothing lost, nothing repeated', async () => {
    const c = client.db('feed').collection<{ _id: number }>(coll);
    const cursor = await openAt(await now());
    await c.insertMany([{ _id: 1 }, { _id: 2 }]);
    expect((await read(cursor, 2)).map((e) => Number(documentOf(e.fullDocument!)._id))).toEqual([
      1, 2,
    ]);
    // HostUnreachable: mongod labels it ResumableChangeStreamError on a change stream getMore.
    await client.db('admin').command({
      configureFailPoint: 'failGetMoreAfterCursorCheckout',
      mode: { times: 1 },
      data: { errorCode: 6 },
    });
    await c.insertMany([{ _id: 3 }, { _id: 4 }]);
    const after = await read(cursor, 2);
    expect(after.map((e) => Number(documentOf(e.fullDocument!)._id))).toEqual([3, 4]);
    await c.insertOne({ _id: 5 });
    expect((await read(cursor, 1)).map((e) => Number(documentOf(e.fullDocument!)._id))).toEqual([
      5,
    ]);
  });

  it('resumes after a network error on a getMore', async () => {
    const c = client.db('feed').collection<{ _id: number }>(coll);
    const cursor = await openAt(await now());
    await c.insertOne({ _id: 1 });
    expect(await read(cursor, 1)).toHaveLength(1);
    await client.db('admin').command({
      configureFailPoint: 'failCommand',
      mode: { times: 1 },
      data: { failCommands: ['getMore'], closeConnection: true },
    });
    await c.insertOne({ _id: 2 });
    expect((await read(cursor, 1)).map((e) => Number(documentOf(e.fullDocument!)._id))).toEqual([
      2,
    ]);
  });

  it('throws an error that is not resumable', async () => {
    const cursor = await openAt(await now());
    await cursor.next();
    await client.db('admin').command({
      configureFailPoint: 'failGetMoreAfterCursorCheckout',
      mode: { times: 1 },
      data: { errorCode: 2 },
    });
    await expect(cursor.next()).rejects.toMatchObject({ code: 2 });
  });

  it('reports a start point gone from the oplog as HistoryLostError', async () => {
    const cursor = await openAt(new Timestamp({ t: 1, i: 1 }));
    await expect(cursor.next()).rejects.toBeInstanceOf(HistoryLostError);
  });
});
