import { MongoClient, type Document, type ServerDescriptionChangedEvent } from 'mongodb';
import { TestCluster } from './helpers/cluster';
import { describeEmulatorOnly } from './helpers/real-server';

const suite = describeEmulatorOnly('configureFailPoint failCommand: a test command');

/** mongod's NotPrimaryError category: these replies carry the node's topologyVersion. */
const NOT_PRIMARY = [10107, 13435, 13436, 189, 11602];
/** Other state-change and ordinary codes: no topologyVersion (the node is not in quiesce mode). */
const OTHERS = [91, 11600, 1, 6];

/**
 * mongod appends its current topologyVersion to NotPrimary errors, those made by `failCommand`
 * included (jstests/replsets/notprimary_errors_return_topology_version.js). A driver holding that
 * same topologyVersion treats the error as stale and keeps the primary selectable.
 */
suite('NotPrimary errors carry the topologyVersion', () => {
  let cluster: TestCluster;
  let client: MongoClient;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect({ retryWrites: false, retryReads: false });
  });
  afterEach(() => client.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' }));
  afterAll(() => cluster.close());

  async function failInsert(data: Document): Promise<Document> {
    await client.db('admin').command({
      configureFailPoint: 'failCommand',
      mode: { times: 1 },
      data: { failCommands: ['insert'], ...data },
    });
    return client
      .db('tv')
      .command({ insert: 'c', documents: [{ x: 1 }] })
      .then(
        (reply) => reply,
        (e: Document) => e,
      );
  }

  it.each(NOT_PRIMARY)('errorCode %i: the reply has the current topologyVersion', async (code) => {
    const hello = await client.db('admin').command({ hello: 1 });
    const e = await failInsert({ errorCode: code });
    expect(e.code).toBe(code);
    expect(e.topologyVersion).toEqual(hello.topologyVersion);
  });

  it.each(NOT_PRIMARY)('writeConcernError %i: the reply has the topologyVersion', async (code) => {
    const hello = await client.db('admin').command({ hello: 1 });
    // the driver throws a MongoWriteConcernError that holds the whole reply
    const e = await failInsert({ writeConcernError: { code, errmsg: 'dummy' } });
    expect(e.errorResponse.writeConcernError.code).toBe(code);
    expect(e.errorResponse.topologyVersion).toEqual(hello.topologyVersion);
  });

  it.each(OTHERS)('errorCode %i: no topologyVersion', async (code) => {
    const e = await failInsert({ errorCode: code });
    expect(e.code).toBe(code);
    expect(e).not.toHaveProperty('topologyVersion');
  });

  it('the driver keeps the primary selectable after a NotWritablePrimary from failCommand', async () => {
    const changes: ServerDescriptionChangedEvent[] = [];
    const listener = (ev: ServerDescriptionChangedEvent) => changes.push(ev);
    client.on('serverDescriptionChanged', listener);
    try {
      const e = await failInsert({ errorCode: 10107 });
      expect(e.code).toBe(10107);
      await client.db('tv').collection('c').insertOne({ after: 1 });
      expect(changes.filter((ev) => ev.newDescription.type === 'Unknown')).toEqual([]);
    } finally {
      client.off('serverDescriptionChanged', listener);
    }
  });
});
