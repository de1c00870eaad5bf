import { Binary, MongoClient, type CollationOptions, type Document } from 'mongodb';
import { createHash } from 'node:crypto';
import { TestCluster } from './helpers/cluster';

/**
 * Fidelity gaps found by running MongoDB's driver spec tests against the emulator, checked
 * through the real driver. Expected codes and messages come from mongod's source (cited per
 * test) and jstests.
 */
describe('fidelity: collation, let, pipeline updates, update sort, $-prefixed _id', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let db: ReturnType<MongoClient['db']>;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect({ retryWrites: false });
    db = client.db(cluster.dbName('fidelity'));
  });
  afterAll(() => cluster.close());

  interface AnyDoc {
    _id: number | string;
    [k: string]: unknown;
  }
  const coll = (name: string) => db.collection<AnyDoc>(name);
  const err = (p: Promise<unknown>) => p.then(() => undefined).catch((e: Document) => e);

  describe('collation locales (collator_factory_icu.cpp)', () => {
    beforeAll(async () => {
      await coll('words').insertMany([
        { _id: 1, w: 'côte' },
        { _id: 2, w: 'coté' },
        { _id: 3, w: 'cote' },
        { _id: 4, w: 'côté' },
        { _id: 5, w: 'Cote' },
        { _id: 6, w: 'ä' },
        { _id: 7, w: 'af' },
        { _id: 8, w: 'a10' },
        { _id: 9, w: 'a9' },
        { _id: 10, w: 'a-b' },
        { _id: 11, w: 'ab' },
      ]);
    });
    const sorted = (collation: Document, filter: Document = {}) =>
      coll('words')
        .find(filter, { collation: collation as CollationOptions, projection: { _id: 0 } })
        .sort({ w: 1, _id: 1 })
        .toArray()
        .then((d) => d.map((x) => x.w as string));

    it('accepts the ICU locale IDs MongoDB lists (en_US, fr_CA, de, zh_Hant, en_US_POSIX, simple)', async () => {
      for (const locale of [
        'en_US',
        'fr_CA',
        'de',
        'de_AT',
        'zh_Hant',
        'sr_Latn',
        'en_US_POSIX',
        'simple',
        'root',
      ]) {
        await expect(sorted({ locale })).resolves.toHaveLength(11);
      }
      await expect(sorted({ locale: 'de@collation=phonebook' })).resolves.toHaveLength(11);
    });

    it('fr_CA weighs accents from the end (backwards), fr does not', async () => {
      const filter = { w: { $in: ['cote', 'côte', 'coté', 'côté'] } };
      expect(await sorted({ locale: 'fr' }, filter)).toEqual(['cote', 'coté', 'côte', 'côté']);
      expect(await sorted({ locale: 'fr_CA' }, filter)).toEqual(['cote', 'côte', 'coté', 'côté']);
      expect(await sorted({ locale: 'fr', backwards: true }, filter)).toEqual([
        'cote',
        'côte',
        'coté',
        'côté',
      ]);
      expect(await sorted({ locale: 'fr_CA', backwards: false }, filter)).toEqual([
        'cote',
        'coté',
        'côte',
        'côté',
      ]);
    });

    it('strength, caseFirst, numericOrdering, alternate and variants', async () => {
      expect(
        await db
          .collection('words')
          .countDocuments({ w: 'cote' }, { collation: { locale: 'en_US', strength: 1 } }),
      ).toBe(5);
      expect(
        await db
          .collection('words')
          .countDocuments({ w: 'cote' }, { collation: { locale: 'en_US', strength: 2 } }),
      ).toBe(2);
      expect(
        await sorted({ locale: 'en', caseFirst: 'upper' }, { w: { $in: ['cote', 'Cote'] } }),
      ).toEqual(['Cote', 'cote']);
      expect(
        await sorted({ locale: 'en', numericOrdering: true }, { w: { $in: ['a9', 'a10'] } }),
      ).toEqual(['a9', 'a10']);
      expect(await sorted({ locale: 'en' }, { w: { $in: ['a9', 'a10'] } })).toEqual(['a10', 'a9']);
      expect(
        await db
          .collection('words')
          .countDocuments({ w: 'ab' }, { collation: { locale: 'en', alternate: 'shifted' } }),
      ).toBe(2);
      // German phonebook: ä sorts as "ae", before "af"; standard German: ä is a + umlaut, after "af"? no: before.
      expect(
        await sorted({ locale: 'de@collation=phonebook' }, { w: { $in: ['ä', 'af'] } }),
      ).toEqual(['ä', 'af']);
    });

    it('refuses unsupported locales with 2 BadValue and mongod message', async () => {
      const e = await err(
        db
          .collection('words')
          .find({}, { collation: { locale: 'xx' } })
          .toArray(),
      );
      expect(e).toMatchObject({
        code: 2,
        codeName: 'BadValue',
        message: `Field 'locale' is invalid in: { locale: "xx" }`,
      });
      const e2 = await err(
        db
          .collection('words')
          .find({}, { collation: { locale: 'en-US' } })
          .toArray(),
      );
      expect(e2).toMatchObject({
        code: 2,
        message: `Field 'locale' is invalid in: { locale: "en-US" }. Did you mean 'en_US'?`,
      });
      const e3 = await err(
        db
          .collection('words')
          .find({}, { collation: { locale: '' } })
          .toArray(),
      );
      expect(e3).toMatchObject({
        code: 2,
        message: `Field 'locale' cannot be the empty string in: { locale: "" }`,
      });
      const e4 = await err(
        db
          .collection('words')
          .find({}, { collation: { locale: 'simple', strength: 1 } })
          .toArray(),
      );
      expect(e4).toMatchObject({
        code: 9,
        message: `If locale=simple, no other fields should be present in: { locale: "simple", strength: 1 }`,
      });
      const e5 = await err(
        db
          .collection('words')
          .find({}, { collation: { locale: 'en', strength: 6 } })
          .toArray(),
      );
      expect(e5).toMatchObject({
        code: 9,
        message: `Field 'strength' must be an integer 1 through 5. Got: 6`,
      });
      const e6 = await err(
        db
          .collection('words')
          .find({}, { collation: { locale: 'en', strength: 1, backwards: true } })
          .toArray(),
      );
      expect(e6).toMatchObject({ code: 2 });
      expect(String(e6?.message)).toMatch(
        /^'backwards' is invalid with 'strength' of 1 in: \{ locale: "en"/,
      );
    });
  });

  describe('command let parameters (variables.cpp seedVariablesWithLetParameters)', () => {
    const setup = async () => {
      const c = coll('letp');
      await c.deleteMany({});
      await c.insertMany([
        { _id: 2, a: {} },
        { _id: 3, b: 1 },
        { _id: 4, a: '$notAFieldPath' },
      ]);
      return c;
    };
    const literal = { c: { $literal: '$notAFieldPath' } };
    const missing = { c: { $getField: { field: 'c', input: { a: 1 } } } };
    const filter = { $expr: { $eq: ['$a', '$$c'] } };

    it('find/aggregate evaluate $literal and missing values like jstests/core/command_let_variables_expressions.js', async () => {
      const c = await setup();
      expect(await c.find(filter, { let: literal }).toArray()).toEqual([
        { _id: 4, a: '$notAFieldPath' },
      ]);
      expect(await c.find(filter, { let: missing }).toArray()).toEqual([{ _id: 3, b: 1 }]);
      expect(await c.aggregate([{ $match: filter }], { let: literal }).toArray()).toEqual([
        { _id: 4, a: '$notAFieldPath' },
      ]);
      expect(
        await c
          .aggregate([{ $project: { x: { $add: ['$$one', 1] } } }, { $limit: 1 }], {
            let: { one: { $add: [0, 1] } },
          })
          .toArray(),
      ).toEqual([{ _id: 2, x: 2 }]);
    });

    it('update/delete/findAndModify', async () => {
      let c = await setup();
      await c.updateMany(filter, [{ $set: { c: 'updated' } }], { let: literal });
      expect(await c.find().sort({ _id: 1 }).toArray()).toEqual([
        { _id: 2, a: {} },
        { _id: 3, b: 1 },
        { _id: 4, a: '$notAFieldPath', c: 'updated' },
      ]);
      c = await setup();
      await c.deleteMany(filter, { let: literal });
      expect(await c.find().sort({ _id: 1 }).toArray()).toEqual([
        { _id: 2, a: {} },
        { _id: 3, b: 1 },
      ]);
      c = await setup();
      await c.findOneAndUpdate({ _id: 4, ...filter }, [{ $set: { c: 'updated' } }], {
        let: literal,
      });
      expect(await c.findOne({ _id: 4 })).toEqual({ _id: 4, a: '$notAFieldPath', c: 'updated' });
    });

    it('refuses field paths in let (4890500)', async () => {
      const c = await setup();
      const e = await err(c.find({}, { let: { x: '$a' } }).toArray());
      expect(e).toMatchObject({
        code: 4890500,
        message:
          'Command let Expression tried to access a field, but this is not allowed becauseCommand let Expressions run before the query examines any documents.',
      });
    });
  });

  describe('pipeline-style updates that drop _id (PipelineExecutor keeps the original _id)', () => {
    it('$unset _id and $replaceWith without _id keep _id, like jstests update_with_pipeline.js', async () => {
      const c = coll('pipeid');
      await c.insertMany([
        { _id: 1, x: 1, t: { u: { v: 1 } } },
        { _id: 2, x: 2 },
      ]);
      const r1 = await c.updateOne({ _id: 1 }, [{ $replaceWith: '$t' }]);
      expect(r1).toMatchObject({ matchedCount: 1, modifiedCount: 1 });
      expect(await c.findOne({ _id: 1 })).toEqual({ _id: 1, u: { v: 1 } });
      const r2 = await c.updateOne({ _id: 2 }, [{ $unset: '_id' }, { $set: { y: 1 } }]);
      expect(r2).toMatchObject({ matchedCount: 1, modifiedCount: 1 });
      expect(await c.findOne({ _id: 2 })).toEqual({ _id: 2, x: 2, y: 1 });
      const e = await err(c.updateOne({ _id: 2 }, [{ $set: { _id: 3 } }]));
      expect(e).toMatchObject({
        code: 66,
        message:
          "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 3",
      });
    });
  });

  describe('update with sort on a 7.0 server (strict UpdateOpEntry IDL)', () => {
    it('fails the command with 40415', async () => {
      const c = coll('usort');
      await c.insertMany([
        { _id: 1, x: 11 },
        { _id: 2, x: 22 },
        { _id: 3, x: 33 },
      ]);
      const e = await err(
        db.command({
          update: 'usort',
          updates: [{ q: { _id: { $gt: 1 } }, u: { $inc: { x: 1 } }, sort: { _id: -1 } }],
        }),
      );
      expect(e).toMatchObject({
        code: 40415,
        message: "BSON field 'update.updates.sort' is an unknown field.",
      });
      expect(await c.find().sort({ _id: 1 }).toArray()).toEqual([
        { _id: 1, x: 11 },
        { _id: 2, x: 22 },
        { _id: 3, x: 33 },
      ]);
    });
  });

  describe("_id objects with '$'-prefixed fields (storage_validation storageValidIdField)", () => {
    const message = "_id fields may not contain '$'-prefixed fields: $a is not valid for storage.";
    it('insert, replace and upsert fail with 52 DollarPrefixedFieldName', async () => {
      const c = db.collection<{ _id: Document | number; x?: number }>('dollarid');
      const ins = await err(c.insertOne({ _id: { $a: 1 }, x: 1 }));
      expect(ins).toMatchObject({ code: 52, message });
      const nested = await err(c.insertOne({ _id: { k: { $a: 1 } } }));
      expect(nested).toMatchObject({ code: 52, message });
      await c.insertOne({ _id: 1, x: 1 });
      const rep = await err(c.replaceOne({ _id: 1 } as never, { _id: { $a: 1 }, x: 2 } as never));
      expect(rep).toMatchObject({ code: 52, message });
      const ups = await err(c.replaceOne({ x: 99 }, { _id: { $a: 1 } } as never, { upsert: true }));
      expect(ups).toMatchObject({ code: 52, message });
      const ups2 = await err(
        c.updateOne({ x: 98 }, { $set: { _id: { k: { $a: 1 } } } }, { upsert: true }),
      );
      expect(ups2).toMatchObject({ code: 52, message });
      expect(await c.countDocuments()).toBe(1);
    });
  });

  describe('$listLocalSessions (document_source_list_local_sessions.cpp)', () => {
    it('lists the sessions the node has seen, shaped like LogicalSessionRecord', async () => {
      const session = client.startSession();
      await coll('s').findOne({}, { session });
      const id = session.id!.id as Binary;
      const all = await client
        .db('admin')
        .aggregate([{ $listLocalSessions: { allUsers: true } }])
        .toArray();
      const sameId = (r: Document, sid: Binary) =>
        Buffer.from((r._id.id as Binary).buffer).equals(Buffer.from(sid.buffer));
      const mine = all.find((r) => sameId(r, id));
      // The owner's digest (mongod's getLogicalSessionUserDigestFor): SHA-256 of
      // "<user>@<db>", of "" without authentication.
      const status = await client.db('admin').command({ connectionStatus: 1 });
      const [user] = status.authInfo.authenticatedUsers as Array<{ user: string; db: string }>;
      const owner = createHash('sha256')
        .update(user ? `${user.user}@${user.db}` : '')
        .digest();
      const uidOf = (r: Document) => Buffer.from((r._id.uid as Binary).buffer);
      expect(mine).toBeDefined();
      expect(uidOf(mine!).equals(owner)).toBe(true);
      expect(mine!.lastUse).toBeInstanceOf(Date);
      // Without allUsers: the calling user's sessions only (mine among them).
      const own = await client
        .db('admin')
        .aggregate([{ $listLocalSessions: {} }])
        .toArray();
      expect(own.some((r) => sameId(r, id))).toBe(true);
      expect(own.every((r) => uidOf(r).equals(owner))).toBe(true);
      const other = await client
        .db('admin')
        .aggregate([{ $listLocalSessions: { users: [{ user: 'x', db: 'admin' }] } }])
        .toArray();
      expect(other).toEqual([]);
      await session.endSession();
    });

    it('refuses collection aggregates, bad specs and a non-first position', async () => {
      const e1 = await err(
        db
          .collection('s')
          .aggregate([{ $listLocalSessions: {} }])
          .toArray(),
      );
      expect(e1).toMatchObject({
        code: 73,
        message:
          '$listLocalSessions must be run against the database with {aggregate: 1}, not a collection',
      });
      const e2 = await err(
        client
          .db('admin')
          .aggregate([{ $listLocalSessions: { allUsers: true, users: [{ user: 'a', db: 'b' }] } }])
          .toArray(),
      );
      expect(e2).toMatchObject({
        code: 12,
        message:
          '$listLocalSessions may not specify {allUsers:true} and {users:[...]} at the same time',
      });
      const e3 = await err(
        client
          .db('admin')
          .aggregate([{ $match: {} }, { $listLocalSessions: {} }])
          .toArray(),
      );
      expect(e3).toMatchObject({ code: 40602 });
    });
  });
});
