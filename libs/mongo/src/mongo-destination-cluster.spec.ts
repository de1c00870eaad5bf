import { startReplicaSet } from '@sync/mongo-emulator';
import { MongoBulkWriteError, MongoClient, type Document } from 'mongodb';
import { WriteConcernFailedError } from './change-writer';
import { BSON } from 'bson';
import { CopyWriteError, isPermanent } from '@sync/engine';
import { DocumentRejectedError, MongoDestinationCluster } from './mongo-destination-cluster';

type Cluster = Awaited<ReturnType<typeof startReplicaSet>>;

describe('MongoDestinationCluster.insertUnordered (emulator, real driver)', () => {
  let cluster: Cluster;
  let client: MongoClient;
  let destination: MongoDestinationCluster;
  let n = 0;
  let coll: string;

  beforeAll(async () => {
    cluster = await startReplicaSet();
    client = await new MongoClient(cluster.uri, {
      writeConcern: { w: 'majority', j: true },
      retryWrites: true,
    }).connect();
    destination = new MongoDestinationCluster(client, cluster.host);
  });
  beforeEach(async () => {
    coll = `docs${++n}`;
    await client
      .db('copy')
      .collection<{ _id: number }>(coll)
      .insertMany([{ _id: 1 }, { _id: 2 }]);
  });
  afterEach(() => client.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' }));
  afterAll(async () => {
    await client.close();
    await cluster.stop();
  });

  const failNextInsert = (data: Document) =>
    client.db('admin').command({
      configureFailPoint: 'failCommand',
      mode: { times: 1 },
      data: { failCommands: ['insert'], ...data },
    });

  const batch = () => [{ _id: 1 }, { _id: 2 }, { _id: 3 }, { _id: 4 }];

  it.each([
    ['decoded', (docs: Document[]) => destination.insertUnordered('copy', coll, docs)],
    [
      'raw',
      (docs: Document[]) =>
        destination.insertRawUnordered(
          'copy',
          coll,
          docs.map((d) => BSON.serialize(d)),
        ),
    ],
  ])(
    'names the _id of a document the destination rejects, as a permanent failure (%s)',
    async (_path, insert) => {
      const error = await insert([{ _id: 3 }, { _id: [7, 8] }, { _id: 1 }]).catch((e) => e);
      expect(error).toBeInstanceOf(DocumentRejectedError);
      expect(error).toMatchObject({
        name: 'DocumentRejected',
        namespace: `copy.${coll}`,
        code: 53,
      });
      expect(error.message).toBe(
        `document _id [7,8] rejected by copy.${coll}: code 53: The '_id' value cannot be of type array`,
      );
      // the copy stops on it (no retry can fix it), never skipping the document
      expect(isPermanent(new CopyWriteError(`copy.${coll}`, error))).toBe(true);
    },
  );

  it('counts duplicate keys as already copied', async () => {
    await expect(destination.insertUnordered('copy', coll, batch())).resolves.toEqual({
      inserted: 2,
      duplicates: 2,
    });
  });

  it('throws WriteConcernFailedError when a write concern error comes with duplicate keys', async () => {
    await failNextInsert({
      writeConcernError: { code: 64, errmsg: 'waiting for replication timed out' },
    });
    const error = await destination.insertUnordered('copy', coll, batch()).catch((e) => e);
    expect(error).toBeInstanceOf(WriteConcernFailedError);
    expect(error).toMatchObject({
      namespace: `copy.${coll}`,
      serverMessage: 'waiting for replication timed out',
      code: 64,
      isRetryable: true,
    });
    expect(error.cause).toBeInstanceOf(MongoBulkWriteError);
  });

  it('throws WriteConcernFailedError when every document was new', async () => {
    await failNextInsert({ writeConcernError: { code: 100, errmsg: 'unsatisfiable' } });
    const error = await destination
      .insertUnordered('copy', coll, [{ _id: 10 }, { _id: 11 }])
      .catch((e) => e);
    expect(error).toBeInstanceOf(WriteConcernFailedError);
  });

  it('throws when the whole command failed (no per-op errors is not a success)', async () => {
    await failNextInsert({ errorCode: 2 });
    const error = await destination.insertUnordered('copy', coll, batch()).catch((e) => e);
    expect(error).toBeInstanceOf(MongoBulkWriteError);
    expect(error.code).toBe(2);
  });
});
