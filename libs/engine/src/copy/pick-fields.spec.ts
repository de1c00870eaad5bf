import {
  BSON,
  BSONRegExp,
  BSONSymbol,
  Binary,
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
} from 'bson';
import { pickTopLevelFields } from './pick-fields';

const EXACT = {
  promoteValues: false,
  promoteLongs: false,
  promoteBuffers: false,
  bsonRegExp: true,
};

describe('pickTopLevelFields', () => {
  // Every BSON type before, between and after the picked fields: each is skipped by its size.
  const doc = {
    d: new Double(1.5),
    s: 'héllo',
    sub: { x: new Int32(1), y: [1, 2, { z: 'deep' }] },
    arr: [new Int32(1), 'two'],
    bin: new Binary(Buffer.from([1, 2, 3]), 4),
    oid: new ObjectId('64b7f0c2a1b2c3d4e5f60718'),
    t: true,
    date: new Date(1_700_000_000_000),
    n: null,
    re: new BSONRegExp('a.c', 'im'),
    ref: new DBRef('c', new ObjectId('64b7f0c2a1b2c3d4e5f60719')),
    code: new Code('function () {}'),
    sym: new BSONSymbol('sym'),
    cws: new Code('x', { a: 1 }),
    i: new Int32(-7),
    ts: new Timestamp({ t: 5, i: 6 }),
    l: Long.fromString('9007199254740993'),
    dec: Decimal128.fromString('1.10'),
    min: new MinKey(),
    max: new MaxKey(),
    _id: new Int32(42),
    region: 'eu',
  };
  const bytes = BSON.serialize(doc);

  it('decodes exactly the named fields, types kept, whatever precedes them', () => {
    const picked = pickTopLevelFields(bytes, ['region', '_id', 'sub']);
    const full = BSON.deserialize(bytes, EXACT);
    expect(Object.keys(picked)).toEqual(['sub', '_id', 'region']);
    expect(BSON.serialize(picked)).toEqual(
      BSON.serialize({ sub: full.sub, _id: full._id, region: full.region }),
    );
    expect(picked._id).toBeInstanceOf(Int32);
  });

  it('skips every type to reach a field at the end; a missing field is absent', () => {
    expect(pickTopLevelFields(bytes, ['max', 'nothere'])).toEqual({ max: new MaxKey() });
    for (const name of Object.keys(doc)) {
      const picked = pickTopLevelFields(bytes, [name]);
      expect(Object.keys(picked)).toEqual([name]);
    }
  });

  it('refuses a malformed document instead of reading past it', () => {
    // {a: <string whose length runs far past the document>}
    const malformed = Buffer.from([12, 0, 0, 0, 0x02, 0x61, 0x00, 0xff, 0xff, 0xff, 0x7f, 0]);
    expect(() => pickTopLevelFields(malformed, ['a'])).toThrow(RangeError);
  });
});
