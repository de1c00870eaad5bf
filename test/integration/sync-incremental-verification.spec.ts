import { Int32, type Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { silentLogger, type SyncJob } from '@sync/engine';
import { describeOn, onRealClusters, testDb, testNs } from '../helpers/real-clusters';
import {
  commitAndWait,
  crashableEngine,
  expectEqualClusters,
  request,
  startAuthClusters,
  waitFor,
  type AuthClusters,
} from './sync-helpers';

type AnyDoc = { _id: unknown } & Document;

// Two clusters, a copy, an application and a commit per test: generous on a loaded CI machine.
jest.setTimeout(180_000);

const DOCUMENTS = 2_000;
const VERIFY_TUNING = { verification: { recheckMs: 200 } };

/** Documents returned by queries on the source's primary (`metrics.document.returned`). */
async function returned(client: MongoClient): Promise<number> {
  const status = await client.db('admin').command({ serverStatus: 1 });
  return Number((status.metrics as { document: { returned: unknown } }).document.returned);
}

/** Waits until the job's commit rolled back; its `CommitRolledBack` progress warning. */
async function rollbackWarning(job: SyncJob): Promise<string> {
  const find = () =>
    ((job.progress().warnings ?? []) as string[]).find((w) => w.startsWith('CommitRolledBack'));
  await waitFor(
    () => find() !== undefined,
    60_000,
    'the commit rolled back',
    () => JSON.stringify(job.progress()),
  );
  return find()!;
}

/** canCommit, and the verifier caught up (every range checked once, no write left unchecked). */
async function untilCaughtUp(job: SyncJob): Promise<void> {
  await waitFor(
    () =>
      job.progress().canCommit === true &&
      (job.progress().verification as { caughtUp?: boolean } | undefined)?.caughtUp === true,
    60_000,
    'canCommit and the verifier caught up',
    () => JSON.stringify(job.progress().verification),
  );
}

async function seed(c: AuthClusters): Promise<void> {
  await c.appSrc
    .db(testDb('shop'))
    .collection<AnyDoc>('orders')
    .insertMany(
      Array.from({ length: DOCUMENTS }, (_, i) => ({
        _id: new Int32(i),
        n: new Int32(0),
        pad: 'x'.repeat(200),
      })),
    );
}

/** An application updating, inserting and deleting until stopped (write blocking ends it). */
function application(c: AuthClusters): { stop: () => Promise<number> } {
  const orders = c.appSrc.db(testDb('shop')).collection<AnyDoc>('orders');
  let running = true;
  let writes = 0;
  const loop = (async () => {
    for (let i = 0; running; i++) {
      try {
        await orders.updateOne({ _id: new Int32((i * 37) % DOCUMENTS) }, { $inc: { n: 1 } });
        if (i % 10 === 0) await orders.insertOne({ _id: `new-${i}`, n: new Int32(i) });
        if (i % 25 === 0) await orders.deleteOne({ _id: new Int32((i * 53) % DOCUMENTS) });
        writes += 1;
      } catch {
        return; // the source is write-blocked by the commit
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return writes;
    },
  };
}

describeOn('replicaSets')('incremental verification (what the final pass reads)', () => {
  let c: AuthClusters;
  const jobs: SyncJob[] = [];

  afterEach(async () => {
    for (const job of jobs.splice(0)) await job.close().catch(() => undefined);
    await c.src.db('admin').command({ setUserWriteBlockMode: 1, global: false });
    await c.close();
  });

  it.each(['incremental', 'full'] as const)(
    'mode %s: after a sync with an application writing throughout, the final pass reads only what it must and passes byte-equal',
    async (mode) => {
      c = await startAuthClusters();
      await seed(c);
      const read: Record<string, number> = {};
      const { job } = await crashableEngine(c, {
        ...VERIFY_TUNING,
        // Between the drain and the end of `verified` only the final pass reads the source.
        onCommitStep: async (step) => {
          if (step === 'indexesRestored' || step === 'verified') read[step] = await returned(c.src);
        },
      });
      jobs.push(job);
      const app = application(c);
      await job.start(
        request({ enableUserWriteBlocking: true, verification: { enabled: true, mode } }),
      );
      // canCommit, and the verifier caught up (the shortest cutover: the final pass reads only
      // what the live pass has not seen yet).
      await untilCaughtUp(job);
      // The verifier caught up before canCommit: every range checked once.
      expect(job.progress().verification).toMatchObject({
        phase: 'live',
        mode,
        caughtUp: true,
        backlog: { uncheckedRanges: 0 },
      });
      await new Promise((r) => setTimeout(r, 1_500)); // the application keeps writing
      await job.commit();
      const writes = await app.stop();
      await waitFor(
        () => job.progress().state === 'COMMITTED',
        60_000,
        'COMMITTED',
        () => JSON.stringify(job.progress()),
      );
      const sourceRead = read.verified! - read.indexesRestored!;
      const finalPass = (job.progress().verification as { finalPass: Record<string, number> })
        .finalPass;
      if (process.env.VERIFY_FIGURES)
        process.stdout.write(
          `${mode}: ${writes} writes, final pass ${JSON.stringify(finalPass)}, source returned ${sourceRead}\n`,
        );
      expect(writes).toBeGreaterThan(100);
      expect(finalPass).toMatchObject({ mode });
      // Index listings read in batches ($indexStats in one aggregate) return their entries as
      // documents too: a full pass lists every namespace's indexes (here `orders`' `_id_`).
      // A server that refuses that read is asked listIndexes instead, which returns none.
      const indexEntries =
        mode === 'full'
          ? (await c.src.db(testDb('shop')).collection('orders').listIndexes().toArray()).length
          : 0;
      expect([finalPass.documentsRead, finalPass.documentsRead! + indexEntries]).toContain(
        sourceRead,
      );
      if (mode === 'incremental') {
        // Only what was written since its last check: no range read whole.
        expect(finalPass.rangesRead).toBe(0);
        expect(sourceRead).toBeLessThan(DOCUMENTS / 10);
      } else {
        expect(sourceRead).toBeGreaterThanOrEqual(DOCUMENTS - 100);
      }
      await expectEqualClusters(c);
    },
  );

  it('a document changed on the source, then altered on the destination behind the sync, is caught by the final pass', async () => {
    c = await startAuthClusters();
    await seed(c);
    const orders = c.src.db(testDb('shop')).collection<AnyDoc>('orders');
    const { job } = await crashableEngine(c, {
      // A written document waits 30 s for the live pass (default 1 s; canCommit then tolerates
      // writes unchecked for up to 60 s): the one the drain applies below is still unchecked
      // when the destination is altered, as the final pass must find it. Checked equal by the
      // live pass first, the alteration would be the kind an incremental pass cannot see
      // (README); on a loaded machine the live pass got there first.
      verification: { ...VERIFY_TUNING.verification, settleMs: 30_000, caughtUpMs: 60_000 },
      onCommitStep: async (step) => {
        // The source is write-blocked (root bypasses it) before the commit point: the drain
        // applies this change, and the write marks the document dirty.
        if (step === 'sourceBlocked')
          await orders.updateOne({ _id: new Int32(1234) }, { $set: { n: new Int32(-1) } });
        // Once applied: someone alters it on the destination behind the sync's back.
        if (step === 'drained')
          await c.dst
            .db(testDb('shop'))
            .collection<AnyDoc>('orders')
            .updateOne({ _id: new Int32(1234) }, { $set: { n: new Int32(-2) } });
      },
    });
    jobs.push(job);
    await job.start(request({ enableUserWriteBlocking: true }));
    await untilCaughtUp(job);
    await job.commit();
    // The difference rolls the commit back: the application gets its source back at once.
    const warning = await rollbackWarning(job);
    expect(job.progress()).toMatchObject({ state: 'RUNNING', canWrite: false });
    expect(warning).toContain('at step verified (VerificationFailed');
    expect(warning).toContain(
      `${testNs('shop.orders')}: document _id {"$numberInt":"1234"} differs`,
    );
    // The source accepts the application's writes again; the destination stays closed.
    await c.appSrc.db(testDb('shop')).collection<AnyDoc>('orders').insertOne({ _id: 'after' });
    await expect(
      c.appDst.db(testDb('shop')).collection<AnyDoc>('orders').insertOne({ _id: 'no' }),
    ).rejects.toMatchObject({ code: 371 });
  });

  it('fields a pipeline update moved are repaired from the source by the live pass, then the commit passes', async () => {
    c = await startAuthClusters();
    await seed(c);
    const orders = c.appSrc.db(testDb('shop')).collection<AnyDoc>('orders');
    const warnings: Array<{ message: string; fields?: Record<string, unknown> }> = [];
    const { job } = await crashableEngine(c, {
      ...VERIFY_TUNING,
      logger: {
        ...silentLogger,
        warn: (message, fields) => warnings.push({ message, ...(fields ? { fields } : {}) }),
      },
    });
    jobs.push(job);
    await job.start(request({ enableUserWriteBlocking: true }));
    await untilCaughtUp(job);
    // Existing fields reordered by a pipeline update: MongoDB logs the moved fields as
    // re-inserted, and the change event lists them in updatedFields like fields updated in
    // place; replayed as $set they would keep their old places on the destination.
    await orders.updateOne({ _id: new Int32(8) }, [
      { $replaceWith: { _id: '$_id', pad: '$pad', n: { $add: ['$n', 1] } } },
    ]);
    // Defaults merged under the document (a common pipeline update): the new field "status"
    // lands before the others, out of $set's order, so this event is applied by lookup
    // directly (update-event.ts) and needs no repair. mongod stores `_id` first.
    await orders.updateOne({ _id: new Int32(7) }, [
      { $replaceWith: { $mergeObjects: [{ status: 'new' }, '$$ROOT'] } },
    ]);
    const read = (client: MongoClient, id: number) =>
      client
        .db(testDb('shop'))
        .collection<AnyDoc>('orders')
        .findOne({ _id: new Int32(id) });
    expect(Object.keys((await read(c.src, 8))!)).toEqual(['_id', 'pad', 'n']);
    expect(Object.keys((await read(c.src, 7))!)).toEqual(['_id', 'status', 'n', 'pad']);
    await waitFor(
      () =>
        (job.progress().verification as { documentsRepaired?: number } | undefined)
          ?.documentsRepaired === 1,
      60_000,
      'the moved fields repaired',
      () => JSON.stringify(job.progress().verification),
    );
    const repaired = warnings.filter((w) => w.message.includes('rewritten from the source'));
    expect(repaired.map((w) => w.fields)).toEqual([
      { namespace: testNs('shop.orders'), _id: '{"$numberInt":"8"}' },
    ]);
    await waitFor(
      async () => Object.keys((await read(c.dst, 8)) ?? {}).join() === '_id,pad,n',
      30_000,
      'the repaired document on the destination',
    );
    expect(Object.keys((await read(c.dst, 7))!)).toEqual(['_id', 'status', 'n', 'pad']);
    await untilCaughtUp(job);
    await commitAndWait(job);
    expect((job.progress().verification as { documentsRepaired?: number }).documentsRepaired).toBe(
      1,
    );
    await expectEqualClusters(c);
  });

  it('a client that bypasses write blocking during the commit: rolled back, named, then a second commit succeeds', async () => {
    c = await startAuthClusters();
    await seed(c);
    // root bypasses write blocking: as every client does when authorization is off.
    const bypassing = c.src.db(testDb('shop')).collection<AnyDoc>('orders');
    let writeDuringCommit = true;
    let during: unknown;
    const { job } = await crashableEngine(c, {
      ...VERIFY_TUNING,
      onCommitStep: async (step) => {
        // While COMMITTING, progress shows the step and how long the source has been blocked.
        if (step === 'verified' && !writeDuringCommit) during = job.progress().commit;
        if (step === 'drained' && writeDuringCommit) {
          writeDuringCommit = false;
          await bypassing.insertOne({ _id: 'sneaked-in', n: new Int32(1) });
        }
      },
    });
    jobs.push(job);
    await job.start(request({ enableUserWriteBlocking: true }));
    await waitFor(() => job.progress().canCommit === true, 60_000, 'canCommit');
    await job.commit();
    const warning = await rollbackWarning(job);
    expect(warning).toContain('SourceWritesDuringCommit');
    expect(warning).toContain(`insert on ${testNs('shop.orders')} (_id "sneaked-in")`);
    expect(job.progress().state).toBe('RUNNING');
    // The source is writable for the application again.
    await c.appSrc.db(testDb('shop')).collection<AnyDoc>('orders').insertOne({ _id: 'back' });

    // Once the bypassing client stops, a second commit completes and nothing was lost.
    await waitFor(() => job.progress().canCommit === true, 60_000, 'canCommit again');
    await job.commit();
    await waitFor(
      () => job.progress().state === 'COMMITTED',
      60_000,
      'COMMITTED',
      () => JSON.stringify(job.progress()),
    );
    expect(during).toMatchObject({ step: 'verified', sourceBlockedSeconds: expect.any(Number) });
    // Once writable: the measured downtime (source blocked → destination writable).
    const downtime = (job.progress().commit as { cutoverSeconds: number }).cutoverSeconds;
    expect(downtime).toBeGreaterThanOrEqual(0);
    expect(downtime).toBeLessThan(60);
    await expectEqualClusters(c);
    expect(
      await c.dst
        .db(testDb('shop'))
        .collection<AnyDoc>('orders')
        .countDocuments({
          _id: { $in: ['sneaked-in', 'back'] },
        } as Document),
    ).toBe(2);
  });

  it('the final pass compares the metadata of what changed since the live pass, not of every namespace', async () => {
    c = await startAuthClusters();
    const tenants = c.appSrc.db(testDb('tenants'));
    for (let i = 0; i < 60; i++) {
      await tenants.collection<AnyDoc>(`t${i}`).insertMany([{ _id: 1 }, { _id: 2 }]);
    }
    const { job } = await crashableEngine(c, VERIFY_TUNING);
    jobs.push(job);
    await job.start(request({ enableUserWriteBlocking: true }));
    // Every namespace verified, its metadata included (caughtUp): a namespace whose check
    // began before its last catalog change is left unsettled, and the final pass reads it.
    // And nothing left to check: the change stream starts at the last write before the start
    // (inclusive), so the seed's last insert is applied again and its document re-checked —
    // caughtUp allows such a check to be a moment away, the final pass would then read it too.
    const settled = () => {
      const verification = job.progress().verification as {
        namespacesVerified?: number;
        caughtUp?: boolean;
        backlog?: { dirtyDocuments: number; dirtyRanges: number; uncheckedRanges: number };
      };
      return (
        job.progress().canCommit === true &&
        verification.namespacesVerified === 60 &&
        verification.caughtUp === true &&
        verification.backlog?.dirtyDocuments === 0 &&
        verification.backlog.dirtyRanges === 0 &&
        verification.backlog.uncheckedRanges === 0
      );
    };
    await waitFor(settled, 90_000, 'every namespace verified live', () =>
      JSON.stringify(job.progress().verification),
    );
    // A DDL on one namespace and a write on another after the live pass found them equal.
    await tenants.collection('t7').createIndex({ v: 1 }, { name: 'v_1' });
    await tenants.collection<AnyDoc>('t9').insertOne({ _id: 3 });
    await waitFor(() => job.progress().canCommit === true, 60_000, 'canCommit');
    await job.commit();
    await waitFor(
      () => job.progress().state === 'COMMITTED',
      60_000,
      'COMMITTED',
      () => JSON.stringify(job.progress()),
    );
    const finalPass = (job.progress().verification as { finalPass: { namespaces: number } })
      .finalPass;
    // At most the two namespaces touched (the live pass may have rechecked them already).
    expect(finalPass.namespaces).toBeLessThanOrEqual(2);
    await expectEqualClusters(c);
  });

  // failCommand needs a server started with test commands enabled: the emulator's.
  (onRealClusters() ? it.skip : it)(
    'a final verification that cannot read the destination rolls back (VerificationUnavailable); the next commit completes',
    async () => {
      c = await startAuthClusters();
      await seed(c);
      // A unique index: relaxed on the destination during the sync and restored by the commit,
      // so the final pass compares this namespace's metadata again, as restored.
      await c.appSrc
        .db(testDb('shop'))
        .collection<AnyDoc>('orders')
        .createIndex({ pad: 1, _id: 1 }, { unique: true, name: 'pad_id_unique' });
      let failing = false;
      const { job } = await crashableEngine(c, {
        ...VERIFY_TUNING,
        onCommitStep: async (step) => {
          // After the drain: the destination's collection listings fail, retried in vain (the
          // final pass compares the metadata of the namespace whose index the commit restored).
          if (step === 'indexesRestored' && !failing) {
            failing = true;
            await c.dst.db('admin').command({
              configureFailPoint: 'failCommand',
              mode: 'alwaysOn',
              data: {
                appName: 'cluster-sync',
                failCommands: ['listCollections', 'find'],
                errorCode: 6,
              },
            });
          }
        },
      });
      jobs.push(job);
      await job.start(request({ enableUserWriteBlocking: true }));
      await waitFor(() => job.progress().canCommit === true, 60_000, 'canCommit');
      await job.commit();
      const warning = await rollbackWarning(job);
      expect(warning).toContain('at step verified (VerificationUnavailable');
      expect(job.progress().state).toBe('RUNNING');
      // The application has its source back; the destination stays closed.
      await c.appSrc.db(testDb('shop')).collection<AnyDoc>('orders').insertOne({ _id: 'back' });
      await expect(
        c.appDst.db(testDb('shop')).collection<AnyDoc>('orders').insertOne({ _id: 'no' }),
      ).rejects.toMatchObject({ code: 371 });

      await c.dst.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
      await waitFor(() => job.progress().canCommit === true, 60_000, 'canCommit again');
      await job.commit();
      await waitFor(
        () => job.progress().state === 'COMMITTED',
        60_000,
        'COMMITTED',
        () => JSON.stringify(job.progress()),
      );
      await expectEqualClusters(c);
    },
  );
});
