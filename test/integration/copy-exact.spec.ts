import { EXACT_BSON } from '@sync/mongo';
import {
  Binary,
  BSONRegExp,
  Code,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
  type Document,
} from 'bson';
import { MongoClient } from 'mongodb';
import { startTestClusters, type TestClusters } from '../helpers/clusters';
import { describeOn, testDb, testNs } from '../helpers/real-clusters';
import { baseRequest, copyWith, documentBytes, userNamespaces } from './copy-helpers';

function everyType(i: number): Document {
  return {
    i32: new Int32(i),
    i64: Long.fromString('9007199254740993'),
    dbl: new Double(i + 0.5),
    negZero: new Double(-0),
    nan: new Double(NaN),
    inf: new Double(Infinity),
    ninf: new Double(-Infinity),
    dec: Decimal128.fromString('1234567890.123456789012345678901234'),
    oid: new ObjectId('64b7f0000000000000000001'),
    date: new Date(1_700_000_000_000 + i),
    ts: new Timestamp({ t: 1_700_000_000, i: i + 1 }),
    bin0: new Binary(Buffer.from([1, 2, 3]), 0),
    uuid: new Binary(Buffer.alloc(16, 7), 4),
    md5: new Binary(Buffer.alloc(16, 9), 5),
    user: new Binary(Buffer.from('custom'), 128),
    re: new BSONRegExp('^a.*b$', 'imsx'),
    min: new MinKey(),
    max: new MaxKey(),
    code: new Code('function () { return 1; }'),
    nested: { z: 1, a: [1, [2, [3, { deep: new Int32(4) }]], 'x'], b: { c: { d: null } } },
    order: { zeta: 1, alpha: 2, mid: 3 },
  };
}

const mixedIds: unknown[] = [
  new MinKey(),
  null,
  new Int32(1),
  new Double(2.5),
  Long.fromNumber(3),
  Decimal128.fromString('4'),
  'a string',
  '',
  { a: 1, b: 'x' },
  new Binary(Buffer.from([0xff]), 0),
  new ObjectId('64b7f0000000000000000002'),
  false,
  true,
  new Date(0),
  new Timestamp({ t: 5, i: 5 }),
  new MaxKey(),
];

describeOn('replicaSets')('copy (integration, emulated or real replica sets)', () => {
  let clusters: TestClusters;
  let source: MongoClient;
  let destination: MongoClient;

  beforeAll(async () => {
    clusters = await startTestClusters();
    source = await MongoClient.connect(clusters.sourceUri);
    destination = await MongoClient.connect(clusters.destinationUri);
  });
  afterAll(async () => {
    await source?.close();
    await destination?.close();
    await clusters?.stop();
  });
  beforeEach(async () => clusters.reset());

  it('copies ≥10 collections across 3 databases exactly, with capped, view and relaxed indexes', async () => {
    const dbs = ['alpha', 'beta', 'gamma'].map(testDb);
    for (const db of dbs) {
      for (let c = 0; c < 4; c++) {
        const docs = Array.from({ length: 60 }, (_, i) => ({ _id: i, ...everyType(i) }));
        await source.db(db).collection<any>(`types${c}`).insertMany(docs);
      }
    }
    await source
      .db(testDb('alpha'))
      .collection<any>('mixed')
      .insertMany(mixedIds.map((_id, n) => ({ _id, n: new Int32(n) })));
    await source
      .db(testDb('beta'))
      .collection<any>('big')
      .insertMany(
        Array.from({ length: 2000 }, (_, i) => ({
          _id: i % 3 === 0 ? `s${i}` : i,
          pad: 'x'.repeat(100),
        })),
      );
    await source.db(testDb('gamma')).createCollection('capped', { capped: true, size: 1 << 20 });
    await source
      .db(testDb('gamma'))
      .collection<any>('capped')
      .insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: 1000 - i })));
    await source.db(testDb('gamma')).createCollection('validated', {
      validator: { $jsonSchema: { required: ['name'] } },
      validationLevel: 'moderate',
    });
    await source.db(testDb('gamma')).collection<any>('validated').insertOne({ _id: 1, name: 'ok' });
    await source
      .db(testDb('alpha'))
      .command({ create: 'cheap', viewOn: 'types0', pipeline: [{ $match: { i32: { $lt: 5 } } }] });
    const ix = source.db(testDb('alpha')).collection<any>('types1');
    await ix.createIndex({ i32: 1, 'order.alpha': 1 }, { unique: true, name: 'uniq' });
    await ix.createIndex({ i32: 1, dbl: -1 }, { name: 'compound' });
    await ix.createIndex({ date: 1 }, { expireAfterSeconds: 3600, name: 'ttl' });
    await ix.createIndex({ oid: 1 }, { hidden: true, name: 'hidden' });
    await ix.createIndex(
      { i32: 1 },
      { partialFilterExpression: { i32: { $gt: 5 } }, name: 'partial' },
    );
    await ix.createIndex({ missing: 1 }, { sparse: true, name: 'sparse' });
    await ix.createIndex({ 'nested.z': 'hashed' }, { name: 'hashed' });

    const job = await copyWith(clusters.sourceUri, clusters.destinationUri, baseRequest);
    const progress = job.progress();
    expect(progress.failure).toBeUndefined();
    expect(progress.collectionCopy!.estimatedCopiedBytes).toBe(
      progress.collectionCopy!.estimatedTotalBytes,
    );
    expect(progress.directionMapping!.Source).toMatch(/^cluster0: [\w.-]+:\d+$/);
    await job.close();

    expect(await userNamespaces(destination)).toEqual(await userNamespaces(source));
    for (const ns of await userNamespaces(source)) {
      const [db, coll] = [ns.slice(0, ns.indexOf('.')), ns.slice(ns.indexOf('.') + 1)];
      if (coll === 'cheap') continue;
      const natural = coll === 'capped';
      expect({ ns, docs: await documentBytes(destination, db, coll, natural) }).toEqual({
        ns,
        docs: await documentBytes(source, db, coll, natural),
      });
    }
    const [view] = await destination
      .db(testDb('alpha'))
      .listCollections({ name: 'cheap' })
      .toArray();
    expect(view).toMatchObject({ type: 'view', options: { viewOn: 'types0' } });
    const [capped] = await destination
      .db(testDb('gamma'))
      .listCollections({ name: 'capped' }, EXACT_BSON)
      .toArray();
    expect((capped as Document).options.capped).toBe(true);

    const srcIx = await source
      .db(testDb('alpha'))
      .collection<any>('types1')
      .listIndexes()
      .toArray();
    const dstIx = await destination
      .db(testDb('alpha'))
      .collection<any>('types1')
      .listIndexes()
      .toArray();
    const byName = new Map(dstIx.map((i) => [i.name, i]));
    for (const s of srcIx) {
      const d = byName.get(s.name)!;
      expect(d).toBeDefined();
      expect(d.key).toEqual(s.key);
      const { unique: _u, hidden: _h, expireAfterSeconds: _e, ...rest } = s;
      expect(d).toMatchObject(rest);
    }
    expect(byName.get('uniq')!.unique).toBeUndefined();
    expect(byName.get('ttl')!.expireAfterSeconds).toBe(2147483647);
    expect(byName.get('hidden')!.hidden).toBeUndefined();

    const meta = destination.db('sync_reserved_for_internal_use');
    const storedJob = await meta.collection<any>('jobs').findOne({});
    expect(storedJob).toMatchObject({ _id: 'worker', state: 'RUNNING', phase: 'copied' });
    expect(JSON.stringify(storedJob)).not.toMatch(/mongodb:\/\//);
    // The catalog is stored as versioned records beside the job document (one per namespace).
    const catalog = await meta
      .collection<any>('catalog')
      .find({ syncID: 'worker', version: { $lte: storedJob.catalog.version } })
      .sort({ version: -1 })
      .toArray();
    expect(JSON.stringify(catalog)).not.toMatch(/mongodb:\/\//);
    const big = catalog
      .map((r) => r.record)
      .find((n: any) => n && n.database === testDb('beta') && n.collection === 'big');
    // Copied by the initial copy: the job's phase `copied` records it done, no record rewritten.
    expect(big).toMatchObject({ copy: 'initial', type: 'collection' });
    expect(big.key).toMatch(/^[0-9a-f]{32}$/); // identified by the source collection's UUID
    const parts = await meta
      .collection<any>('partitions')
      .find({ key: big.key, set: big.partitionSet })
      .toArray();
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.every((p) => p.status === 'done')).toBe(true);
  });

  it('include, regex and exclude filters select exactly the expected namespaces', async () => {
    for (const ns of [
      'shop.orders',
      'shop.orders_old',
      'shop.Invoices',
      'shop.carts',
      'crm.people',
      'crm.leads',
      'logs.app',
    ]) {
      const [db, coll] = testNs(ns).split('.') as [string, string];
      await source.db(db).collection<any>(coll).insertOne({ _id: 1 });
    }
    await copyWith(clusters.sourceUri, clusters.destinationUri, {
      ...baseRequest,
      includeNamespaces: [
        {
          database: testDb('shop'),
          collectionsRegex: { pattern: '^(orders|invoices)', options: 'i' },
        },
        { database: testDb('crm'), collections: ['people', 'leads'] },
      ],
      excludeNamespaces: [
        { database: testDb('shop'), collectionsRegex: { pattern: '_old$' } },
        { database: testDb('crm'), collections: ['leads'] },
      ],
    }).then((job) => job.close());
    expect(await userNamespaces(destination)).toEqual(
      ['crm.people', 'shop.Invoices', 'shop.orders'].map(testNs).sort(),
    );
  });
});
