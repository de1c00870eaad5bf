import { MongoClient, type ChangeStreamDocument, type ResumeToken } from 'mongodb';
import { startShardedCluster, type EmulatedShardedCluster } from '../src';
import { describeEmulatorOnly } from './helpers/real-server';

const suite = describeEmulatorOnly(
  'an emulated sharded cluster; no real sharded cluster is wired into these specs',
);

suite('sharded topology: change streams and write blocking through mongos', () => {
  let cluster: EmulatedShardedCluster;
  let client: MongoClient;

  beforeAll(async () => {
    // No periodic no-op writes: nothing but the test's own writes moves a shard's oplog.
    cluster = await startShardedCluster({
      name: 'cs',
      shards: 3,
      mongos: 2,
      noopIntervalMs: 3_600_000,
    });
    client = new MongoClient(cluster.uri, { serverSelectionTimeoutMS: 5000 });
    await client.connect();
  });

  afterAll(async () => {
    await client?.close();
    await cluster?.stop();
  });

  async function next(
    stream: { tryNext(): Promise<ChangeStreamDocument | null> },
    n: number,
  ): Promise<ChangeStreamDocument[]> {
    const out: ChangeStreamDocument[] = [];
    const deadline = Date.now() + 5000;
    while (out.length < n && Date.now() < deadline) {
      const ev = await stream.tryNext();
      if (ev) out.push(ev);
    }
    return out;
  }

  it('merges a cluster-wide stream over every shard in cluster-time order and resumes', async () => {
    // Three databases -> three different primary shards.
    for (const name of ['m0', 'm1', 'm2']) await client.db(name).createCollection('c');
    const primaries = (
      await client
        .db('config')
        .collection<{ _id: string; primary: string }>('databases')
        .find({ _id: { $in: ['m0', 'm1', 'm2'] } })
        .toArray()
    ).map((d) => d.primary);
    expect(new Set(primaries).size).toBe(3);

    const stream = client.watch([], { maxAwaitTimeMS: 50 });
    await stream.tryNext();
    await client.db('m0').collection<{ _id: number }>('c').insertOne({ _id: 1 });
    await client.db('m1').collection<{ _id: number }>('c').insertOne({ _id: 2 });
    await client.db('m2').collection<{ _id: number }>('c').insertOne({ _id: 3 });
    await client
      .db('m0')
      .collection<{ _id: number; a?: number }>('c')
      .updateOne({ _id: 1 }, { $set: { a: 1 } });
    const events = await next(stream, 4);
    expect(events.map((e) => [e.operationType, 'ns' in e ? e.ns.db : undefined])).toEqual([
      ['insert', 'm0'],
      ['insert', 'm1'],
      ['insert', 'm2'],
      ['update', 'm0'],
    ]);
    const times = events.map((e) => e.clusterTime!);
    for (let i = 1; i < times.length; i++) expect(times[i].greaterThan(times[i - 1])).toBe(true);
    const resumeToken = events[1]._id as ResumeToken;
    await stream.close();

    // Resuming after the second event replays the rest, from all shards.
    const resumed = client.watch([], { resumeAfter: resumeToken, maxAwaitTimeMS: 50 });
    const again = await next(resumed, 2);
    expect(again.map((e) => e.operationType)).toEqual(['insert', 'update']);
    expect(again[0]._id).toEqual(events[2]._id);
    await resumed.close();
  });

  it('a quiet shard does not stall the merged stream', async () => {
    const stream = client.watch([], { maxAwaitTimeMS: 50 });
    await stream.tryNext();
    await client.db('m1').collection<{ _id: number }>('c').insertOne({ _id: 10 });
    // No timing bound (speed is the benchmark's business): the quiet shards write nothing (no
    // periodic no-ops here), so a stream waiting for them would return no event at all.
    const [ev] = await next(stream, 1);
    expect(ev).toMatchObject({ operationType: 'insert', documentKey: { _id: 10 } });
    await stream.close();
  });

  it('a stream on a sharded collection sees every shard, with the shard key in documentKey', async () => {
    await client.db('admin').command({ enableSharding: 'sdb' });
    await client.db('admin').command({ shardCollection: 'sdb.s', key: { k: 'hashed' } });
    const coll = client.db('sdb').collection<{ _id: number; k: number }>('s');
    const stream = coll.watch([], { maxAwaitTimeMS: 50 });
    await stream.tryNext();
    await coll.insertMany([
      { _id: 1, k: 1 },
      { _id: 2, k: -1 },
      { _id: 3, k: 42 },
    ]);
    await coll.deleteOne({ k: 1 });
    const events = await next(stream, 4);
    expect(events.map((e) => e.operationType)).toEqual(['insert', 'insert', 'insert', 'delete']);
    expect(events.map((e) => ('documentKey' in e ? e.documentKey : undefined))).toEqual([
      { k: 1, _id: 1 },
      { k: -1, _id: 2 },
      { k: 42, _id: 3 },
      { k: 1, _id: 1 },
    ]);
    await stream.close();
  });

  it('shardCollection is reported once, with its key, to expanded-event streams only', async () => {
    const expanded = client.watch([], { maxAwaitTimeMS: 50, showExpandedEvents: true });
    const plain = client.watch([], { maxAwaitTimeMS: 50 });
    await expanded.tryNext();
    await plain.tryNext();
    await client.db('sc').collection<{ _id: number }>('t').insertOne({ _id: 1 });
    await client.db('admin').command({ shardCollection: 'sc.t', key: { _id: 1 } });
    await client.db('sc').collection<{ _id: number }>('t').insertOne({ _id: 2 });
    const seen = await next(expanded, 4);
    const types = seen.map((e) => e.operationType);
    expect(types.filter((t) => t === 'shardCollection')).toHaveLength(1);
    const event = seen.find((e) => e.operationType === 'shardCollection') as unknown as {
      ns: unknown;
      collectionUUID: unknown;
      operationDescription: Record<string, unknown>;
    };
    expect(event.ns).toEqual({ db: 'sc', coll: 't' });
    expect(event.collectionUUID).toBeDefined();
    expect(event.operationDescription).toMatchObject({
      shardKey: { _id: 1 },
      unique: false,
      presplitHashedZones: false,
    });
    const plainTypes = (await next(plain, 2)).map((e) => e.operationType);
    expect(plainTypes).toEqual(['insert', 'insert']);
    await expanded.close();
    await plain.close();
  });

  it('a sharded collection spread over every shard is dropped with ONE drop event', async () => {
    // Empty and hashed: presplit over all three shards.
    await client.db('dd').collection<{ _id: number }>('u').insertOne({ _id: 0 });
    await client.db('admin').command({ shardCollection: 'dd.t', key: { _id: 'hashed' } });
    await client
      .db('dd')
      .collection<{ _id: number }>('t')
      .insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: i + 1 })));
    const holders = await Promise.all(
      cluster.shards.map(async (shard) => {
        const direct = await new MongoClient(shard.uri).connect();
        try {
          return await direct.db('dd').collection('t').countDocuments();
        } finally {
          await direct.close();
        }
      }),
    );
    expect(holders.every((n) => n > 0)).toBe(true);
    const stream = client.watch([], { maxAwaitTimeMS: 50 });
    await stream.tryNext();
    await client.db('dd').collection('t').drop();
    await client.db('dd').dropDatabase();
    const seen = (await next(stream, 3)).map((e) =>
      e.operationType === 'drop' ? `drop ${(e.ns as { coll: string }).coll}` : e.operationType,
    );
    expect(seen.filter((t) => t === 'drop t')).toHaveLength(1);
    expect(seen.filter((t) => t === 'dropDatabase')).toHaveLength(1);
    expect(seen).toEqual(['drop t', 'drop u', 'dropDatabase']);
    expect(await stream.tryNext()).toBeNull();
    await stream.close();
  });

  it('setUserWriteBlockMode through mongos blocks writes on every shard', async () => {
    await client.db('admin').command({ setUserWriteBlockMode: 1, global: true });
    try {
      for (const shard of cluster.shards)
        expect(shard.replicaSet.node.userWriteBlocking).toBe(true);
    } finally {
      await client.db('admin').command({ setUserWriteBlockMode: 1, global: false });
    }
    for (const shard of cluster.shards) expect(shard.replicaSet.node.userWriteBlocking).toBe(false);
  });
});
