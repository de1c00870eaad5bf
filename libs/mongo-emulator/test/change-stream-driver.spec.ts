import { Timestamp, type ChangeStreamDocument, type Document, type MongoClient } from 'mongodb';
import { TestCluster } from './helpers/cluster';
import { emulatorOnly } from './helpers/real-server';

/** The official driver's ChangeStream against the emulator over the wire. */
describe('change streams through the mongodb driver', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let drv: string;

  beforeAll(async () => {
    cluster = await TestCluster.start({ historySize: 1000 });
    client = await cluster.connect();
    drv = cluster.dbName('drv');
  });
  afterAll(async () => {
    await cluster.close();
  });

  async function next<T extends Document>(stream: { next(): Promise<T> }): Promise<T> {
    return stream.next();
  }

  it('delivers insert/update/replace/delete with exact shapes', async () => {
    const coll = client.db(drv).collection('crud');
    const stream = coll.watch([], { maxAwaitTimeMS: 200 });
    await stream.tryNext(); // opens the cursor (aggregate) before the writes
    // Ten elements: a truncation diff is then smaller than the new array, so mongod (and we)
    // report truncatedArrays rather than the whole value.
    await coll.insertOne({ _id: 1 as never, a: { b: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] }, c: 1 });
    await coll.updateOne({ _id: 1 as never }, { $set: { 'a.x': 5 }, $unset: { c: '' } });
    await coll.updateOne({ _id: 1 as never }, [{ $set: { 'a.b': [1, 2, 3, 4, 5] } }]);
    await coll.replaceOne({ _id: 1 as never }, { z: true });
    await coll.deleteOne({ _id: 1 as never });

    const insert = await next(stream);
    expect(insert).toMatchObject({
      operationType: 'insert',
      ns: { db: drv, coll: 'crud' },
      documentKey: { _id: 1 },
    });
    expect(insert.clusterTime).toBeInstanceOf(Timestamp);
    expect((insert as Document).wallTime).toBeInstanceOf(Date);
    const update = (await next(stream)) as ChangeStreamDocument & { updateDescription: Document };
    expect(update.operationType).toBe('update');
    expect(update.updateDescription).toEqual({
      updatedFields: { 'a.x': 5 },
      removedFields: ['c'],
      truncatedArrays: [],
    });
    const truncate = (await next(stream)) as ChangeStreamDocument & { updateDescription: Document };
    expect(truncate.operationType).toBe('update');
    expect(truncate.updateDescription.truncatedArrays).toEqual([{ field: 'a.b', newSize: 5 }]);
    expect(await next(stream)).toMatchObject({
      operationType: 'replace',
      fullDocument: { _id: 1, z: true },
    });
    expect(await next(stream)).toMatchObject({ operationType: 'delete', documentKey: { _id: 1 } });
    await stream.close();
  });

  it('resumes from event tokens, the PBRT and operation times', async () => {
    const coll = client.db(drv).collection('resume');
    const stream = coll.watch([], { maxAwaitTimeMS: 100 });
    expect(await stream.tryNext()).toBeNull();
    const idle = stream.resumeToken; // the high-water mark PBRT
    expect(Object.keys(idle as Document)).toEqual(['_data']);
    await coll.insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3 }] as never[]);
    const first = await next(stream);
    await stream.close();

    const ids = async (options: Document) => {
      const s = coll.watch([], { maxAwaitTimeMS: 100, ...options });
      const out: unknown[] = [];
      for (let e = await s.tryNext(); e; e = await s.tryNext())
        out.push((e as Document).documentKey._id);
      await s.close();
      return out;
    };
    expect(await ids({ resumeAfter: idle })).toEqual([1, 2, 3]);
    expect(await ids({ resumeAfter: first._id })).toEqual([2, 3]);
    expect(await ids({ startAfter: first._id })).toEqual([2, 3]);
    expect(await ids({ startAtOperationTime: first.clusterTime })).toEqual([1, 2, 3]);
  });

  it('advances the resume token while idle', async () => {
    const coll = client.db(drv).collection('idle');
    const stream = coll.watch([], { maxAwaitTimeMS: 50 });
    await stream.tryNext();
    const before = (stream.resumeToken as { _data: string })._data;
    await client.db(drv).collection('noise').insertOne({});
    await stream.tryNext();
    const after = (stream.resumeToken as { _data: string })._data;
    expect(after > before).toBe(true);
    await stream.close();
  });

  it('applies user stages and refuses a modified _id', async () => {
    const coll = client.db(drv).collection('stages');
    const stream = coll.watch(
      [{ $match: { 'fullDocument.keep': true } }, { $project: { fullDocument: 1 } }],
      {
        maxAwaitTimeMS: 100,
      },
    );
    await stream.tryNext();
    await coll.insertMany([{ keep: false }, { keep: true, n: 2 }]);
    const event = await next(stream);
    expect(Object.keys(event)).toEqual(['_id', 'fullDocument']);
    expect((event as Document).fullDocument.n).toBe(2);
    await stream.close();

    const bad = coll.watch([{ $project: { _id: 0 } }], { maxAwaitTimeMS: 100 });
    await bad.tryNext();
    await coll.insertOne({});
    await expect(bad.tryNext()).rejects.toMatchObject({ code: 280 });
    await bad.close();

    await expect(coll.watch([{ $group: { _id: null } }]).tryNext()).rejects.toMatchObject({
      code: 20,
    });
  });

  it('invalidates on drop and can start after the invalidate', async () => {
    const db = client.db(drv);
    await db.collection('gone').insertOne({ _id: 1 } as never);
    const stream = db.collection('gone').watch([], { maxAwaitTimeMS: 100 });
    await stream.tryNext();
    await db.collection('gone').drop();
    expect((await next(stream)).operationType).toBe('drop');
    const invalidate = await next(stream);
    expect(invalidate.operationType).toBe('invalidate');
    await expect(
      db.collection('gone').watch([], { resumeAfter: invalidate._id }).tryNext(),
    ).rejects.toMatchObject({ code: 260 });
    const again = db
      .collection('gone')
      .watch([], { startAfter: invalidate._id, maxAwaitTimeMS: 100 });
    await again.tryNext();
    await db.collection('gone').insertOne({ _id: 2 } as never);
    expect(await next(again)).toMatchObject({ operationType: 'insert', documentKey: { _id: 2 } });
    await again.close();
  });

  emulatorOnly('a 3-entry history (historySize); a real oplog is sized in bytes')(
    'reports history loss with ChangeStreamHistoryLost',
    async () => {
      const small = await TestCluster.start({ historySize: 3 });
      try {
        const c = await small.connect();
        const coll = c.db('h').collection('x');
        await coll.insertOne({});
        const start = (await c.db('admin').command({ ping: 1 })).operationTime as Timestamp;
        for (let i = 0; i < 5; i++) await coll.insertOne({});
        const err = await coll
          .watch([], { startAtOperationTime: start })
          .tryNext()
          .catch((e: unknown) => e);
        expect(err).toMatchObject({ code: 286, codeName: 'ChangeStreamHistoryLost' });
        expect(
          (err as { errorLabels?: string[] }).errorLabels ?? [
            ...((err as { errorLabelSet?: Set<string> }).errorLabelSet ?? []),
          ],
        ).toContain('NonResumableChangeStreamError');
      } finally {
        await small.close();
      }
    },
  );
});
