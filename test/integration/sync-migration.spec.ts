import { Decimal128, Double, Int32, Long, type Document } from 'bson';
import type { SyncJob } from '@sync/engine';
import { describeOn, testDb } from '../helpers/real-clusters';
import {
  commitAndWait,
  engineFor,
  expectEqualClusters,
  request,
  startAuthClusters,
  waitFor,
  writeError,
  type AuthClusters,
} from './sync-helpers';

type AnyDoc = { _id: unknown } & Document;
const USER_WRITES_BLOCKED = 371; // UserWritesBlocked (error_codes.yml)

async function seed(c: AuthClusters): Promise<void> {
  const shop = c.appSrc.db(testDb('shop'));
  await shop.createCollection('items');
  const items = shop.collection<AnyDoc>('items');
  await items.createIndex({ sku: 1 }, { unique: true, name: 'sku_1' });
  await items.createIndex({ at: 1 }, { expireAfterSeconds: 3600, name: 'at_1' });
  await items.createIndex({ tag: 1 }, { hidden: true, name: 'tag_1' });
  // Unique with options after `unique`: relaxed during the sync, made unique again by collMod
  // at commit, which lists `unique` last on the destination (as mongod does).
  await items.createIndex(
    { label: 1 },
    { unique: true, sparse: true, collation: { locale: 'fr', strength: 2 }, name: 'label_fr' },
  );
  await items.insertMany(
    Array.from({ length: 600 }, (_, i) => ({
      _id: new Int32(i),
      sku: `sku-${i}`,
      n: new Int32(i),
      l: Long.fromNumber(i),
      d: new Double(i + 0.5),
      dec: Decimal128.fromString(`${i}.10`),
      nested: { a: { b: i, keep: 'x' } },
      arr: [1, 2, 3, 4, 5],
      pad: 'p'.repeat(100),
    })),
  );
  await c.appSrc
    .db(testDb('crm'))
    .collection<AnyDoc>('people')
    .insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: `p${i}`, v: i })));
}

/** A mixed application workload on the source (the app user). */
async function workload(c: AuthClusters, round: number, from: number, to: number): Promise<void> {
  const items = c.appSrc.db(testDb('shop')).collection<AnyDoc>('items');
  for (let i = from; i < to; i++) {
    const _id = new Int32(i);
    switch (i % 9) {
      case 0:
        await items.updateOne({ _id }, { $set: { 'nested.a.b': round, 'nested.z': true } });
        break;
      case 1:
        await items.updateOne({ _id }, { $unset: { 'nested.a.keep': '' } });
        break;
      case 2:
        await items.updateOne(
          { _id },
          {
            $inc: {
              n: new Int32(2),
              l: Long.fromNumber(3),
              d: new Double(0.25),
              dec: Decimal128.fromString('0.01'),
            },
          },
        );
        break;
      case 3:
        await items.updateOne({ _id }, { $push: { arr: round } } as Document);
        break;
      case 4:
        await items.updateOne({ _id }, { $pull: { arr: 2 } } as Document);
        break;
      case 5:
        await items.updateOne({ _id }, { $pop: { arr: -1 } });
        break;
      case 6:
        await items.updateOne({ _id }, [{ $set: { arr: { $slice: ['$arr', 2] } } }]);
        break;
      case 7:
        await items.replaceOne({ _id }, { sku: `sku-${i}`, replaced: round });
        break;
      case 8:
        await items.deleteOne({ _id });
        break;
    }
  }
  await items.insertOne({ _id: new Int32(10_000 + round), sku: `new-${round}`, round });
}

describeOn('replicaSets')('replica set → replica set sync (authentication on)', () => {
  let c: AuthClusters;
  let job: SyncJob | null = null;

  beforeEach(async () => {
    c = await startAuthClusters();
    await seed(c);
  });
  afterEach(async () => {
    await job?.close();
    job = null;
    await c.close();
  });

  it('copies, follows CRUD and DDL, blocks writes, commits exactly', async () => {
    job = await engineFor(c);
    await job.start(request({ enableUserWriteBlocking: true }));
    expect(job.state).toBe('RUNNING');
    // writes during the copy
    await workload(c, 1, 0, 300);
    // the destination refuses application writes during the sync
    await waitFor(async () => {
      const code = await writeError(() =>
        c.appDst
          .db(testDb('shop'))
          .collection<AnyDoc>('items')
          .insertOne({ _id: 'intruder', sku: 'intruder' }),
      );
      return code === USER_WRITES_BLOCKED;
    });
    await waitFor(() => job!.progress().info === 'change event application', 30_000, 'copy');
    // writes and DDL after the copy
    await workload(c, 2, 300, 600);
    const shop = c.appSrc.db(testDb('shop'));
    await shop.createCollection('fresh');
    await shop.collection<AnyDoc>('fresh').insertMany([{ _id: 1 }, { _id: 2, x: new Int32(2) }]);
    await shop.collection<AnyDoc>('fresh').createIndex({ x: 1 }, { unique: true, name: 'x_1' });
    await shop.collection<AnyDoc>('fresh').rename('renamed');
    await c.appSrc.db(testDb('crm')).collection<AnyDoc>('people').rename('contacts');
    await shop.collection<AnyDoc>('scratch').insertOne({ _id: 1 });
    await shop.collection<AnyDoc>('scratch').drop();
    await c.appSrc.db(testDb('tmp')).collection<AnyDoc>('t').insertOne({ _id: 1 });
    await c.src.db(testDb('tmp')).dropDatabase(); // dropDatabase needs more than readWriteAnyDatabase

    await waitFor(() => job!.progress().canCommit === true, 30_000, 'canCommit');
    const running = job.progress();
    expect(running).toMatchObject({ state: 'RUNNING', canWrite: false });
    expect(running.lagTimeSeconds).toBeLessThanOrEqual(2);
    expect(running.totalEventsApplied).toBeGreaterThan(0);

    await job.commit();
    expect(['COMMITTING', 'COMMITTED']).toContain(job.state);
    await waitFor(() => job!.progress().state === 'COMMITTED', 30_000, 'COMMITTED');
    expect(job.progress()).toMatchObject({
      canWrite: true,
      lagTimeSeconds: 0,
      info: 'commit completed',
      canCommit: false,
    });
    await expectEqualClusters(c);
    const unique = await c.dst.db(testDb('shop')).collection('items').listIndexes().toArray();
    expect(unique.find((i) => i.name === 'sku_1')?.unique).toBe(true);
    expect(unique.find((i) => i.name === 'tag_1')?.hidden).toBe(true);

    // after commit: the source refuses application writes, the destination accepts them
    expect(
      await writeError(() =>
        c.appSrc
          .db(testDb('shop'))
          .collection<AnyDoc>('items')
          .insertOne({ _id: 'late', sku: 'late' }),
      ),
    ).toBe(USER_WRITES_BLOCKED);
    expect(
      await writeError(() =>
        c.appDst
          .db(testDb('shop'))
          .collection<AnyDoc>('items')
          .insertOne({ _id: 'late', sku: 'late' }),
      ),
    ).toBeNull();
    await c.src.db('admin').command({ setUserWriteBlockMode: 1, global: false });
  });

  it('pause keeps the position (also across a restart) and resume continues from it', async () => {
    job = await engineFor(c);
    await job.start(request({ enableUserWriteBlocking: false }));
    await waitFor(() => job!.progress().canCommit === true, 30_000, 'canCommit');
    await workload(c, 1, 0, 100);
    await job.pause();
    expect(job.progress()).toMatchObject({ state: 'PAUSED', lagTimeSeconds: null });
    await workload(c, 2, 100, 250);
    await job.close();
    job = await engineFor(c);
    expect(job.state).toBe('PAUSED');
    await job.resume();
    await workload(c, 3, 250, 400);
    await commitAndWait(job);
    await expectEqualClusters(c);
  });

  it('reverse carries writes on the new source back, then a second commit hands back', async () => {
    job = await engineFor(c);
    await job.start(request({ reversible: true, enableUserWriteBlocking: true }));
    await workload(c, 1, 0, 90);
    await commitAndWait(job);
    await expectEqualClusters(c);
    await job.reverse();
    expect(job.progress()).toMatchObject({
      state: 'RUNNING',
      canWrite: false,
      info: 'change event application',
    });
    // the application now writes to the old destination; the old source stays blocked for it
    const items = c.appDst.db(testDb('shop')).collection<AnyDoc>('items');
    await items.updateOne({ _id: new Int32(10) }, { $set: { back: true } });
    await items.insertOne({ _id: 'reverse-1', sku: 'rev-1', v: new Int32(1) });
    await items.deleteOne({ _id: new Int32(11) });
    expect(
      await writeError(() =>
        c.appSrc.db(testDb('shop')).collection<AnyDoc>('items').insertOne({ _id: 'x', sku: 'x' }),
      ),
    ).toBe(USER_WRITES_BLOCKED);
    await commitAndWait(job);
    await expectEqualClusters(c);
    expect(
      await c.src
        .db(testDb('shop'))
        .collection('items')
        .findOne({ _id: 'reverse-1' as never }),
    ).not.toBeNull();
    expect(
      await writeError(() =>
        c.appSrc.db(testDb('shop')).collection<AnyDoc>('items').insertOne({ _id: 'y', sku: 'y' }),
      ),
    ).toBeNull();
    expect(
      await writeError(() =>
        c.appDst.db(testDb('shop')).collection<AnyDoc>('items').insertOne({ _id: 'z', sku: 'z' }),
      ),
    ).toBe(USER_WRITES_BLOCKED);
    await c.dst.db('admin').command({ setUserWriteBlockMode: 1, global: false });
  });
});
