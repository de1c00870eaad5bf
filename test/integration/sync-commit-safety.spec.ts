import { Int32, type Document } from 'bson';
import type { SyncJob } from '@sync/engine';
import { describeOn, emulatorOnly, testDb } from '../helpers/real-clusters';
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

async function seedItems(c: AuthClusters, count: number): Promise<void> {
  const items = c.appSrc.db(testDb('shop')).collection<AnyDoc>('items');
  await items.createIndex({ sku: 1 }, { unique: true, name: 'sku_1' });
  await items.insertMany(
    Array.from({ length: count }, (_, i) => ({ _id: new Int32(i), sku: `sku-${i}`, v: 0 })),
  );
}

describeOn('replicaSets')('T0, commit and reverse safety (authentication on)', () => {
  let c: AuthClusters;
  const jobs: SyncJob[] = [];

  afterEach(async () => {
    for (const job of jobs.splice(0)) await job.close().catch(() => undefined);
    await c.close();
  });

  emulatorOnly('freezes the majority snapshot with the disableSnapshotting fail point')(
    'a write acknowledged before T0 but majority-committed late is copied',
    async () => {
      c = await startAuthClusters();
      await seedItems(c, 200);
      const admin = c.src.db('admin');
      // The majority snapshot freezes: a w:1 write is acknowledged but not majority-committed.
      await admin.command({ configureFailPoint: 'disableSnapshotting', mode: 'alwaysOn' });
      await c.appSrc
        .db(testDb('shop'))
        .collection<AnyDoc>('items')
        .insertOne({ _id: 'late', sku: 'late', v: 1 }, { writeConcern: { w: 1 } });
      // A later write moves the cluster time on: T0 is then strictly after 'late' (a change stream
      // from T0 does not hold it; only a copy that waits for the majority snapshot can).
      await c.appSrc
        .db(testDb('shop'))
        .collection<AnyDoc>('other')
        .insertOne({ _id: 1 }, { writeConcern: { w: 1 } });
      const job = await engineFor(c);
      jobs.push(job);
      await job.start(request()); // T0 is after the write
      // Give the copy every chance to finish on the frozen snapshot (it must not: it reads
      // causally after T0, so it waits for the majority snapshot to reach T0).
      const deadline = Date.now() + 3000;
      while (Date.now() < deadline && job.progress().info === 'collection copy') {
        await new Promise((r) => setTimeout(r, 50));
      }
      await admin.command({ configureFailPoint: 'disableSnapshotting', mode: 'off' });
      // The snapshot moves on at the next oplog entry (as on mongod).
      await c.appSrc.db(testDb('shop')).collection<AnyDoc>('other').insertOne({ _id: 2 });
      await commitAndWait(job);
      await expectEqualClusters(c);
      expect(
        await c.dst
          .db(testDb('shop'))
          .collection<Document>('items')
          .findOne({ _id: 'late' } as Document),
      ).toEqual({
        _id: 'late',
        sku: 'late',
        v: 1,
      });
    },
  );

  it('a unique index that cannot be restored fails the commit step by name; commit again retries it', async () => {
    c = await startAuthClusters();
    await seedItems(c, 300);
    const job = await engineFor(c);
    jobs.push(job);
    await job.start(request({ enableUserWriteBlocking: true }));
    await waitFor(() => job.progress().canCommit === true, 30_000, 'canCommit');
    // Someone wrote to the destination during the sync (root bypasses write blocking): a
    // document the source does not have, duplicating a unique key.
    await c.dst
      .db(testDb('shop'))
      .collection<AnyDoc>('items')
      .insertOne({ _id: 'stray', sku: 'sku-1' });
    await job.commit();
    await waitFor(
      () => job.progress().commitFailure !== undefined,
      30_000,
      'the failed commit step',
      () => JSON.stringify(job.progress()),
    );
    const failed = job.progress();
    expect(failed).toMatchObject({
      state: 'COMMITTING',
      canWrite: false,
      sourceWriteBlocked: true,
      commitFailure: { step: 'indexesRestored' },
    });
    expect(String((failed.commitFailure as { message: string }).message)).toMatch(
      /sku|unique|duplicate/i,
    );
    // The source stays blocked, and says so; the operator removes the stray document and retries.
    expect(
      await writeError(() =>
        c.appSrc.db(testDb('shop')).collection<AnyDoc>('items').insertOne({ _id: 'x' }),
      ),
    ).toBe(USER_WRITES_BLOCKED);
    await c.dst
      .db(testDb('shop'))
      .collection<Document>('items')
      .deleteOne({ _id: 'stray' } as Document);
    await job.commit();
    await waitFor(
      () => job.progress().state === 'COMMITTED',
      30_000,
      'COMMITTED',
      () => JSON.stringify(job.progress()),
    );
    expect(job.progress().commitFailure).toBeUndefined();
    await expectEqualClusters(c);
    const sku = (await c.dst.db(testDb('shop')).collection('items').listIndexes().toArray()).find(
      (i) => i.name === 'sku_1',
    );
    expect(sku?.unique).toBe(true);
  });

  it('reverse relaxes the new destination: swapped unique values apply, then uniqueness returns', async () => {
    c = await startAuthClusters();
    await seedItems(c, 400);
    const job = await engineFor(c);
    jobs.push(job);
    await job.start(request({ enableUserWriteBlocking: true, reversible: true }));
    await commitAndWait(job);
    await job.reverse();
    await waitFor(() => job.progress().canCommit === true, 30_000, 'canCommit after reverse');
    // The application now writes to the old destination: pairs of documents swap their unique
    // values through a temporary one, events that collide if applied out of order.
    const items = c.appDst.db(testDb('shop')).collection<AnyDoc>('items');
    for (let i = 0; i < 100; i += 2) {
      const [a, b] = [new Int32(i), new Int32(i + 1)];
      await items.updateOne({ _id: a }, { $set: { sku: `tmp-${i}` } });
      await items.updateOne({ _id: b }, { $set: { sku: `sku-${i}` } });
      await items.updateOne({ _id: a }, { $set: { sku: `sku-${i + 1}` } });
    }
    await commitAndWait(job);
    expect(job.progress().failure).toBeUndefined();
    await expectEqualClusters(c);
    const sku = (await c.src.db(testDb('shop')).collection('items').listIndexes().toArray()).find(
      (i) => i.name === 'sku_1',
    );
    expect(sku?.unique).toBe(true);
    await c.dst.db('admin').command({ setUserWriteBlockMode: 1, global: false });
  });
});
