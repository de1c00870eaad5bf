import { startReplicaSet } from '@sync/mongo-emulator';
import { MongoClient, Timestamp } from 'mongodb';
import { MongoSourceCluster } from './mongo-source-cluster';

type Cluster = Awaited<ReturnType<typeof startReplicaSet>>;

/**
 * The commit's last check (`sourceQuiet`): which user writes reached the source after the
 * commit point — through the real driver against the emulator.
 */
describe('MongoSourceCluster.writesAfter (emulator, real driver)', () => {
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
});
