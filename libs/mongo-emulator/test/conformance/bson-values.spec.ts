import {
  BSON,
  Binary,
  BSONRegExp,
  Code,
  DBRef,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
  UUID,
  type Db,
  type Document,
  type MongoClient,
} from 'mongodb';
import { TestCluster } from '../helpers/cluster';

/** Reads values back exactly as stored (no promotion to JS numbers, Buffers or RegExps). */
const EXACT = {
  promoteValues: false,
  promoteLongs: false,
  promoteBuffers: false,
  bsonRegExp: true,
} as const;

/** Documents with any `_id` type (the driver's default schema wants ObjectId). */
type Loose = any;

async function errorOf(p: Promise<unknown>): Promise<{ code?: number; message: string }> {
  return p.then(
    () => ({ message: 'no error' }),
    (e: { code?: number; message: string }) => e,
  );
}

describe('conformance: BSON values through the driver', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let db: Db;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect();
    db = client.db(cluster.dbName('conf_bson'));
  });
  afterAll(() => cluster.close());

  it('round-trips every BSON type byte for byte', async () => {
    let deep: Document = { leaf: new Int32(1) };
    for (let i = 0; i < 90; i++) deep = { d: deep };
    const bytes16 = Buffer.from([...Array(16).keys()]);
    const doc: Document = {
      _id: new ObjectId(),
      doubles: [-0, NaN, Infinity, -Infinity, 1.5, 5e-324].map((d) => new Double(d)),
      str: 'aé😀\u0000b',
      obj: { z: 1, a: 2, m: { q: [1, { r: 2 }] } },
      bins: [0, 1, 2, 3, 4, 5, 6, 7, 8, 128].map((t) => new Binary(bytes16, t)),
      oldBin: new Binary(Buffer.from('abc'), 2),
      dates: [new Date(-3_155_760_000_000), new Date(8.64e15), new Date(-8.64e15), new Date(0)],
      nul: null,
      re: new BSONRegExp('^a.*b$', 'imsux'),
      code: new Code('function () { return 1; }'),
      cws: new Code('x + y', { y: new Int32(1) }),
      ints: [new Int32(-2147483648), new Int32(2147483647)],
      ts: new Timestamp({ t: 4294967295, i: 4294967295 }),
      longs: [Long.fromString('-9223372036854775808'), Long.fromString('9223372036854775807')],
      decs: [
        'NaN',
        '-NaN',
        '-0',
        '1E+6144',
        '-1E-6176',
        '9.999999999999999999999999999999999E+6144',
      ]
        .concat(['Infinity', '-Infinity', '0E-6176', '1.10'])
        .map((s) => Decimal128.fromString(s)),
      mn: new MinKey(),
      mx: new MaxKey(),
      ref: new DBRef('coll', new ObjectId(), 'db2', { extra: 1 }),
      bools: [true, false],
      deep,
    };
    const c = db.collection('roundtrip');
    await c.insertOne(doc);
    const back = await c.findOne({ _id: doc._id }, EXACT);
    expect(Buffer.from(BSON.serialize(back!)).equals(Buffer.from(BSON.serialize(doc)))).toBe(true);
    // And through a getMore batch and an aggregate, too.
    const viaAgg = await c.aggregate([{ $match: { _id: doc._id } }], EXACT).toArray();
    expect(Buffer.from(BSON.serialize(viaAgg[0])).equals(Buffer.from(BSON.serialize(doc)))).toBe(
      true,
    );
  });

  it('sorts across types in MongoDB comparison order, arrays by min/max element', async () => {
    const values: Array<[string, unknown]> = [
      ['minkey', new MinKey()],
      ['null', null],
      ['nan', new Double(NaN)],
      ['arr', [new Int32(2), new Int32(9)]],
      ['long', Long.fromNumber(3)],
      ['dbl', new Double(4.5)],
      ['dec', Decimal128.fromString('4.7')],
      ['int', new Int32(5)],
      ['str', 'abc'],
      ['obj', { x: 1 }],
      ['bin', new Binary(Buffer.from('ab'), 0)],
      ['oid', new ObjectId('000000000000000000000001')],
      ['false', false],
      ['true', true],
      ['date', new Date(5)],
      ['ts', new Timestamp({ t: 1, i: 1 })],
      ['re', new BSONRegExp('a', 'i')],
      ['code', new Code('x')],
      ['cws', new Code('y', { a: 1 })],
      ['maxkey', new MaxKey()],
      ['emptyarr', []],
    ];
    const c = db.collection<Loose>('sorting');
    await c.insertMany(values.map(([k, v]) => ({ _id: k, v })));
    await c.insertOne({ _id: 'missing' });
    const ids = async (dir: 1 | -1) =>
      (await c.find({}).sort({ v: dir, _id: 1 }).toArray()).map((d) => d._id).join(' ');
    // An empty array sorts before null/missing; [2, 9] sorts as 2 ascending and as 9 descending.
    expect(await ids(1)).toBe(
      'minkey emptyarr missing null nan arr long dbl dec int str obj bin oid false true date ts re code cws maxkey',
    );
    expect(await ids(-1)).toBe(
      'maxkey cws code re ts date true false oid bin obj str arr int dec dbl long nan missing null emptyarr minkey',
    );
  });

  it('compares Int32, Int64, Double and Decimal128 by exact value', async () => {
    const c = db.collection<Loose>('numbers');
    await c.insertMany([
      { _id: 1, v: new Int32(1) },
      { _id: 2, v: Long.fromNumber(1) },
      { _id: 3, v: new Double(1) },
      { _id: 4, v: Decimal128.fromString('1.0') },
      { _id: 5, v: Decimal128.fromString('1.00000000000000000000000000001') },
      { _id: 6, v: new Double(0.1) },
      { _id: 7, v: Long.fromString('9007199254740993') },
      { _id: 8, v: new Double(9007199254740992) },
    ]);
    for (const q of [new Int32(1), Long.fromNumber(1), new Double(1), Decimal128.fromString('1')])
      expect((await c.find({ v: q }).toArray()).map((d) => d._id)).toEqual([1, 2, 3, 4]);
    // Decimal128('0.1') is not the double nearest to 0.1; 2^53 + 1 is not 2^53.
    expect(await c.countDocuments({ v: Decimal128.fromString('0.1') })).toBe(0);
    expect(await c.countDocuments({ v: { $gt: new Double(9007199254740992) } })).toBe(1);
    expect(await c.countDocuments({ v: { $gt: Decimal128.fromString('1') } })).toBe(3);
  });

  it('treats numerically equal _ids as duplicates and finds them by any numeric type', async () => {
    const c = db.collection<Loose>('ids');
    await c.insertOne({ _id: 1 });
    const err = await errorOf(c.insertOne({ _id: new Double(1) }));
    expect(err.code).toBe(11000);
    expect(err.message).toBe(
      `E11000 duplicate key error collection: ${db.databaseName}.ids index: _id_ dup key: { _id: 1.0 }`,
    );
    expect((await errorOf(c.insertOne({ _id: Long.fromNumber(1) }))).code).toBe(11000);
    expect((await errorOf(c.insertOne({ _id: Decimal128.fromString('1.00') }))).code).toBe(11000);
    expect(await c.countDocuments({ _id: Decimal128.fromString('1') })).toBe(1);
  });

  it("formats dup key values like mongod's BSONElement::toString", async () => {
    const c = db.collection<Loose>('dupfmt');
    await c.createIndex({ a: 1 }, { unique: true });
    const cases: Array<[unknown, string]> = [
      [new Double(2), '2.0'],
      [new Double(1.5), '1.5'],
      [new Double(1 / 3), '0.3333333333333333'],
      [new Double(1e21), '1e+21.0'],
      [new Double(1e-7), '1e-07.0'], // appendDoubleNice only looks for an uppercase 'E'
      [new Double(-0), '-0.0'],
      [new Double(Infinity), 'inf.0'],
      [new Double(NaN), 'nan.0'],
      [new Int32(7), '7'],
      [Long.fromNumber(-7), '-7'],
      [Decimal128.fromString('1.10'), '1.10'],
      ['say "hi"', '"say "hi""'],
      ['x'.repeat(200), `"${'x'.repeat(150)}..."`],
      [new Date(-5), 'new Date(-5)'],
      [new ObjectId('0123456789abcdef01234567'), "ObjectId('0123456789abcdef01234567')"],
      [new Binary(Buffer.from('hi'), 0), 'BinData(0, 6869)'],
      [
        new UUID('01234567-89ab-cdef-0123-456789abcdef'),
        'UUID("01234567-89ab-cdef-0123-456789abcdef")',
      ],
      [new Timestamp({ t: 3, i: 4 }), 'Timestamp(3, 4)'],
      [new BSONRegExp('a.b', 'im'), '/a.b/im'],
      [new Code('f()'), 'f()'],
      [new Code('g', { z: 1 }), 'CodeWScope( g, { z: 1 })'],
      [new MinKey(), 'MinKey'],
      [new MaxKey(), 'MaxKey'],
      [{ x: [1, 'a'], e: {} }, '{ x: [ 1, "a" ], e: {} }'],
      [true, 'true'],
      [null, 'null'],
    ];
    for (const [value, shown] of cases) {
      await c.deleteMany({});
      await c.insertOne({ a: value });
      const err = (await errorOf(c.insertOne({ a: value }))) as {
        code?: number;
        message: string;
        keyPattern?: Document;
      };
      expect([err.code, err.message]).toEqual([
        11000,
        `E11000 duplicate key error collection: ${db.databaseName}.dupfmt index: a_1 dup key: { a: ${shown} }`,
      ]);
      expect(err.keyPattern).toEqual({ a: 1 });
    }
  });

  it('reports duplicate keys from update, findAndModify and bulk writes', async () => {
    const c = db.collection<Loose>('dupwrites');
    await c.createIndex({ a: 1, b: -1 }, { unique: true, name: 'ab' });
    await c.insertMany([
      { _id: 1, a: 1, b: 'x' },
      { _id: 2, a: 2, b: 'x' },
    ]);
    const msg = `E11000 duplicate key error collection: ${db.databaseName}.dupwrites index: ab dup key: { a: 1, b: "x" }`;
    const upd = (await errorOf(c.updateOne({ _id: 2 }, { $set: { a: 1 } }))) as Document;
    expect([upd.code, upd.message, upd.keyValue]).toEqual([11000, msg, { a: 1, b: 'x' }]);
    const fam = (await errorOf(c.findOneAndUpdate({ _id: 2 }, { $set: { a: 1 } }))) as Document;
    expect([fam.code, fam.message, fam.keyPattern]).toEqual([11000, msg, { a: 1, b: -1 }]);
    const bulk = (await errorOf(
      c.bulkWrite(
        [
          { insertOne: { document: { _id: 3, a: 3, b: 'x' } } },
          { updateOne: { filter: { _id: 3 }, update: { $set: { a: 1 } } } },
          { insertOne: { document: { _id: 4, a: 1, b: 'x' } } },
        ],
        { ordered: false },
      ),
    )) as unknown as { writeErrors: Array<{ index: number; code: number; errmsg: string }> };
    // Unordered: the driver sends the inserts (0, 2) before the update (1).
    const byIndex = [...bulk.writeErrors].sort((x, y) => x.index - y.index);
    expect(byIndex.map((e) => [e.index, e.code, e.errmsg])).toEqual([
      [1, 11000, msg],
      [2, 11000, msg],
    ]);
  });
});
