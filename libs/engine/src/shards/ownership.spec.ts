import {
  Binary,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  type Document,
} from 'bson';
import { compareKeyValues } from './key-order';
import {
  ShardOwnership,
  sameChunkMap,
  type ShardedCollectionSnapshot,
  type ShardingSnapshot,
} from './ownership';
import { hashShardKeyValue } from './shard-hash';

const MIN = new MinKey();
const MAX = new MaxKey();
const uuid = (n: number) => n.toString(16).padStart(32, '0');

function coll(
  n: number,
  key: Document,
  chunks: Array<[Document, Document, string]>,
): ShardedCollectionSnapshot {
  return {
    ns: `db.c${n}`,
    uuid: uuid(n),
    key,
    unique: false,
    // Deliberately not in order: the ownership sorts them.
    chunks: chunks.map(([min, max, shard]) => ({ min, max, shard })).reverse(),
  };
}

const RANGE = coll(1, { x: 1 }, [
  [{ x: MIN }, { x: 0 }, 's0'],
  [{ x: 0 }, { x: 'm' }, 's1'],
  [{ x: 'm' }, { x: new ObjectId('000000000000000000000000') }, 's2'],
  [{ x: new ObjectId('000000000000000000000000') }, { x: MAX }, 's0'],
]);
const COMPOUND = coll(2, { a: 1, b: -1 }, [
  [{ a: MIN, b: MIN }, { a: 5, b: MIN }, 's0'],
  [{ a: 5, b: MIN }, { a: 5, b: 10 }, 's1'],
  [{ a: 5, b: 10 }, { a: MAX, b: MAX }, 's2'],
]);
const TWO_62 = Long.fromString('4611686018427387904');
const HASHED = coll(3, { k: 'hashed' }, [
  [{ k: MIN }, { k: TWO_62.negate() }, 's0'],
  [{ k: TWO_62.negate() }, { k: Long.ZERO }, 's1'],
  [{ k: Long.ZERO }, { k: TWO_62 }, 's2'],
  [{ k: TWO_62 }, { k: MAX }, 's3'],
]);
const DOTTED = coll(4, { 'a.b': 1 }, [
  [{ 'a.b': MIN }, { 'a.b': 50 }, 's0'],
  [{ 'a.b': 50 }, { 'a.b': MAX }, 's1'],
]);
const HASHED_COMPOUND = coll(5, { k: 'hashed', x: 1 }, [
  [{ k: MIN, x: MIN }, { k: Long.ZERO, x: MIN }, 's0'],
  [{ k: Long.ZERO, x: MIN }, { k: Long.ZERO, x: 0 }, 's1'],
  [{ k: Long.ZERO, x: 0 }, { k: MAX, x: MAX }, 's2'],
]);

const SNAPSHOT: ShardingSnapshot = {
  shards: ['s0', 's1', 's2', 's3'],
  databases: [
    { name: 'db', primary: 's1' },
    { name: 'other', primary: 's3' },
  ],
  collections: [RANGE, COMPOUND, HASHED, DOTTED, HASHED_COMPOUND],
  balancer: { mode: 'off' },
};

describe('ShardOwnership', () => {
  const own = new ShardOwnership(SNAPSHOT, 's0');

  it('finds sharded collections by uuid (any case, dashes allowed)', () => {
    expect(own.sharded(uuid(1))?.ns).toBe('db.c1');
    expect(own.sharded('00000000-0000-0000-0000-000000000003')?.ns).toBe('db.c3');
    const upper = coll(0xab, { x: 1 }, [[{ x: MIN }, { x: MAX }, 's2']]);
    const o = new ShardOwnership({ ...SNAPSHOT, collections: [upper] }, 's0');
    expect(o.sharded(uuid(0xab).toUpperCase())?.ns).toBe('db.c171');
    expect(o.ownerOf('db', uuid(0xab).toUpperCase(), { x: 1 })).toBe('s2');
    expect(own.sharded(uuid(99))).toBeUndefined();
    expect(own.sharded(undefined)).toBeUndefined();
  });

  it('range key: chunk bounds are inclusive below, exclusive above', () => {
    const owner = (x: unknown) => own.ownerOf('db', uuid(1), { _id: 1, x });
    expect(owner(-1)).toBe('s0');
    expect(owner(0)).toBe('s1');
    expect(owner(new Double(-0))).toBe('s1');
    expect(owner(Long.ZERO)).toBe('s1');
    expect(owner(Decimal128.fromString('-0.0000001'))).toBe('s0');
    expect(owner('l')).toBe('s1');
    expect(owner('m')).toBe('s2');
    expect(owner(new ObjectId('000000000000000000000000'))).toBe('s0');
  });

  it('range key: values of every type fall by MongoDB type order', () => {
    const owner = (x: unknown) => own.ownerOf('db', uuid(1), { _id: 1, x });
    expect(owner(null)).toBe('s0'); // null < numbers
    expect(owner(Number.NaN)).toBe('s0'); // NaN < every number
    expect(owner(-Infinity)).toBe('s0');
    expect(owner(Infinity)).toBe('s1'); // numbers < strings
    expect(owner(Long.MAX_VALUE)).toBe('s1');
    expect(owner({ z: 1 })).toBe('s2'); // strings < objects < ObjectId
    expect(owner(new Binary(Buffer.from([1])))).toBe('s2');
    expect(owner(new ObjectId())).toBe('s0');
    expect(owner(true)).toBe('s0');
    expect(owner(new Date())).toBe('s0');
  });

  it('a missing shard-key field is null', () => {
    expect(own.ownerOf('db', uuid(1), { _id: 1 })).toBe('s0');
    expect(own.ownerOf('db', uuid(2), { _id: 1, a: 5 })).toBe('s1'); // b null: above MinKey
  });

  it('compound key: later fields decide within an equal prefix', () => {
    const owner = (a: unknown, b: unknown) => own.ownerOf('db', uuid(2), { a, b, _id: 1 });
    expect(owner(4.9, 100)).toBe('s0');
    expect(owner(new Int32(5), 9)).toBe('s1');
    expect(owner(5, 9.999)).toBe('s1');
    expect(owner(5, 10)).toBe('s2');
    expect(owner(5, 'x')).toBe('s2');
    expect(owner('a', MIN)).toBe('s2');
  });

  it('hashed key: compares the value hash against Long bounds', () => {
    const owner = (k: unknown) => own.ownerOf('db', uuid(3), { _id: 1, k });
    // hash64 test vectors: 1 → 5902408780260971510, -1 → 1140205862565771219,
    // 42 → -944302157085130861, ObjectId(010203…) → -5588663249627035708.
    expect(owner(1)).toBe('s3');
    expect(owner(new Double(1))).toBe('s3');
    expect(owner(Long.ONE)).toBe('s3');
    expect(owner(-1)).toBe('s2');
    expect(owner(42)).toBe('s1');
    expect(owner(42.9)).toBe('s1');
    expect(owner(new ObjectId('010203040506070809101112'))).toBe('s0');
    // A missing field hashes as null.
    const nullHash = hashShardKeyValue(null);
    const expected = HASHED.chunks.find(
      (c) => compareKeyValues(c.min.k, nullHash) <= 0 && compareKeyValues(nullHash, c.max.k) < 0,
    )!.shard;
    expect(own.ownerOf('db', uuid(3), { _id: 1 })).toBe(expected);
  });

  it('hashed prefix of a compound key', () => {
    const owner = (k: unknown, x: unknown) => own.ownerOf('db', uuid(5), { k, x, _id: 1 });
    expect(owner(1, -5)).toBe('s2'); // positive hash
    expect(owner(42, 0)).toBe('s0'); // negative hash
    // Chunks split on the second field under one hash value.
    const h = hashShardKeyValue('v');
    const snap: ShardingSnapshot = {
      ...SNAPSHOT,
      collections: [
        coll(6, { k: 'hashed', x: 1 }, [
          [{ k: MIN, x: MIN }, { k: h, x: 0 }, 's0'],
          [{ k: h, x: 0 }, { k: MAX, x: MAX }, 's1'],
        ]),
      ],
    };
    const o = new ShardOwnership(snap, 's0');
    expect(o.ownerOf('db', uuid(6), { k: 'v', x: -1 })).toBe('s0');
    expect(o.ownerOf('db', uuid(6), { k: 'v', x: 0 })).toBe('s1');
  });

  it('dotted key paths: nested in a document, literal in a documentKey', () => {
    const owner = (doc: Document) => own.ownerOf('db', uuid(4), doc);
    expect(owner({ _id: 1, a: { b: 49 } })).toBe('s0');
    expect(owner({ _id: 1, a: { b: 50 } })).toBe('s1');
    expect(owner({ 'a.b': 50, _id: 1 })).toBe('s1');
    expect(owner({ 'a.b': 'x', _id: 1 })).toBe('s1');
    expect(owner({ _id: 1, a: { c: 99 } })).toBe('s0'); // missing: null
    expect(owner({ _id: 1, a: 99 })).toBe('s0'); // a is not a document: a.b is missing
    expect(owner({ _id: 1 })).toBe('s0');
  });

  it('unsharded collections belong to the database primary, new databases to the fallback', () => {
    expect(own.ownerOf('db', uuid(42), { _id: 1, x: 1e9 })).toBe('s1');
    expect(own.ownerOf('db', undefined, { _id: 1 })).toBe('s1');
    expect(own.ownerOf('other', uuid(7), { _id: 1 })).toBe('s3');
    expect(own.ownerOf('brand-new', uuid(8), { _id: 1 })).toBe('s0');
    expect(own.primaryOf('other')).toBe('s3');
    expect(own.primaryOf('brand-new')).toBe('s0');
    expect(new ShardOwnership(SNAPSHOT, 's2').primaryOf('brand-new')).toBe('s2');
  });

  it('fails loudly when the chunks leave a gap', () => {
    const gap = coll(9, { x: 1 }, [
      [{ x: MIN }, { x: 0 }, 's0'],
      [{ x: 10 }, { x: MAX }, 's1'],
    ]);
    const o = new ShardOwnership({ ...SNAPSHOT, collections: [gap] }, 's0');
    expect(() => o.ownerOf('db', uuid(9), { x: 5 })).toThrow(/db\.c9/);
    expect(o.ownerOf('db', uuid(9), { x: 10 })).toBe('s1');
  });

  it('binary search agrees with a linear scan over many chunks and mixed values', () => {
    const points: unknown[] = [];
    for (let i = 0; i < 400; i++) points.push(i * 7 - 1000, `k${i}`);
    points.push(new ObjectId('aaaaaaaaaaaaaaaaaaaaaaaa'), new Date(5), true, null);
    points.sort(compareKeyValues);
    const bounds = [MIN, ...points, MAX];
    const chunks: Array<[Document, Document, string]> = [];
    for (let i = 0; i + 1 < bounds.length; i++)
      chunks.push([{ x: bounds[i] }, { x: bounds[i + 1] }, `s${i % 3}`]);
    const big = coll(10, { x: 1 }, chunks);
    const o = new ShardOwnership({ ...SNAPSHOT, collections: [big] }, 's0');
    const probes: unknown[] = [...points, -5000, 5000, 3.5, 'k', 'k999', 'zz', false];
    probes.push(new ObjectId('bbbbbbbbbbbbbbbbbbbbbbbb'), new Date(4), Long.fromInt(-993));
    for (const x of probes) {
      const linear = big.chunks.find(
        (c) => compareKeyValues(c.min.x, x) <= 0 && compareKeyValues(x, c.max.x) < 0,
      )!.shard;
      expect([x, o.ownerOf('db', uuid(10), { x })]).toEqual([x, linear]);
    }
  });
});

describe('sameChunkMap', () => {
  it('is true for an equal map and false when a chunk moved, split or a primary changed', () => {
    const reordered = SNAPSHOT.collections.map((c) => ({ ...c, chunks: [...c.chunks].reverse() }));
    expect(sameChunkMap(SNAPSHOT, { ...SNAPSHOT, collections: reordered })).toBe(true);
    const moved = SNAPSHOT.collections.map((c, i) =>
      i === 0
        ? { ...c, chunks: c.chunks.map((k, j) => (j === 0 ? { ...k, shard: 'other' } : k)) }
        : c,
    );
    expect(sameChunkMap(SNAPSHOT, { ...SNAPSHOT, collections: moved })).toBe(false);
    const split = SNAPSHOT.collections.map((c, i) =>
      i === 0 ? { ...c, chunks: c.chunks.slice(1) } : c,
    );
    expect(sameChunkMap(SNAPSHOT, { ...SNAPSHOT, collections: split })).toBe(false);
    const primaries = SNAPSHOT.databases.map((d, i) => (i === 0 ? { ...d, primary: 'other' } : d));
    expect(sameChunkMap(SNAPSHOT, { ...SNAPSHOT, databases: primaries })).toBe(false);
  });
});

describe('ShardOwnership.assignee (work assignment of a per-shard sync)', () => {
  const own = new ShardOwnership(SNAPSHOT, 's0');
  const members = ['s0', 's1', 's2'];

  it('sharded collections: by _id alone, so a shard-key change keeps the same worker', () => {
    const id = new Int32(42);
    const before = own.assignee('db', RANGE.uuid, { x: -5, _id: id }, members);
    const after = own.assignee('db', RANGE.uuid, { x: 'zzz', _id: id }, members);
    expect(after).toBe(before);
    expect(own.ownerOf('db', RANGE.uuid, { x: -5, _id: id })).not.toBe(
      own.ownerOf('db', RANGE.uuid, { x: 'zzz', _id: id }),
    );
  });

  it('spreads _ids over every worker', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 300; i++) {
      const w = own.assignee('db', HASHED.uuid, { _id: new Int32(i) }, members);
      counts.set(w, (counts.get(w) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual(members);
    for (const n of counts.values()) expect(n).toBeGreaterThan(50);
  });

  it('unsharded collections: the database primary shard (fallback for unknown databases)', () => {
    expect(own.assignee(SNAPSHOT.databases[0]!.name, uuid(99), { _id: 1 }, members)).toBe(
      SNAPSHOT.databases[0]!.primary,
    );
    expect(own.assignee('created-later', uuid(99), { _id: 1 }, members)).toBe('s0');
  });
});
