import { MongoClient } from 'mongodb';
import { startShardedCluster, type EmulatedShardedCluster } from '@sync/mongo-emulator';
import { MongoSourceCluster } from './mongo-source-cluster';
import { ShardConnections, shardConnectionString } from './shard-connections';

describe('shardConnectionString', () => {
  it("keeps the router's credentials and options, names the shard's replica set", () => {
    const uri = shardConnectionString(
      'mongodb://sync%40ops:p%2Fw@router1:27017,router2:27017/?authSource=admin&tls=true&directConnection=false&appName=x',
      'shardA/a1.example:27018,a2.example:27018',
    );
    const parsed = new URL(uri.replace('a1.example:27018,a2.example:27018', 'hosts'));
    expect(uri.startsWith('mongodb://sync%40ops:p%2Fw@a1.example:27018,a2.example:27018/')).toBe(
      true,
    );
    expect(Object.fromEntries(parsed.searchParams)).toEqual({
      authSource: 'admin',
      tls: 'true',
      appName: 'x',
      replicaSet: 'shardA',
    });
  });

  it('gives a shard of a mongodb+srv router TLS explicitly, without SRV options', () => {
    const uri = shardConnectionString(
      'mongodb+srv://u:p@cluster0.example.net/?srvServiceName=mongodb&authSource=admin',
      'shard-0/s0.example.net:27017',
    );
    expect(uri).toBe(
      'mongodb://u:p@s0.example.net:27017/?authSource=admin&tls=true&replicaSet=shard-0',
    );
  });

  it('accepts a standalone shard host (no replica set name)', () => {
    expect(shardConnectionString('mongodb://r:27017', 'h:27018')).toBe('mongodb://h:27018/');
  });
});

describe('historyWindows of a sharded source (through mongos)', () => {
  let cluster: EmulatedShardedCluster;
  let client: MongoClient;
  let shards: ShardConnections;

  beforeAll(async () => {
    cluster = await startShardedCluster({ name: 'hist', shards: 2, mongos: 1 });
    client = await new MongoClient(cluster.uri, { serverSelectionTimeoutMS: 5000 }).connect();
    shards = new ShardConnections(cluster.uri);
  });

  afterAll(async () => {
    await shards?.close();
    await client?.close();
    await cluster?.stop();
  });

  it("reads each shard's oplog window directly, named by shard", async () => {
    await client
      .db('app')
      .collection('t')
      .insertOne({ _id: 1 } as never);
    const windows = await new MongoSourceCluster(client, 'hist', shards).historyWindows();
    expect(windows?.map((w) => w.shard).sort()).toEqual(cluster.shards.map((s) => s._id).sort());
    for (const w of windows!) {
      expect(w.oldest.lessThanOrEqual(w.newest)).toBe(true);
      expect(w.newestWallMs).toBeGreaterThanOrEqual(w.oldestWallMs);
    }
  });

  it('is null (not guarded) without direct shard connections', async () => {
    expect(await new MongoSourceCluster(client, 'hist').historyWindows()).toBeNull();
  });
});
