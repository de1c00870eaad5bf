import { Int32, type Document } from 'bson';
import type { SyncJob } from '@sync/engine';
import { describeOn, testDb } from '../helpers/real-clusters';
import {
  commitAndWait,
  crashableEngine,
  engineFor,
  expectEqualClusters,
  request,
  startAuthClusters,
  waitFor,
  type AuthClusters,
} from './sync-helpers';

type AnyDoc = { _id: unknown } & Document;

/** `count` documents tagged with their collection of origin. */
async function fill(c: AuthClusters, coll: string, count: number, tag = coll): Promise<void> {
  const docs = Array.from({ length: count }, (_, i) => ({
    _id: new Int32(i),
    origin: tag,
    pad: 'p'.repeat(150),
  }));
  for (let i = 0; i < docs.length; i += 500) {
    await c.appSrc
      .db(testDb('shop'))
      .collection<AnyDoc>(coll)
      .insertMany(docs.slice(i, i + 500));
  }
}

async function origins(c: AuthClusters, coll: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const d of await c.dst.db(testDb('shop')).collection<AnyDoc>(coll).find().toArray()) {
    out[String(d.origin)] = (out[String(d.origin)] ?? 0) + 1;
  }
  return out;
}

const rename = (c: AuthClusters, from: string, to: string, dropTarget = false) =>
  c.src.db(testDb('shop')).collection(from).rename(to, { dropTarget });

describeOn('replicaSets')('DDL by collection UUID, exactly once (authentication on)', () => {
  let c: AuthClusters;
  const jobs: SyncJob[] = [];

  afterEach(async () => {
    for (const job of jobs.splice(0)) await job.close().catch(() => undefined);
    await c.close();
  });

  it('a rename swap during the copy (A → A_old, C → A) keeps each collection under its new name', async () => {
    c = await startAuthClusters();
    await fill(c, 'A', 3000);
    await fill(c, 'C', 1500);
    const job = await engineFor(c);
    jobs.push(job);
    await job.start(request());
    // Listed already (start returned): the swap happens while the copy reads.
    await rename(c, 'A', 'A_old');
    await rename(c, 'C', 'A');
    await c.appSrc
      .db(testDb('shop'))
      .collection<AnyDoc>('A')
      .insertOne({ _id: 'new', origin: 'C' });
    await c.appSrc
      .db(testDb('shop'))
      .collection<AnyDoc>('A_old')
      .insertOne({ _id: 'new', origin: 'A' });
    await commitAndWait(job);
    await expectEqualClusters(c);
    expect(await origins(c, 'A')).toEqual({ C: 1501 });
    expect(await origins(c, 'A_old')).toEqual({ A: 3001 });
    const names = await c.dst.db(testDb('shop')).listCollections({}, { nameOnly: true }).toArray();
    expect(names.map((n) => n.name).sort()).toEqual(['A', 'A_old']);
  });

  it('a rename swap during change event application, with writes before and after', async () => {
    c = await startAuthClusters();
    await fill(c, 'A', 800);
    await fill(c, 'C', 400);
    const job = await engineFor(c);
    jobs.push(job);
    await job.start(request());
    await waitFor(() => job.progress().canCommit === true, 30_000, 'canCommit');
    const shop = c.appSrc.db(testDb('shop'));
    await shop.collection<AnyDoc>('A').updateMany({}, { $set: { before: true } });
    await rename(c, 'A', 'A_old');
    await rename(c, 'C', 'A');
    await shop.collection<AnyDoc>('A').updateMany({}, { $set: { after: true } });
    await shop.collection('A_old').deleteMany({ _id: { $lt: new Int32(100) } } as Document);
    await commitAndWait(job);
    await expectEqualClusters(c);
    expect(await origins(c, 'A')).toEqual({ C: 400 });
    expect(await origins(c, 'A_old')).toEqual({ A: 700 });
  });

  it('drop and re-create with the same name never mixes the two collections', async () => {
    c = await startAuthClusters();
    await fill(c, 'A', 500, 'first');
    const job = await engineFor(c);
    jobs.push(job);
    await job.start(request());
    await waitFor(() => job.progress().canCommit === true, 30_000, 'canCommit');
    const shop = c.appSrc.db(testDb('shop'));
    await shop.collection<AnyDoc>('A').updateMany({}, { $set: { touched: 1 } });
    await c.src.db(testDb('shop')).collection('A').drop();
    await fill(c, 'A', 200, 'second');
    await shop.collection<AnyDoc>('A').updateMany({}, { $set: { touched: 2 } });
    await commitAndWait(job);
    await expectEqualClusters(c);
    expect(await origins(c, 'A')).toEqual({ second: 200 });
  });

  it('index and collMod DDL later dropped or redefined is applied once, also across a crash', async () => {
    c = await startAuthClusters();
    await fill(c, 'A', 1000);
    await fill(c, 'B', 200);
    const first = await crashableEngine(c);
    jobs.push(first.job);
    await first.job.start(request());
    const a = c.src.db(testDb('shop')).collection('A');
    // While the copy runs: an index defined, modified, dropped and redefined differently; a
    // collection whose index is built and then the collection itself dropped.
    await a.createIndex({ k: 1 }, { name: 'k_1', unique: true, sparse: true });
    await c.src.db(testDb('shop')).command({ collMod: 'A', index: { name: 'k_1', hidden: true } });
    await a.dropIndex('k_1');
    await a.createIndex({ k: -1, z: 1 }, { name: 'k_1', sparse: true });
    await c.src
      .db(testDb('shop'))
      .command({ collMod: 'A', validator: { origin: { $type: 'string' } } });
    await c.src.db(testDb('shop')).collection('B').createIndex({ w: 1 }, { name: 'w_1' });
    await c.src.db(testDb('shop')).collection('B').drop();
    await waitFor(() => first.job.progress().canCommit === true, 30_000, 'canCommit');
    await first.crash(); // the resume point may be behind every one of those DDL events
    await a.createIndex({ q: 1 }, { name: 'q_1', expireAfterSeconds: 60 });
    const second = await engineFor(c);
    jobs.push(second);
    await commitAndWait(second);
    await expectEqualClusters(c);
    const indexes = await c.dst.db(testDb('shop')).collection('A').listIndexes().toArray();
    expect(indexes.find((i) => i.name === 'k_1')).toMatchObject({
      key: { k: -1, z: 1 },
      sparse: true,
    });
    expect(indexes.find((i) => i.name === 'q_1')).toMatchObject({ expireAfterSeconds: 60 });
    const collections = await c.dst
      .db(testDb('shop'))
      .listCollections({}, { nameOnly: true })
      .toArray();
    expect(collections.map((x) => x.name)).toEqual(['A']);
  });

  it('a collection renamed into the filter while a commit is requested is copied before the commit ends', async () => {
    c = await startAuthClusters();
    await fill(c, 'items', 300);
    await fill(c, 'staging', 3000);
    const job = await engineFor(c);
    jobs.push(job);
    await job.start(
      request({
        includeNamespaces: [{ database: testDb('shop'), collections: ['items', 'moved'] }],
      }),
    );
    await waitFor(() => job.progress().canCommit === true, 30_000, 'canCommit');
    await rename(c, 'staging', 'moved');
    await c.appSrc
      .db(testDb('shop'))
      .collection<AnyDoc>('moved')
      .insertOne({ _id: 'late', origin: 'staging' });
    // canCommit may still be true for a moment (the rename not yet read): the commit must then
    // wait for the copy it triggers, and never end without the moved collection.
    let accepted = false;
    try {
      await job.commit();
      accepted = true;
    } catch (error) {
      expect((error as { error?: string }).error).toBe('CommitNotReady');
    }
    if (!accepted) await commitAndWait(job);
    await waitFor(
      () => job.progress().state === 'COMMITTED',
      60_000,
      'COMMITTED',
      () => JSON.stringify(job.progress()),
    );
    await expectEqualClusters(c);
    expect(await origins(c, 'moved')).toEqual({ staging: 3001 });
  });
});
