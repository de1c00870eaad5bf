import { Double, Int32 } from 'bson';
import { diffIndexes } from './index-diff';

describe('diffIndexes', () => {
  const id = { v: 2, key: { _id: 1 }, name: '_id_' };

  it("an index made unique by collMod (mongod appends `unique`) equals the source's", () => {
    const collation = { locale: 'fr', strength: 2 };
    const source = [id, { v: 2, key: { k: 1 }, name: 'k_1', unique: true, collation }];
    const destination = [id, { v: 2, key: { k: 1 }, name: 'k_1', collation, unique: true }];
    expect(diffIndexes(source, destination, true)).toEqual([]);
  });

  it('names the options that differ: a value, a BSON type, one side only', () => {
    const source = [
      { v: 2, key: { a: 1 }, name: 'a_1', expireAfterSeconds: new Int32(60) },
      { v: 2, key: { b: 1 }, name: 'b_1', sparse: true },
    ];
    const destination = [
      { v: 2, key: { a: 1 }, name: 'a_1', expireAfterSeconds: new Double(60) },
      { v: 2, key: { b: 1 }, name: 'b_1', hidden: true },
    ];
    expect(diffIndexes(source, destination, true)).toEqual([
      'index a_1 differs (expireAfterSeconds)',
      'index b_1 differs (sparse, hidden)',
    ]);
  });

  it('plain values compare as their BSON: a JS number as what it encodes to, -0 apart from 0', () => {
    const spec = (extra: object) => [{ v: 2, key: { a: 1 }, name: 'a_1', ...extra }];
    // 60 encodes as an Int32: the same index as one listed with Int32(60).
    expect(
      diffIndexes(
        spec({ expireAfterSeconds: 60 }),
        spec({ expireAfterSeconds: new Int32(60) }),
        true,
      ),
    ).toEqual([]);
    expect(
      diffIndexes(spec({ expireAfterSeconds: 60.5 }), spec({ expireAfterSeconds: 60.5 }), true),
    ).toEqual([]);
    expect(diffIndexes(spec({ weight: 0 }), spec({ weight: -0 }), true)).toEqual([
      'index a_1 differs (weight)',
    ]);
    expect(diffIndexes(spec({ sparse: true }), spec({ sparse: 'true' }), true)).toEqual([
      'index a_1 differs (sparse)',
    ]);
  });

  it("the key's field order is the index: compared as it is", () => {
    const source = [{ v: 2, key: { a: 1, b: 1 }, name: 'ab' }];
    const destination = [{ v: 2, key: { b: 1, a: 1 }, name: 'ab' }];
    expect(diffIndexes(source, destination, true)).toEqual(['index ab differs (key)']);
  });

  it('unique is ignored while relaxed; missing and extra indexes are named', () => {
    const source = [{ v: 2, key: { a: 1 }, name: 'a_1', unique: true }];
    const destination = [
      { v: 2, key: { a: 1 }, name: 'a_1' },
      { v: 2, key: { c: 1 }, name: 'c_1' },
    ];
    expect(diffIndexes(source, destination, false)).toEqual(['index c_1 only on destination']);
    expect(diffIndexes(source, [], false)).toEqual(['index a_1 missing on destination']);
  });
});
