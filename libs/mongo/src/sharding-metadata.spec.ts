import { ShardOwnership, type ShardingSnapshot } from '@sync/engine';
import {
  startReplicaSet,
  startShardedCluster,
  type EmulatedShardedCluster,
} from '@sync/mongo-emulator';
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
import { MongoClient } from 'mongodb';
import { EXACT_BSON } from './exact-bson';
import { MongoDestinationCluster } from './mongo-destination-cluster';
import { MongoSourceCluster } from './mongo-source-cluster';

/** Deterministic PRNG (mulberry32) so a failure reproduces. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MISSING = Symbol('missing');

/**
 * A shard-key value of any type MongoDB accepts in a shard key. `hashable` leaves out
 * non-integral Decimal128 values (the emulator hashes them truncated; mongod rounds half to
 * even, which the engine implements).
 */
function keyValue(rnd: () => number, hashable = false): unknown {
  const i = Math.floor(rnd() * 1e6);
  const kinds: Array<() => unknown> = [
    () => new Int32(i - 500000),
    () => new Double((i - 500000) / 7),
    () => i % 1000,
    () => Long.fromBigInt(BigInt(i) * 9007199254740993n - 4n * 10n ** 18n),
    () => Long.fromBigInt(9007199254740992n + BigInt(i % 3)),
    () => new Double(2 ** 53 + (i % 2) * 2),
    () => Decimal128.fromString(hashable ? String(i - 500000) : `${i - 500000}.${i % 10}`),
    () => new Double([Number.NaN, Infinity, -Infinity, -0][i % 4]!),
    () => `s${i}`,
    () => ['', 'm', 'M', '\u00e9t\u00e9', '\u{1f600}', '\uffff', 'zz'][i % 7],
    () => new ObjectId(i.toString(16).padStart(24, '0')),
    () => new Date(i * 1000 - 5e8),
    () => i % 2 === 0,
    () => null,
    () => MISSING,
    () => ({ n: i % 10, s: 'x' }),
    () => new Binary(Buffer.from([i % 256, (i >> 8) % 256]), i % 3 === 0 ? 0 : 128),
  ];
  return kinds[Math.floor(rnd() * kinds.length)]!();
}

function withKey(doc: Document, field: string, value: unknown): Document {
  if (value === MISSING) return doc;
  const parts = field.split('.');
  if (parts.length === 1) return { ...doc, [field]: value };
  return { ...doc, [parts[0]!]: { [parts[1]!]: value, other: 1 } };
}

describe('sharding snapshot + ShardOwnership against an emulated 3-shard cluster', () => {
  let cluster: EmulatedShardedCluster;
  let client: MongoClient;
  const direct: MongoClient[] = [];
  let source: MongoSourceCluster;
  const inserted = new Map<string, number>();

  beforeAll(async () => {
    cluster = await startShardedCluster({ name: 'own', shards: 3, mongos: 1 });
    client = await new MongoClient(cluster.uri, { serverSelectionTimeoutMS: 5000 }).connect();
    for (const shard of cluster.shards)
      direct.push(await new MongoClient(shard.uri, { serverSelectionTimeoutMS: 5000 }).connect());
    source = new MongoSourceCluster(client, 'own');
  });

  afterAll(async () => {
    await client?.close();
    await Promise.all(direct.map((c) => c.close()));
    await cluster?.stop();
  });

  const admin = () => client.db('admin');
  const shardIds = () => cluster.shards.map((s) => s._id);

  async function insert(db: string, coll: string, docs: Document[]): Promise<void> {
    await client.db(db).collection(coll).insertMany(docs);
    inserted.set(`${db}.${coll}`, (inserted.get(`${db}.${coll}`) ?? 0) + docs.length);
  }

  function docs(seed: number, n: number, build: (rnd: () => number, i: number) => Document) {
    const rnd = random(seed);
    return Array.from({ length: n }, (_, i) => build(rnd, i));
  }

  /** Splits at the median document of the chunk holding `find`, then moves that chunk. */
  async function splitAndMove(ns: string, find: Document, to: number): Promise<void> {
    await admin()
      .command({ split: ns, find })
      .catch(() => undefined); // too few documents
    await admin().command({ moveChunk: ns, find, to: shardIds()[to] });
  }

  it('lists what each shard holds exactly as ShardOwnership predicts', async () => {
    await admin().command({ enableSharding: 'own' });
    await admin().command({ shardCollection: 'own.range', key: { x: 1 } });
    await admin().command({ shardCollection: 'own.compound', key: { a: 1, b: 1 } });
    await admin().command({ shardCollection: 'own.hashed', key: { k: 'hashed' } });
    await admin().command({ shardCollection: 'own.dotted', key: { 'u.v': 1 } });

    // Explicit split points across types, then documents, then median splits and moves.
    for (const middle of [0, 'm', new ObjectId('000000000000000000000000'), new Date(0)])
      await admin().command({ split: 'own.range', middle: { x: middle } });
    await admin().command({ moveChunk: 'own.range', find: { x: 5 }, to: shardIds()[1] });
    await admin().command({ moveChunk: 'own.range', find: { x: 'zz' }, to: shardIds()[2] });
    await admin().command({ split: 'own.compound', middle: { a: 2, b: new MinKey() } });
    await admin().command({ split: 'own.compound', middle: { a: 2, b: 'm' } });
    await admin().command({ split: 'own.compound', middle: { a: 'p', b: 0 } });
    await admin().command({ moveChunk: 'own.compound', find: { a: 2, b: 'n' }, to: shardIds()[2] });
    await admin().command({ moveChunk: 'own.compound', find: { a: 'q', b: 1 }, to: shardIds()[1] });
    await admin().command({ split: 'own.dotted', middle: { 'u.v': 'm' } });
    await admin().command({ moveChunk: 'own.dotted', find: { u: { v: 'z' } }, to: shardIds()[0] });
    await admin().command({ moveChunk: 'own.dotted', find: { u: { v: 'a' } }, to: shardIds()[1] });

    const aValues = [1, new Int32(2), new Double(2), 'p', 'q', new ObjectId(), MISSING];
    for (const round of [0, 1]) {
      await insert(
        'own',
        'range',
        docs(10 + round, 150, (rnd) => withKey({}, 'x', keyValue(rnd))),
      );
      await insert(
        'own',
        'compound',
        docs(20 + round, 100, (rnd) =>
          withKey(
            withKey({}, 'a', aValues[Math.floor(rnd() * aValues.length)]),
            'b',
            keyValue(rnd),
          ),
        ),
      );
      await insert(
        'own',
        'hashed',
        docs(30 + round, 120, (rnd) => withKey({}, 'k', keyValue(rnd, true))),
      );
      await insert(
        'own',
        'dotted',
        docs(40 + round, 80, (rnd, i) =>
          i % 9 === 0 ? { u: 'not a document' } : withKey({}, 'u.v', keyValue(rnd)),
        ),
      );
      if (round === 0) {
        // Median splits over the mixed-type documents, moving chunks around.
        await splitAndMove('own.range', { x: 's500000' }, 0);
        await splitAndMove('own.range', { x: new Int32(-3) }, 2);
        await splitAndMove('own.range', { x: true }, 1);
        await splitAndMove('own.compound', { a: 1, b: 0 }, 1);
        await splitAndMove('own.compound', { a: 'q', b: 'zz' }, 0);
        await splitAndMove('own.hashed', { k: 'abc' }, 0);
        await splitAndMove('own.hashed', { k: 42 }, 2);
        await splitAndMove('own.dotted', { u: { v: 100 } }, 2);
      }
    }
    await insert(
      'own',
      'plain',
      docs(50, 30, (rnd) => ({ v: keyValue(rnd) })),
    );
    await insert(
      'elsewhere',
      'plain',
      docs(60, 30, (rnd) => ({ v: keyValue(rnd) })),
    );

    const snapshot = await source.shardingSnapshot();
    expect(snapshot.shards).toEqual([...shardIds()].sort());
    expect(snapshot.balancer.mode).toBe('full');
    expect(snapshot.databases.map((d) => d.name).sort()).toEqual(['elsewhere', 'own']);
    const byNs = new Map(snapshot.collections.map((c) => [c.ns, c]));
    expect([...byNs.keys()].sort()).toEqual([
      'own.compound',
      'own.dotted',
      'own.hashed',
      'own.range',
    ]);
    for (const c of snapshot.collections) expect(c.uuid).toMatch(/^[0-9a-f]{32}$/);
    expect(byNs.get('own.range')!.chunks.length).toBeGreaterThanOrEqual(8);
    // Bounds keep their BSON types: hashed bounds are Longs, int split points Int32s.
    const hashedBounds = byNs.get('own.hashed')!.chunks.map((c) => c.min.k);
    expect(hashedBounds.some((b) => (b as { _bsontype?: string })._bsontype === 'Long')).toBe(true);
    const rangeBounds = byNs.get('own.range')!.chunks.map((c) => c.min.x);
    expect(rangeBounds.some((b) => (b as { _bsontype?: string })._bsontype === 'Int32')).toBe(true);
    expect(rangeBounds.some((b) => b instanceof MinKey)).toBe(true);
    expect(byNs.get('own.range')!.chunks.some((c) => c.max.x instanceof MaxKey)).toBe(true);
    // Every shard owns something, so the check below means something.
    const owners = new Set(snapshot.collections.flatMap((c) => c.chunks.map((ch) => ch.shard)));
    expect(owners.size).toBe(3);

    const uuids = new Map<string, string>();
    for (const db of ['own', 'elsewhere'])
      for (const info of await source.listCollections(db))
        uuids.set(`${db}.${info.name}`, info.uuid!);
    const ownership = new ShardOwnership(snapshot, 'nobody');
    const wrong: string[] = [];
    const held = new Map<string, number>();
    const perShard = new Map<string, number>();
    for (let i = 0; i < direct.length; i++) {
      const shard = cluster.shards[i]!._id;
      for (const ns of inserted.keys()) {
        const [db, coll] = ns.split('.') as [string, string];
        const found = await direct[i]!.db(db).collection(coll).find({}, EXACT_BSON).toArray();
        held.set(ns, (held.get(ns) ?? 0) + found.length);
        perShard.set(shard, (perShard.get(shard) ?? 0) + found.length);
        const key = byNs.get(ns)?.key ?? {};
        for (const doc of found) {
          const owner = ownership.ownerOf(db, uuids.get(ns), doc);
          if (owner !== shard)
            wrong.push(`${ns} ${JSON.stringify(doc)} on ${shard}, predicted ${owner}`);
          // A change event's documentKey: the shard-key fields (dotted names literal), then _id.
          const documentKey = documentKeyOf(doc, key);
          const keyOwner = ownership.ownerOf(db, uuids.get(ns), documentKey);
          if (keyOwner !== shard)
            wrong.push(
              `${ns} key ${JSON.stringify(documentKey)} on ${shard}, predicted ${keyOwner}`,
            );
        }
      }
    }
    expect(wrong).toEqual([]);
    expect(held).toEqual(inserted);
    expect([...perShard.values()].every((n) => n > 0)).toBe(true);
  });

  it('reads and toggles the balancer through both adapters', async () => {
    const destination = new MongoDestinationCluster(client, 'own');
    expect(await source.balancerMode()).toBe('full');
    await source.setBalancer(false);
    expect(await destination.balancerMode()).toBe('off');
    expect((await source.shardingSnapshot()).balancer.mode).toBe('off');
    await destination.setBalancer(true);
    expect(await source.balancerMode()).toBe('full');
  });
});

function documentKeyOf(doc: Document, key: Document): Document {
  const out: Document = {};
  for (const field of Object.keys(key)) {
    let v: unknown = doc;
    for (const p of field.split('.'))
      v = v && typeof v === 'object' && !('_bsontype' in v) ? (v as Document)[p] : undefined;
    if (v !== undefined) out[field] = v;
  }
  out._id = doc._id;
  return out;
}

describe('sharding adapters on a replica set', () => {
  it('report no balancer, an empty snapshot, and ignore setBalancer', async () => {
    const rs = await startReplicaSet();
    const client = await new MongoClient(rs.uri).connect();
    try {
      const source = new MongoSourceCluster(client, rs.host);
      const destination = new MongoDestinationCluster(client, rs.host);
      expect(await source.balancerMode()).toBeNull();
      expect(await destination.balancerMode()).toBeNull();
      await source.setBalancer(false);
      await destination.setBalancer(true);
      const empty: ShardingSnapshot = {
        shards: [],
        databases: [],
        collections: [],
        balancer: { mode: 'off' },
      };
      expect(await source.shardingSnapshot()).toEqual(empty);
    } finally {
      await client.close();
      await rs.stop();
    }
  });
});
