import { Double, Int32, ObjectId, type Document } from 'bson';
import { ReplicaSetNode } from '../src/node/replica-set-node';
import { encode } from '../src/bson/codec';
import { CommandError } from '../src/errors';
import { prepareInsert } from '../src/storage/collection';
import { planQuery } from '../src/storage/planner';
import { queryDocuments } from '../src/storage/query-exec';
import { describeEmulatorOnly } from './helpers/real-server';

function setup() {
  const node = new ReplicaSetNode({ setName: 'rs0' });
  const coll = node.catalog.createCollection('db', 'c');
  return { node, catalog: node.catalog, coll };
}

/**
 * Stored documents are BSON bytes decoded exactly, so a JS number written by a test reads back
 * as an Int32 or Double wrapper; `plain` turns those back into numbers for comparisons.
 */
function plain(v: unknown): unknown {
  return v instanceof Int32 || v instanceof Double ? v.value : v;
}

function ids(docs: Iterable<Document>): unknown[] {
  return [...docs].map((d) => plain(d._id));
}

const suite = describeEmulatorOnly("unit test of the emulator's storage, no server");

suite('storage: collections and indexes', () => {
  it('stores documents in natural order with _id first and finds them by _id', () => {
    const { coll, catalog } = setup();
    coll.insert(prepareInsert({ a: 1, _id: 2 }));
    const r = coll.insert(prepareInsert({ a: 2 }));
    expect(Object.keys(r.doc)[0]).toBe('_id');
    expect(r.doc._id).toBeInstanceOf(ObjectId);
    expect(Object.keys(catalog.findById('db', 'c', 2)!)).toEqual(['_id', 'a']);
    expect([...coll.naturalRecords(1)].map((x) => plain(x.doc.a))).toEqual([1, 2]);
    expect([...coll.naturalRecords(-1)].map((x) => plain(x.doc.a))).toEqual([2, 1]);
    expect(coll.uuid.sub_type).toBe(4);
    expect(coll.dataSize).toBeGreaterThan(0);
  });

  it('raises E11000 exactly as MongoDB for _id and unique secondary indexes', () => {
    const { coll, catalog } = setup();
    catalog.addIndex(coll, { v: 2, key: { email: 1 }, name: 'email_1', unique: true });
    coll.insert(prepareInsert({ _id: 1, email: 'x' }));
    let err: CommandError | undefined;
    try {
      coll.insert(prepareInsert({ _id: 1, email: 'y' }));
    } catch (e) {
      err = e as CommandError;
    }
    expect(err?.code).toBe(11000);
    expect(err?.message).toBe(
      'E11000 duplicate key error collection: db.c index: _id_ dup key: { _id: 1 }',
    );
    expect(() => coll.insert(prepareInsert({ _id: 2, email: 'x' }))).toThrow(
      'E11000 duplicate key error collection: db.c index: email_1 dup key: { email: "x" }',
    );
    try {
      coll.insert(prepareInsert({ _id: 3, email: 'x' }));
    } catch (e) {
      expect((e as CommandError).extra).toEqual({
        keyPattern: { email: 1 },
        keyValue: { email: 'x' },
      });
    }
    expect(coll.count).toBe(1);
  });

  it('unique index treats missing fields as null unless sparse', () => {
    const { coll, catalog } = setup();
    catalog.addIndex(coll, { v: 2, key: { u: 1 }, name: 'u_1', unique: true });
    catalog.addIndex(coll, { v: 2, key: { s: 1 }, name: 's_1', unique: true, sparse: true });
    coll.insert(prepareInsert({ _id: 1 }));
    expect(() => coll.insert(prepareInsert({ _id: 2 }))).toThrow(
      /index: u_1 dup key: \{ u: null \}/,
    );
    coll.insert(prepareInsert({ _id: 3, u: 3 }));
    coll.insert(prepareInsert({ _id: 4, u: 4 }));
  });

  it('range scans over 100k documents touch only the range (sublinear)', () => {
    const { coll } = setup();
    for (let i = 0; i < 100_000; i++) coll.insert(prepareInsert({ _id: i, v: i % 10 }));
    coll.metrics.docsExamined = 0;
    coll.metrics.keysExamined = 0;
    const docs = [
      ...queryDocuments(coll, { filter: { _id: { $gte: 50_000, $lt: 50_500 } }, sort: { _id: 1 } }),
    ];
    expect(docs).toHaveLength(500);
    expect(plain(docs[0]._id)).toBe(50_000);
    expect(plain(docs[499]._id)).toBe(50_499);
    expect(coll.metrics.docsExamined).toBe(500);
    expect(coll.metrics.keysExamined).toBe(500);

    // Descending order with a limit streams from the index and stops early.
    coll.metrics.docsExamined = 0;
    const top = [
      ...queryDocuments(coll, { filter: { _id: { $lt: 70_000 } }, sort: { _id: -1 }, limit: 3 }),
    ];
    expect(ids(top)).toEqual([69_999, 69_998, 69_997]);
    expect(coll.metrics.docsExamined).toBeLessThan(300);
  });

  it('uses type bracketing: a numeric range does not return strings', () => {
    const { coll } = setup();
    for (const id of [1, 5, 'a', 'b', new Int32(7), 9.5]) coll.insert(prepareInsert({ _id: id }));
    // Each value keeps its BSON type: JS 5 was stored as an int32, 9.5 as a double.
    expect([...queryDocuments(coll, { filter: { _id: { $gt: 3 } } })].map((d) => d._id)).toEqual([
      new Int32(5),
      new Int32(7),
      new Double(9.5),
    ]);
    expect(ids(queryDocuments(coll, { filter: { _id: { $lt: 'b' } } }))).toEqual(['a']);
  });

  it('plans compound, descending, multikey and $in predicates', () => {
    const { coll, catalog } = setup();
    catalog.addIndex(coll, { v: 2, key: { a: 1, b: -1 }, name: 'a_1_b_-1' });
    catalog.addIndex(coll, { v: 2, key: { tags: 1 }, name: 'tags_1' });
    let n = 0;
    for (let a = 0; a < 20; a++)
      for (let b = 0; b < 20; b++)
        coll.insert(prepareInsert({ _id: n++, a, b, tags: [a, a + 1, a] }));
    coll.metrics.docsExamined = 0;
    const res = [...queryDocuments(coll, { filter: { a: 3, b: { $gte: 5, $lt: 8 } } })];
    expect(res.map((d) => plain(d.b))).toEqual([7, 6, 5]);
    expect(coll.metrics.docsExamined).toBe(3);
    const plan = planQuery(coll, { filter: { a: { $in: [2, 4] } }, sort: { a: 1, b: -1 } });
    expect(plan.summary).toEqual({ stage: 'IXSCAN', indexName: 'a_1_b_-1', direction: 'forward' });
    expect(plan.sortProvided).toBe(true);
    const back = planQuery(coll, { filter: { a: 4 }, sort: { b: 1 } });
    expect(back.sortProvided).toBe(true);
    expect(back.summary.direction).toBe('backward');
    expect([...back.records].map((r) => plain(r.doc.b)).slice(0, 3)).toEqual([0, 1, 2]);
    // Multikey: each document once even though it has several keys in range.
    const tagged = [
      ...queryDocuments(coll, { filter: { tags: { $gte: 3, $lte: 4 } }, hint: 'tags_1' }),
    ];
    expect(new Set(tagged.map((d) => d._id)).size).toBe(tagged.length);
    expect(tagged).toHaveLength(60);
  });

  it('honours hint, $natural and rejects a bad hint', () => {
    const { coll, catalog } = setup();
    catalog.addIndex(coll, { v: 2, key: { x: 1 }, name: 'x_1', hidden: true });
    for (let i = 0; i < 5; i++) coll.insert(prepareInsert({ _id: i, x: 4 - i }));
    expect(() => [...queryDocuments(coll, { hint: 'nope' })]).toThrow(
      'hint provided does not correspond to an existing index',
    );
    expect(() => [...queryDocuments(coll, { hint: 'x_1' })]).toThrow(/hint provided/);
    expect(ids(queryDocuments(coll, { hint: { $natural: -1 } }))).toEqual([4, 3, 2, 1, 0]);
    expect(ids(queryDocuments(coll, { sort: { $natural: -1 }, limit: 2 }))).toEqual([4, 3]);
    expect(planQuery(coll, { filter: { x: 1 } }).summary.stage).toBe('COLLSCAN');
    expect(
      ids(queryDocuments(coll, { hint: { _id: 1 }, min: { _id: 1 }, max: { _id: 3 } })),
    ).toEqual([1, 2]);
  });

  it('supports partial and hashed indexes', () => {
    const { coll, catalog } = setup();
    const partial = catalog.addIndex(coll, {
      v: 2,
      key: { a: 1 },
      name: 'a_1',
      unique: true,
      partialFilterExpression: { a: { $gt: 5 } },
    });
    const hashed = catalog.addIndex(coll, { v: 2, key: { h: 'hashed' }, name: 'h_hashed' });
    coll.insert(prepareInsert({ _id: 1, a: 1, h: 'k' }));
    coll.insert(prepareInsert({ _id: 2, a: 1, h: 'k' }));
    expect(() => coll.insert(prepareInsert({ _id: 3, a: 7 }))).not.toThrow();
    expect(() => coll.insert(prepareInsert({ _id: 4, a: 7 }))).toThrow(/E11000/);
    expect(partial.tree.size).toBe(1);
    expect(typeof hashed.tree.minKey()![0]).toBe('bigint');
    coll.metrics.docsExamined = 0;
    expect(ids(queryDocuments(coll, { filter: { h: 'k' } }))).toEqual([1, 2]);
    expect(coll.metrics.docsExamined).toBe(2);
  });

  it('keeps iterating correctly when documents change between batches', () => {
    const { coll } = setup();
    for (let i = 0; i < 1000; i++) coll.insert(prepareInsert({ _id: i }));
    const it = queryDocuments(coll, { filter: { _id: { $gte: 0 } } });
    const seen: unknown[] = [];
    for (let i = 0; i < 300; i++) seen.push(plain(it.next().value._id));
    for (let i = 300; i < 400; i++) coll.delete(coll.recordById(i)!);
    coll.insert(prepareInsert({ _id: 5000 }));
    for (let r = it.next(); !r.done; r = it.next()) seen.push(plain(r.value._id));
    expect(seen).toHaveLength(300 + 600 + 1);
    expect(seen[300]).toBe(400);
  });

  it('appends oplog entries for inserts, replacements, deletes and DDL', () => {
    const { node, coll, catalog } = setup();
    const rec = coll.insert(prepareInsert({ _id: 1, a: 1 }));
    coll.replace(rec, { _id: 1, a: 2 }, 'update', {
      updatedFields: { a: 2 },
      removedFields: [],
      truncatedArrays: [],
    });
    coll.delete(coll.recordById(1)!);
    catalog.addIndex(coll, { v: 2, key: { a: 1 }, name: 'a_1' });
    catalog.renameCollection('db', 'c', 'db', 'd', false);
    catalog.dropDatabase('db');
    const ops = [...node.oplog.entriesAfter(undefined)].map((e) => e.op);
    expect(ops).toEqual([
      'noop', // the node's 'initiating set' entry
      'create',
      'insert',
      'update',
      'delete',
      'createIndexes',
      'rename',
      'drop',
      'dropDatabase',
    ]);
    const [, create, insert, update, del, ci, rename] = [...node.oplog.entriesAfter(undefined)];
    expect(create.operationDescription).toEqual({
      idIndex: { v: 2, key: { _id: 1 }, name: '_id_' },
    });
    // Documents and images are kept BSON-encoded; compare them byte for byte.
    expect(insert.postImage).toEqual(encode({ _id: 1, a: 1 }));
    expect(update.preImage).toEqual(encode({ _id: 1, a: 1 }));
    expect(update.postImage).toEqual(encode({ _id: 1, a: 2 }));
    expect(del.preImage).toEqual(encode({ _id: 1, a: 2 }));
    expect(ci.operationDescription).toEqual({ indexes: [{ v: 2, key: { a: 1 }, name: 'a_1' }] });
    expect(rename.operationDescription).toEqual({ to: { db: 'db', coll: 'd' } });
    expect(catalog.databaseNames()).toEqual([]);
  });

  it('evicts the oldest documents from capped collections', () => {
    const { catalog } = setup();
    const capped = catalog.createCollection('db', 'cap', { capped: true, size: 100000, max: 3 });
    for (let i = 0; i < 5; i++) capped.insert(prepareInsert({ _id: i }));
    expect([...capped.naturalRecords(1)].map((r) => plain(r.doc._id))).toEqual([2, 3, 4]);
  });

  it('reaps expired documents through TTL indexes', () => {
    const { coll, catalog } = setup();
    catalog.addIndex(coll, { v: 2, key: { at: 1 }, name: 'at_1', expireAfterSeconds: 60 });
    catalog.stopTtlMonitor();
    const now = Date.now();
    coll.insert(prepareInsert({ _id: 1, at: new Date(now - 120_000) }));
    coll.insert(prepareInsert({ _id: 2, at: new Date(now) }));
    coll.insert(prepareInsert({ _id: 3, at: 'not a date' }));
    coll.insert(prepareInsert({ _id: 4, at: [new Date(now), new Date(now - 600_000)] }));
    expect(catalog.runTtlPass(now)).toBe(2);
    expect(ids(queryDocuments(coll, {}))).toEqual([2, 3]);
  });
});
