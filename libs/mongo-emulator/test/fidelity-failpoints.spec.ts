import { MongoClient, type ChangeStream, type CommandStartedEvent, type Document } from 'mongodb';
import { TestCluster } from './helpers/cluster';
import { describeEmulatorOnly } from './helpers/real-server';

const suite = describeEmulatorOnly(
  'configureFailPoint failGetMoreAfterCursorCheckout: a test command, and state shared by every client of a real server',
);

/** mongod's failGetMoreAfterCursorCheckout fail point (getmore_cmd.cpp), through the driver. */
suite('fidelity: failGetMoreAfterCursorCheckout', () => {
  let cluster: TestCluster;
  let client: MongoClient;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect({ monitorCommands: true });
  });
  afterEach(() =>
    client
      .db('admin')
      .command({ configureFailPoint: 'failGetMoreAfterCursorCheckout', mode: 'off' }),
  );
  afterAll(() => cluster.close());

  it('fails a query getMore with the code and message, and kills the cursor', async () => {
    const coll = client.db('fp').collection('docs');
    await coll.insertMany([{ a: 1 }, { a: 2 }, { a: 3 }]);
    const first = await client.db('fp').command({ find: 'docs', batchSize: 1 });
    const id = first.cursor.id;
    await client.db('admin').command({
      configureFailPoint: 'failGetMoreAfterCursorCheckout',
      mode: { times: 1 },
      data: { errorCode: 50 },
    });
    const e = await client
      .db('fp')
      .command({ getMore: id, collection: 'docs' })
      .catch((x: Document) => x);
    expect(e).toMatchObject({
      code: 50,
      codeName: 'MaxTimeMSExpired',
      message: "Hit the 'failGetMoreAfterCursorCheckout' failpoint",
    });
    const again = await client
      .db('fp')
      .command({ getMore: id, collection: 'docs' })
      .catch((x: Document) => x);
    expect(again).toMatchObject({ code: 43 });
  });

  it('without errorCode fails with 1 InternalError', async () => {
    await client
      .db('fp')
      .collection('d2')
      .insertMany([{ a: 1 }, { a: 2 }]);
    const first = await client.db('fp').command({ find: 'd2', batchSize: 1 });
    await client.db('admin').command({
      configureFailPoint: 'failGetMoreAfterCursorCheckout',
      mode: { times: 1 },
      data: {},
    });
    const e = await client
      .db('fp')
      .command({ getMore: first.cursor.id, collection: 'd2' })
      .catch((x: Document) => x);
    expect(e).toMatchObject({ code: 1, codeName: 'InternalError' });
  });

  it('a change stream resumes after a resumable code (change-streams-resume-errorLabels)', async () => {
    const coll = client.db('fp').collection('cs');
    await coll.insertOne({ warm: 1 });
    const started: CommandStartedEvent[] = [];
    const listener = (ev: CommandStartedEvent) => started.push(ev);
    client.on('commandStarted', listener);
    await client.db('admin').command({
      configureFailPoint: 'failGetMoreAfterCursorCheckout',
      mode: { times: 1 },
      data: { errorCode: 6, closeConnection: false },
    });
    const stream: ChangeStream = coll.watch([]);
    try {
      const next = stream.next();
      await coll.insertOne({ x: 1 });
      const change = (await next) as Document;
      expect(change).toMatchObject({ operationType: 'insert', fullDocument: { x: 1 } });
      const aggregates = started.filter((e) => e.commandName === 'aggregate');
      expect(aggregates.length).toBe(2); // the original and the resume
    } finally {
      client.off('commandStarted', listener);
      await stream.close();
    }
  });

  it('a non-resumable code is returned to the application', async () => {
    const coll = client.db('fp').collection('cs2');
    await client.db('admin').command({
      configureFailPoint: 'failGetMoreAfterCursorCheckout',
      mode: { times: 1 },
      data: { errorCode: 280 },
    });
    const stream: ChangeStream = coll.watch([]);
    try {
      const next = stream.next().catch((x: Document) => x);
      await coll.insertOne({ x: 1 });
      const e = (await next) as Document;
      expect(e).toMatchObject({ code: 280 });
      expect(e.errorLabels).toContain('NonResumableChangeStreamError');
    } finally {
      await stream.close();
    }
  });
});
