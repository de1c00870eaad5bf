import { Int32, type Document } from 'bson';
import type { SyncJob } from '@sync/engine';
import { describeEmulatorOnly, testDb } from '../helpers/real-clusters';
import {
  commitAndWait,
  engineFor,
  expectEqualClusters,
  request,
  startAuthClusters,
  waitFor,
  type AuthClusters,
} from './sync-helpers';

/**
 * Index and collMod DDL that redefines an index under the same name (other keys or other
 * options) or changes collection options, landing at three points of a sync:
 * - between a collection's listing time and its `listIndexes` (the listing already reflects the
 *   DDL that the change stream replays again): the replay must be idempotent, in stream order;
 * - during the copy (after the listing): replayed once when change events are applied;
 * - during change event application.
 * Each ends with the destination's indexes and options identical to the source's (name, key,
 * every option, as BSON bytes) and every document byte-equal.
 */

type AnyDoc = { _id: unknown } & Document;

const COLL = 'A';
const COUNT = 3000;

async function fill(c: AuthClusters): Promise<void> {
  const docs = Array.from({ length: COUNT }, (_, i) => ({
    _id: new Int32(i),
    f0: i,
    f1: i,
    f2: i,
    f3: i,
    f4: `n${i}`,
    f5: i,
    f6: i,
    f7: i,
    g: new Int32(i % 7),
    pad: 'p'.repeat(150),
  }));
  for (let i = 0; i < docs.length; i += 500) {
    await c.appSrc
      .db(testDb('shop'))
      .collection<AnyDoc>(COLL)
      .insertMany(docs.slice(i, i + 500));
  }
}

/** Each index is created, dropped and created again under the same name, differently. */
const REDEFINED: Array<{ name: string; first: [Document, Document]; second: [Document, Document] }> =
  [
    { name: 'keys', first: [{ f0: 1 }, {}], second: [{ g: 1 }, { sparse: true }] },
    { name: 'sparse', first: [{ f1: 1 }, {}], second: [{ f1: 1 }, { sparse: true }] },
    { name: 'unique', first: [{ f2: 1 }, {}], second: [{ f2: 1 }, { unique: true }] },
    {
      name: 'partial',
      first: [{ f3: 1 }, { partialFilterExpression: { g: { $gt: 2 } } }],
      second: [{ f3: 1 }, { partialFilterExpression: { g: { $lte: 2 } } }],
    },
    {
      name: 'collation',
      first: [{ f4: 1 }, {}],
      second: [{ f4: 1 }, { collation: { locale: 'fr', strength: 2 } }],
    },
    {
      name: 'ttl',
      first: [{ f5: 1 }, { expireAfterSeconds: 3600 }],
      second: [{ f5: 1 }, { expireAfterSeconds: 7200 }],
    },
    { name: 'hidden', first: [{ f6: 1 }, { hidden: true }], second: [{ f6: -1 }, {}] },
    {
      name: 'unique2',
      first: [{ f7: 1 }, { unique: true }],
      second: [{ f7: 1 }, { unique: true, hidden: true }],
    },
  ];

/** The DDL every scenario runs on the source, in this order. */
async function redefine(c: AuthClusters): Promise<void> {
  const db = c.src.db(testDb('shop'));
  const a = db.collection(COLL);
  for (const { name, first } of REDEFINED) await a.createIndex(first[0], { ...first[1], name });
  for (const { name } of REDEFINED) await a.dropIndex(name);
  for (const { name, second } of REDEFINED) await a.createIndex(second[0], { ...second[1], name });
  // collMod: collection options, and index options (hidden, TTL) by collMod.
  await db.command({ collMod: COLL, validator: { f0: { $type: 'number' } } });
  await db.command({ collMod: COLL, validationLevel: 'moderate', validationAction: 'warn' });
  await db.command({ collMod: COLL, validator: { g: { $type: 'int' } } });
  await a.createIndex({ f1: -1 }, { name: 'modded' });
  await db.command({ collMod: COLL, index: { name: 'modded', hidden: true } });
  await db.command({ collMod: COLL, index: { keyPattern: { f5: 1 }, expireAfterSeconds: 60 } });
  await db.command({ collMod: COLL, index: { name: 'hidden', hidden: true } });
  await db.command({ collMod: COLL, index: { name: 'hidden', hidden: false } });
  await db.command({ collMod: COLL, index: { name: 'modded', hidden: false } });
  await db.command({ collMod: COLL, index: { name: 'modded', hidden: true } });
  // Created here, dropped by the caller later (after the listing): it must end dropped.
  await a.createIndex({ f2: -1, g: 1 }, { name: 'gone' });
}

async function afterwards(c: AuthClusters): Promise<void> {
  const db = c.src.db(testDb('shop'));
  await db.collection(COLL).dropIndex('gone');
  await db.command({ collMod: COLL, index: { name: 'ttl', expireAfterSeconds: 90 } });
  await db.collection<AnyDoc>(COLL).updateMany({ g: new Int32(3) }, { $set: { touched: true } });
}

async function expectSameIndexesAndOptions(c: AuthClusters): Promise<void> {
  const list = async (client: typeof c.src) => {
    const db = client.db(testDb('shop'));
    const indexes = await db.collection(COLL).listIndexes().toArray();
    const [info] = await db.listCollections({ name: COLL }).toArray();
    return {
      indexes: indexes.sort((x, y) => String(x.name).localeCompare(String(y.name))),
      options: (info as { options?: Document }).options,
    };
  };
  const [source, destination] = await Promise.all([list(c.src), list(c.dst)]);
  expect(destination).toEqual(source);
  expect(source.indexes.map((i) => i.name)).not.toContain('gone');
  // Name, key and every option as BSON bytes; documents byte-equal.
  await expectEqualClusters(c);
}

/** failCommand on the engine's connections (appName cluster-sync). */
async function failPoint(c: AuthClusters, mode: unknown, data: Document = {}): Promise<number> {
  const reply = await c.src.db('admin').command({
    configureFailPoint: 'failCommand',
    mode,
    data: { appName: 'cluster-sync', ...data },
  });
  return Number(reply.count ?? 0);
}

describeEmulatorOnly('the failCommand fail point holds listIndexes at planning')(
  'an index redefined under the same name, and collMod, replayed exactly (authentication on)',
  () => {
    let c: AuthClusters;
    const jobs: SyncJob[] = [];

    afterEach(async () => {
      for (const job of jobs.splice(0)) await job.close().catch(() => undefined);
      await c.close();
    });

    it('between the listing time and listIndexes: the listing already holds the DDL replayed after it', async () => {
      c = await startAuthClusters();
      await fill(c);
      const job = await engineFor(c);
      jobs.push(job);
      // The planner's listIndexes waits 2 s; the DDL runs on the source meanwhile, after the
      // collection's listing time (so it is replayed) and before its indexes are read.
      const hold = { failCommands: ['listIndexes'], blockConnection: true, blockTimeMS: 2000 };
      await failPoint(c, { times: 1 }, hold);
      const started = job.start(request());
      await waitFor(
        async () => {
          // Re-arming keeps the fail point as it is until the planner enters it (count 1).
          if ((await failPoint(c, { times: 1 }, hold)) === 0) return false;
          await failPoint(c, 'off');
          return true;
        },
        20_000,
        'listIndexes held',
      );
      await redefine(c);
      await started;
      await afterwards(c);
      await commitAndWait(job);
      await expectSameIndexesAndOptions(c);
    });

    it('during the copy', async () => {
      c = await startAuthClusters();
      await fill(c);
      const job = await engineFor(c);
      jobs.push(job);
      // Every copy read waits (long enough that the copy outlasts the DDL even with all its
      // small partitions read at once): the DDL lands while the copy runs.
      await failPoint(c, 'alwaysOn', {
        failCommands: ['find', 'aggregate'],
        blockConnection: true,
        blockTimeMS: 400,
      });
      await job.start(request());
      await redefine(c);
      expect(job.progress().info).toBe('collection copy'); // the copy still runs
      await failPoint(c, 'off');
      await afterwards(c);
      await commitAndWait(job);
      await expectSameIndexesAndOptions(c);
    });

    it('during change event application', async () => {
      c = await startAuthClusters();
      await fill(c);
      const job = await engineFor(c);
      jobs.push(job);
      await job.start(request());
      await waitFor(() => job.progress().canCommit === true, 30_000, 'canCommit');
      await redefine(c);
      await afterwards(c);
      await commitAndWait(job);
      await expectSameIndexesAndOptions(c);
    });
  },
);
