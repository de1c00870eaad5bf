import type { ChangeStream, Document, MongoClient } from 'mongodb';
import { decodeResumeToken } from '../src/changes/resume-token';
import { TestCluster } from './helpers/cluster';
import { emulatorOnly } from './helpers/real-server';

type TestDoc = { _id: number | string; n?: number };

/**
 * Change events of committed transactions and resuming INSIDE one, as MongoDB documents and
 * implements them:
 * - every event of a transaction carries the commit's clusterTime, its lsid and txnNumber
 *   (change events reference, "clusterTime" / "lsid" / "txnNumber");
 * - a token's txnOpIndex is the operation's index among ALL the transaction's operations,
 *   counting those outside the stream's scope (mongod's TransactionOpIterator increments it
 *   for every applyOps element before the relevance check);
 * - a stream resumed from the k-th event's token returns the events after it and none before
 *   (compareAgainstClientResumeToken: same clusterTime, then txnOpIndex, then documentKey);
 * - the driver's automatic resume after a resumable getMore error uses the last returned
 *   event's token (change streams spec, "Resume Process"), so it too resumes inside.
 */
describe('change streams over committed transactions', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let dbName: string;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect();
    dbName = cluster.dbName('cstxn');
  });
  afterAll(async () => {
    await client.close();
    await cluster.close();
  });

  const coll = (name: string) => client.db(dbName).collection<TestDoc>(name);

  async function take(stream: ChangeStream<TestDoc>, n: number): Promise<Document[]> {
    const out: Document[] = [];
    while (out.length < n) {
      const e = await stream.tryNext();
      if (e) out.push(e);
    }
    return out;
  }

  /** Opens `stream`'s cursor before anything is written. */
  async function opened<T extends ChangeStream<TestDoc>>(stream: T): Promise<T> {
    await stream.tryNext();
    return stream;
  }

  /** A transaction of five operations over two collections: a.1, b.1, a.1 $inc, b.2, a.1 $inc. */
  async function fiveOpTransaction(a: string, b: string): Promise<Document> {
    // Created beforehand: collections the transaction created would add `c` ops to it.
    await client.db(dbName).createCollection(a);
    await client.db(dbName).createCollection(b);
    const session = client.startSession();
    try {
      session.startTransaction();
      await coll(a).insertOne({ _id: 1, n: 0 }, { session });
      await coll(b).insertOne({ _id: 1 }, { session });
      await coll(a).updateOne({ _id: 1 }, { $inc: { n: 1 } }, { session });
      await coll(b).insertOne({ _id: 2 }, { session });
      await coll(a).updateOne({ _id: 1 }, { $inc: { n: 1 } }, { session });
      await session.commitTransaction();
      return session.id!;
    } finally {
      await session.endSession();
    }
  }

  it('resumeAfter the 2nd event of a 5-event transaction returns events 3..5 and nothing before', async () => {
    const stream = await opened(client.db(dbName).watch<TestDoc>());
    const lsid = await fiveOpTransaction('r1a', 'r1b');
    await coll('r1a').insertOne({ _id: 'after' });
    const events = await take(stream, 6);
    await stream.close();

    const inTxn = events.slice(0, 5);
    expect(inTxn.map((e) => [e.ns.coll, e.operationType])).toEqual([
      ['r1a', 'insert'],
      ['r1b', 'insert'],
      ['r1a', 'update'],
      ['r1b', 'insert'],
      ['r1a', 'update'],
    ]);
    for (const e of inTxn) {
      expect(e.clusterTime).toEqual(inTxn[0].clusterTime);
      expect(e.txnNumber).toBe(inTxn[0].txnNumber);
      expect(e.lsid.id.toString('hex')).toBe(lsid.id.toString('hex'));
    }
    expect(events[5].lsid).toBeUndefined();
    expect(events[5].txnNumber).toBeUndefined();
    expect(inTxn.map((e) => decodeResumeToken(e._id).txnOpIndex)).toEqual([0, 1, 2, 3, 4]);

    for (const option of ['resumeAfter', 'startAfter'] as const) {
      const resumed = client.db(dbName).watch<TestDoc>([], { [option]: inTxn[1]._id });
      const rest = await take(resumed, 4);
      await resumed.close();
      expect(rest.map((e) => e._id)).toEqual(events.slice(2).map((e) => e._id));
    }
  });

  it('counts every operation of the transaction in txnOpIndex, also those outside the stream', async () => {
    const stream = await opened(coll('r2a').watch());
    await fiveOpTransaction('r2a', 'r2b');
    await coll('r2a').insertOne({ _id: 'after' });
    const events = await take(stream, 4);
    await stream.close();
    expect(events.slice(0, 3).map((e) => decodeResumeToken(e._id).txnOpIndex)).toEqual([0, 2, 4]);
    expect(events.slice(0, 3).map((e) => e.clusterTime)).toEqual(
      Array(3).fill(events[0].clusterTime),
    );
    // After the 2nd event of this collection (the transaction's 3rd operation): its 5th, then
    // the later write.
    const resumed = coll('r2a').watch([], { resumeAfter: events[1]._id });
    const rest = await take(resumed, 2);
    await resumed.close();
    expect(rest.map((e) => e._id)).toEqual([events[2]._id, events[3]._id]);
    expect(rest[0].updateDescription).toEqual({
      updatedFields: { n: 2 },
      removedFields: [],
      truncatedArrays: [],
    });
  });

  it('reports a batch cut inside a transaction with the last returned event as postBatchResumeToken', async () => {
    const stream = await opened(coll('r3').watch([], { batchSize: 2 }));
    const session = client.startSession();
    session.startTransaction();
    await coll('r3').insertMany(
      [1, 2, 3, 4, 5].map((i) => ({ _id: i })),
      { session },
    );
    await session.commitTransaction();
    await session.endSession();
    const firstTwo = await take(stream, 2);
    // The driver's cached token once the batch is drained is the batch's postBatchResumeToken:
    // it must point at the 2nd event, not past the transaction.
    expect(stream.resumeToken).toEqual(firstTwo[1]._id);
    await stream.close();
    const resumed = coll('r3').watch([], { resumeAfter: stream.resumeToken });
    const rest = await take(resumed, 3);
    await resumed.close();
    expect(rest.map((e) => e.documentKey._id)).toEqual([3, 4, 5]);
  });

  emulatorOnly('fail point on getMore')(
    "the driver's automatic resume after a resumable getMore error continues inside the transaction",
    async () => {
      const stream = await opened(coll('r4').watch([], { batchSize: 2 }));
      const session = client.startSession();
      session.startTransaction();
      await coll('r4').insertMany(
        [1, 2, 3, 4, 5].map((i) => ({ _id: i })),
        { session },
      );
      await session.commitTransaction();
      await session.endSession();
      const firstTwo = await take(stream, 2);
      await client.db('admin').command({
        configureFailPoint: 'failCommand',
        mode: { times: 1 },
        data: { failCommands: ['getMore'], errorCode: 6, errorLabels: ['ResumableChangeStreamError'] },
      });
      const rest = await take(stream, 3);
      await stream.close();
      const off = await client
        .db('admin')
        .command({ configureFailPoint: 'failCommand', mode: 'off' });
      expect(off.count).toBe(1); // the getMore did fail, and the driver resumed
      expect([...firstTwo, ...rest].map((e) => e.documentKey._id)).toEqual([1, 2, 3, 4, 5]);
    },
  );
});
