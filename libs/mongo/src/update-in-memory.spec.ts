import { startReplicaSet } from '@sync/mongo-emulator';
import { applyUpdateInMemory } from '@sync/engine/apply';
import { BSON } from 'bson';
import { MongoClient } from 'mongodb';
import { IN_MEMORY_UPDATE_CASES } from '../../engine/src/apply/update-in-memory.vectors';

type Cluster = Awaited<ReturnType<typeof startReplicaSet>>;

/**
 * The engine's in-memory update (coalescing an insert with the updates after it) against the
 * destination's own update engine: every case the engine reproduces gives the same bytes as the
 * same document updated by the server.
 */
describe('applyUpdateInMemory against the emulator', () => {
  let cluster: Cluster;
  let client: MongoClient;

  beforeAll(async () => {
    cluster = await startReplicaSet();
    client = await MongoClient.connect(cluster.uri);
  });

  afterAll(async () => {
    await client?.close();
    await cluster?.stop();
  });

  const reproduced = IN_MEMORY_UPDATE_CASES.filter((c) => c.expected !== null);
  it.each(reproduced.map((c, i) => [c.name, c, i] as const))('%s', async (_name, c, i) => {
    const coll = client.db('inmem').collection(`c${i}`);
    await coll.insertOne(c.doc);
    await coll.updateOne({ _id: c.doc._id }, c.update);
    const raw = (await coll.findOne({ _id: c.doc._id }, { raw: true })) as unknown as Buffer;
    const mine = applyUpdateInMemory(c.doc, c.update);
    expect(Buffer.from(BSON.serialize(mine!)).toString('hex')).toBe(
      Buffer.from(raw).toString('hex'),
    );
  });
});
