import { startReplicaSet } from '@sync/mongo-emulator';
import { MongoClient } from 'mongodb';
import { uuidHex } from '@sync/engine';
import { RawDocument, documentOf } from '@sync/engine/apply';
import { MongoDocumentLookup } from './change-lookup';

describe('MongoDocumentLookup by collection UUID (real driver, emulated replica set)', () => {
  let rs: Awaited<ReturnType<typeof startReplicaSet>>;
  let client: MongoClient;

  beforeAll(async () => {
    rs = await startReplicaSet();
    client = await new MongoClient(rs.uri).connect();
  });

  afterAll(async () => {
    await client?.close();
    await rs?.stop();
  });

  it('follows a renamed collection and never reads another one that took its name', async () => {
    const db = client.db('shop');
    await db.collection<{ _id: number; v: string }>('A').insertOne({ _id: 1, v: 'original' });
    const [info] = await db.listCollections({ name: 'A' }).toArray();
    const uuid = uuidHex((info as { info?: { uuid?: unknown } }).info?.uuid)!;
    await db.collection('A').rename('B');
    await db.collection<{ _id: number; v: string }>('A').insertOne({ _id: 1, v: 'impostor' });
    const lookup = new MongoDocumentLookup(client);
    const ns = { db: 'shop', coll: 'A' };
    const found = await lookup.findByKey(ns, { _id: 1 }, uuid);
    // The document's own bytes, as stored.
    expect(found).toBeInstanceOf(RawDocument);
    const stored = (await db
      .collection('B')
      .findOne({ _id: 1 } as never, { raw: true })) as unknown as Buffer;
    expect(Buffer.compare((found as RawDocument).bytes, stored)).toBe(0);
    expect(documentOf(found!)).toMatchObject({ v: 'original' });
    await db.collection('B').drop();
    expect(await lookup.findByKey(ns, { _id: 1 }, uuid)).toBeNull();
    // Without a UUID (sources before 6.0) the name is all there is.
    expect(documentOf((await lookup.findByKey(ns, { _id: 1 }))!)).toMatchObject({ v: 'impostor' });
    expect(await lookup.findByKey(ns, { _id: 2 })).toBeNull();
  });
});
