import {
  Long,
  MaxKey,
  MinKey,
  MongoClient,
  MongoServerError,
  Timestamp,
  type ClientSession,
  type ChangeStream,
  type ChangeStreamDocument,
  type Document,
} from 'mongodb';
import { startShardedCluster, type EmulatedShardedCluster } from '../src';
import { describeEmulatorOnly } from './helpers/real-server';

const suite = describeEmulatorOnly(
  'an emulated sharded cluster; no real sharded cluster is wired into these specs',
);

/**
 * What a per-shard reader sees when it connects straight to a shard's replica set (with the
 * router's credentials, at the host `listShards` reports): the shard's own change streams,
 * migration events, DDL as the shard executed it, orphans, no-op writes and appendOplogNote.
 */
suite('sharded topology: a shard read directly, as mongod shows it', () => {
  let cluster: EmulatedShardedCluster;
  let router: MongoClient;
  /** Clients connected to each shard directly, in shard order. */
  const direct: MongoClient[] = [];
  const shardIds: string[] = [];

  beforeAll(async () => {
    cluster = await startShardedCluster({
      name: 'ss',
      shards: 2,
      mongos: 1,
      users: [{ user: 'admin', password: 'pw', roles: ['root'] }],
      // No periodic no-op writes here: only the test's own writes move a shard's oplog.
      noopIntervalMs: 3_600_000,
    });
    router = new MongoClient(cluster.uriWithCredentials('admin', 'pw'), {
      serverSelectionTimeoutMS: 5000,
    });
    await router.connect();
    // Connect to each shard as a per-shard worker does: the host listShards reports, the
    // router's credentials.
    const { shards } = await router.db('admin').command({ listShards: 1 });
    for (const s of shards as Array<{ _id: string; host: string }>) {
      const [rs, hosts] = s.host.split('/');
      const c = new MongoClient(`mongodb://admin:pw@${hosts}/?replicaSet=${rs}&authSource=admin`, {
        serverSelectionTimeoutMS: 5000,
      });
      await c.connect();
      direct.push(c);
      shardIds.push(s._id);
    }
  });

  afterAll(async () => {
    await Promise.all(direct.map((c) => c.close()));
    await router?.close();
    await cluster?.stop();
  });

  async function drain(
    stream: ChangeStream<Document, ChangeStreamDocument>,
    n: number,
    ms = 3000,
  ): Promise<ChangeStreamDocument[]> {
    const out: ChangeStreamDocument[] = [];
    const deadline = Date.now() + ms;
    while (out.length < n && Date.now() < deadline) {
      const ev = await stream.tryNext();
      if (ev) out.push(ev);
    }
    return out;
  }

  /**
   * A change stream run with raw aggregate/getMore commands: the driver's watch() does not pass
   * `showMigrationEvents` on (it forwards only the documented options).
   */
  class RawStream {
    private buffer: Document[] = [];
    pbrt: Document | undefined;
    private id: Long = Long.ZERO;
    private ns = '';

    private readonly session: ClientSession;

    private constructor(
      private readonly client: MongoClient,
      private readonly db: string,
    ) {
      this.session = client.startSession();
    }

    static async open(
      client: MongoClient,
      db: string,
      coll: string | 1,
      options: Document,
    ): Promise<RawStream> {
      const s = new RawStream(client, db);
      const reply = await client.db(db).command(
        {
          aggregate: coll,
          pipeline: [{ $changeStream: { ...options } }],
          cursor: {},
        },
        { session: s.session },
      );
      s.id = reply.cursor.id as Long;
      s.ns = String(reply.cursor.ns);
      s.buffer.push(...(reply.cursor.firstBatch as Document[]));
      s.pbrt = reply.cursor.postBatchResumeToken as Document;
      return s;
    }

    /** One getMore; its events. */
    async poll(): Promise<Document[]> {
      const reply = await this.client.db(this.db).command(
        {
          getMore: this.id,
          collection: this.ns.slice(this.ns.indexOf('.') + 1),
          maxTimeMS: 20,
        },
        { session: this.session },
      );
      this.pbrt = reply.cursor.postBatchResumeToken as Document;
      return reply.cursor.nextBatch as Document[];
    }

    async next(n: number, ms = 3000): Promise<Document[]> {
      const deadline = Date.now() + ms;
      while (this.buffer.length < n && Date.now() < deadline)
        this.buffer.push(...(await this.poll()));
      return this.buffer.splice(0, n);
    }

    async close(): Promise<void> {
      await this.client
        .db(this.db)
        .command(
          { killCursors: this.ns.slice(this.ns.indexOf('.') + 1), cursors: [this.id] },
          { session: this.session },
        );
      await this.session.endSession();
    }
  }

  /** The cluster time of a resume token (KeyString: 0x82 then the Timestamp, big-endian). */
  function tokenTime(token: Document): Timestamp {
    const hex = String(token._data);
    return new Timestamp({ t: parseInt(hex.slice(2, 10), 16), i: parseInt(hex.slice(10, 18), 16) });
  }

  /** A few more polls: nothing else arrives. */
  async function nothingMore(stream: ChangeStream<Document, ChangeStreamDocument>): Promise<void> {
    for (let i = 0; i < 3; i++) expect(await stream.tryNext()).toBeNull();
  }

  function summary(events: Array<ChangeStreamDocument | Document>): unknown[] {
    return events.map((e) => [
      e.operationType,
      'documentKey' in e ? (e.documentKey as Document).x : 'ns' in e ? e.ns.coll : undefined,
    ]);
  }

  /** Shards `db.c` on {x: 1} with chunks [MinKey, 0) on the primary and [0, MaxKey) elsewhere. */
  async function shardSplit(db: string): Promise<{ primary: number; other: number }> {
    const admin = router.db('admin');
    await admin.command({ enableSharding: db });
    await admin.command({ shardCollection: `${db}.c`, key: { x: 1 } });
    const entry = await router
      .db('config')
      .collection('databases')
      .findOne({ _id: db as never });
    const primary = shardIds.indexOf(String(entry!.primary));
    const other = 1 - primary;
    await admin.command({ split: `${db}.c`, middle: { x: 0 } });
    await admin.command({ moveChunk: `${db}.c`, find: { x: 0 }, to: shardIds[other] });
    return { primary, other };
  }

  it("a shard's cluster-, database- and collection-level streams report the writes routed to it", async () => {
    const { primary, other } = await shardSplit('s1');
    const watchers = direct.map((d) => ({
      cluster: d.watch([], { maxAwaitTimeMS: 20 }),
      db: d.db('s1').watch([], { maxAwaitTimeMS: 20 }),
      coll: d.db('s1').collection('c').watch([], { maxAwaitTimeMS: 20 }),
    }));
    for (const w of watchers) for (const s of Object.values(w)) await s.tryNext();
    const pbrtBefore = watchers.map((w) => w.cluster.resumeToken);

    const coll = router.db('s1').collection<{ _id: number; x: number }>('c');
    await coll.insertMany([
      { _id: 1, x: -1 },
      { _id: 2, x: 1 },
    ]);
    await coll.updateOne({ x: 1 }, { $set: { y: 1 } });
    await coll.deleteOne({ x: -1 });

    for (const kind of ['cluster', 'db', 'coll'] as const) {
      const onPrimary = await drain(watchers[primary][kind], 2);
      expect(summary(onPrimary)).toEqual([
        ['insert', -1],
        ['delete', -1],
      ]);
      const onOther = await drain(watchers[other][kind], 2);
      expect(summary(onOther)).toEqual([
        ['insert', 1],
        ['update', 1],
      ]);
      expect((onOther[0] as { ns: unknown }).ns).toEqual({ db: 's1', coll: 'c' });
      expect((onOther[0] as { documentKey: Document }).documentKey).toEqual({ x: 1, _id: 2 });
    }
    // Each shard's postBatchResumeToken moved past where the stream started.
    for (const i of [0, 1]) {
      await nothingMore(watchers[i].cluster);
      expect(watchers[i].cluster.resumeToken).not.toEqual(pbrtBefore[i]);
    }
    for (const w of watchers) for (const s of Object.values(w)) await s.close();
  });

  it('migration writes are fromMigrate: hidden by default, shown with showMigrationEvents', async () => {
    const admin = router.db('admin');
    await admin.command({ enableSharding: 's2' });
    await admin.command({ shardCollection: 's2.c', key: { x: 1 } });
    const entry = await router
      .db('config')
      .collection('databases')
      .findOne({ _id: 's2' as never });
    const primary = shardIds.indexOf(String(entry!.primary));
    const other = 1 - primary;
    const coll = router.db('s2').collection<{ _id: number; x: number }>('c');
    await coll.insertMany([
      { _id: 1, x: -1 },
      { _id: 2, x: 1 },
      { _id: 3, x: 2 },
    ]);

    const plain = direct.map((d) => d.watch([], { maxAwaitTimeMS: 20 }));
    const migrations = await Promise.all(
      direct.map((d) =>
        RawStream.open(d, 'admin', 1, { allChangesForCluster: true, showMigrationEvents: true }),
      ),
    );
    for (const s of plain) await s.tryNext();

    await admin.command({ split: 's2.c', middle: { x: 0 } });
    await admin.command({ moveChunk: 's2.c', find: { x: 0 }, to: shardIds[other] });
    await coll.insertOne({ _id: 4, x: 3 });

    // Default streams: only the insert after the migration, on the new owner.
    await nothingMore(plain[primary]);
    expect(summary(await drain(plain[other], 1))).toEqual([['insert', 3]]);
    await nothingMore(plain[other]);

    // showMigrationEvents: the donor's deletes and the recipient's inserts.
    const donor = await migrations[primary].next(2);
    expect(summary(donor)).toEqual([
      ['delete', 1],
      ['delete', 2],
    ]);
    expect(await migrations[primary].poll()).toEqual([]);
    const recipient = await migrations[other].next(3);
    expect(summary(recipient)).toEqual([
      ['insert', 1],
      ['insert', 2],
      ['insert', 3],
    ]);
    expect(recipient[0].fullDocument).toEqual({ _id: 2, x: 1 });
    // Both sides' oplogs carry fromMigrate: true.
    const oplogOf = (i: number, op: string) =>
      direct[i]
        .db('local')
        .collection('oplog.rs')
        .find({ ns: 's2.c', op, fromMigrate: true })
        .toArray();
    expect((await oplogOf(other, 'i')).map((e) => e.o._id)).toEqual([2, 3]);
    expect((await oplogOf(primary, 'd')).map((e) => e.o._id)).toEqual([2, 3]);
    for (const s of plain) await s.close();
    for (const s of migrations) await s.close();
  });

  it('a router refuses showMigrationEvents with 31123', async () => {
    for (const target of [
      router
        .db('admin')
        .aggregate([{ $changeStream: { allChangesForCluster: true, showMigrationEvents: true } }]),
      router
        .db('s1')
        .collection('c')
        .aggregate([{ $changeStream: { showMigrationEvents: true } }]),
      router.db('s1').aggregate([{ $changeStream: { showMigrationEvents: true } }]),
    ]) {
      const err = await target.toArray().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MongoServerError);
      expect(err).toMatchObject({
        code: 31123,
        message: 'Change streams from mongos may not show migration events',
      });
    }
  });

  it('dropping a sharded collection: a normal drop on the primary shard, fromMigrate elsewhere', async () => {
    const { primary, other } = await shardSplit('s3');
    const plain = direct.map((d) => d.db('s3').watch([], { maxAwaitTimeMS: 20 }));
    const migrations = await Promise.all(
      direct.map((d) => RawStream.open(d, 's3', 1, { showMigrationEvents: true })),
    );
    for (const s of plain) await s.tryNext();
    await router.db('s3').collection('c').drop();

    expect(summary(await drain(plain[primary], 1))).toEqual([['drop', 'c']]);
    await nothingMore(plain[other]);
    expect(summary(await migrations[other].next(1))).toEqual([['drop', 'c']]);
    expect(summary(await migrations[primary].next(1))).toEqual([['drop', 'c']]);
    for (const s of plain) await s.close();
    for (const s of migrations) await s.close();
  });

  it('a document inserted straight into a shard (an orphan) shows on that shard only', async () => {
    const { primary, other } = await shardSplit('s4');
    const streams = direct.map((d) => d.db('s4').collection('c').watch([], { maxAwaitTimeMS: 20 }));
    for (const s of streams) await s.tryNext();
    // x: -5 belongs to the primary's chunk; written on the other shard it is an orphan there.
    await direct[other]
      .db('s4')
      .collection<{ _id: number; x: number }>('c')
      .insertOne({ _id: 50, x: -5 });
    expect(
      await direct[other]
        .db('s4')
        .collection('c')
        .findOne({ _id: 50 as never }),
    ).toEqual({
      _id: 50,
      x: -5,
    });
    const events = await drain(streams[other], 1);
    expect(summary(events)).toEqual([['insert', -5]]);
    await nothingMore(streams[primary]);
    for (const s of streams) await s.close();
  });

  it('moveChunk and moveRange move documents as fromMigrate writes, update config.chunks and log to config.changelog', async () => {
    const admin = router.db('admin');
    await admin.command({ enableSharding: 's5' });
    await admin.command({ shardCollection: 's5.c', key: { x: 1 } });
    const dbEntry = await router
      .db('config')
      .collection('databases')
      .findOne({ _id: 's5' as never });
    const primary = shardIds.indexOf(String(dbEntry!.primary));
    const other = 1 - primary;
    const coll = router.db('s5').collection<{ _id: number; x: number }>('c');
    await coll.insertMany([-2, -1, 0, 1, 2].map((x) => ({ _id: x + 10, x })));
    await admin.command({ split: 's5.c', middle: { x: 0 } });
    const migrations = await Promise.all(
      direct.map((d) => RawStream.open(d, 's5', 'c', { showMigrationEvents: true })),
    );

    await admin.command({ moveChunk: 's5.c', find: { x: 1 }, to: shardIds[other] });
    const { uuid } = (await router
      .db('config')
      .collection('collections')
      .findOne({ _id: 's5.c' as never }))!;
    const chunkMap = async () =>
      (
        await router.db('config').collection('chunks').find({ uuid }).sort({ min: 1 }).toArray()
      ).map((c) => [c.min.x, c.max.x, c.shard]);
    expect(await chunkMap()).toEqual([
      [new MinKey(), 0, shardIds[primary]],
      [0, new MaxKey(), shardIds[other]],
    ]);
    expect(await direct[other].db('s5').collection('c').countDocuments()).toBe(3);
    expect(await direct[primary].db('s5').collection('c').countDocuments()).toBe(2);
    expect(summary(await migrations[other].next(3))).toEqual([
      ['insert', 0],
      ['insert', 1],
      ['insert', 2],
    ]);
    expect(summary(await migrations[primary].next(3))).toEqual([
      ['delete', 0],
      ['delete', 1],
      ['delete', 2],
    ]);

    // moveRange (whole chunk by its min) moves it back.
    await admin.command({ moveRange: 's5.c', min: { x: 0 }, toShard: shardIds[primary] });
    expect(await chunkMap()).toEqual([
      [new MinKey(), 0, shardIds[primary]],
      [0, new MaxKey(), shardIds[primary]],
    ]);
    expect(await direct[other].db('s5').collection('c').countDocuments()).toBe(0);
    expect(await coll.countDocuments()).toBe(5);
    expect(summary(await migrations[primary].next(3))).toEqual([
      ['insert', 0],
      ['insert', 1],
      ['insert', 2],
    ]);
    for (const s of migrations) await s.close();

    const log = await router
      .db('config')
      .collection('changelog')
      .find({ ns: 's5.c' })
      .sort({ time: 1 })
      .toArray();
    expect(log.map((e) => [e.what, e.details.from, e.details.to])).toEqual([
      ['moveChunk.start', shardIds[primary], shardIds[other]],
      ['moveChunk.commit', shardIds[primary], shardIds[other]],
      ['moveChunk.start', shardIds[other], shardIds[primary]],
      ['moveChunk.commit', shardIds[other], shardIds[primary]],
    ]);
    const commit = log[1];
    expect(commit).toMatchObject({
      what: 'moveChunk.commit',
      ns: 's5.c',
      shard: shardIds[primary],
      server: cluster.shards[primary].replicaSet.node.host,
      details: {
        min: { x: 0 },
        max: { x: new MaxKey() },
        from: shardIds[primary],
        to: shardIds[other],
        counts: { cloned: 3, catchup: 0, steady: 0 },
      },
    });
    expect(typeof commit._id).toBe('string');
    expect(commit.time).toBeInstanceOf(Date);
    expect(typeof commit.clientAddr).toBe('string');
    expect(commit.details.counts.clonedBytes).toBeGreaterThan(0);
  });

  it('appendOplogNote sent to a shard advances its oplog, operationTime and an idle stream', async () => {
    const shard = direct[0];
    const stream = await RawStream.open(shard, 'admin', 1, { allChangesForCluster: true });
    expect(await stream.poll()).toEqual([]);
    const before = stream.pbrt!;
    const reply = await shard
      .db('admin')
      .command({ appendOplogNote: 1, data: { msg: 'advance the shard' } });
    expect(reply.ok).toBe(1);
    expect(reply.operationTime).toBeInstanceOf(Timestamp);
    const newest = await shard
      .db('local')
      .collection('oplog.rs')
      .find({})
      .sort({ $natural: -1 })
      .limit(1)
      .next();
    expect(newest).toMatchObject({ op: 'n', o: { msg: 'advance the shard' } });
    expect((reply.operationTime as Timestamp).equals(newest!.ts as Timestamp)).toBe(true);
    expect(await stream.poll()).toEqual([]);
    // The high-water-mark token sorts after the one before (hex strings of equal prefix).
    // The stream's high-water mark reaches the note (it may already have pointed at that time:
    // a stream opened on an idle node starts at lastApplied + 1 increment).
    expect(
      tokenTime(stream.pbrt!).compare(reply.operationTime as Timestamp),
    ).toBeGreaterThanOrEqual(0);
    expect(tokenTime(stream.pbrt!).compare(tokenTime(before))).toBeGreaterThanOrEqual(0);
    // A second note moves it on again.
    const again = await shard.db('admin').command({ appendOplogNote: 1, data: { msg: 'again' } });
    expect((again.operationTime as Timestamp).greaterThan(reply.operationTime as Timestamp)).toBe(
      true,
    );
    expect(await stream.poll()).toEqual([]);
    expect(tokenTime(stream.pbrt!).equals(again.operationTime as Timestamp)).toBe(true);
    await stream.close();
  });

  it('appendOplogNote through mongos writes the note on every shard (mongos 6.0+)', async () => {
    const reply = await router
      .db('admin')
      .command({ appendOplogNote: 1, data: { msg: 'through the router' } });
    expect(reply.ok).toBe(1);
    const times: Timestamp[] = [];
    for (const shard of direct) {
      const newest = await shard
        .db('local')
        .collection('oplog.rs')
        .find({})
        .sort({ $natural: -1 })
        .limit(1)
        .next();
      expect(newest).toMatchObject({ op: 'n', o: { msg: 'through the router' } });
      times.push(newest!.ts as Timestamp);
    }
    // The reply's operationTime is the latest of the shards' notes.
    const latest = times.reduce((a, b) => (b.greaterThan(a) ? b : a));
    expect((reply.operationTime as Timestamp).equals(latest)).toBe(true);
  });
});

suite('sharded topology: periodic no-op writes on shard primaries', () => {
  let cluster: EmulatedShardedCluster;
  const direct: MongoClient[] = [];

  beforeAll(async () => {
    // mongod writes one every periodicNoopIntervalSecs (10 s); a test may ask for less.
    cluster = await startShardedCluster({ name: 'nw', shards: 2, noopIntervalMs: 100 });
    for (const s of cluster.shards) {
      const c = new MongoClient(s.uri, { serverSelectionTimeoutMS: 5000 });
      await c.connect();
      direct.push(c);
    }
  });

  afterAll(async () => {
    await Promise.all(direct.map((c) => c.close()));
    await cluster?.stop();
  });

  it('an idle shard writes {msg: "periodic noop"} and its change stream keeps advancing', async () => {
    for (const shard of direct) {
      const stream = shard.watch([], { maxAwaitTimeMS: 20 });
      await stream.tryNext();
      const before = stream.resumeToken as Document;
      const start = await shard.db('admin').command({ ping: 1 });
      await new Promise((r) => setTimeout(r, 450));
      expect(await stream.tryNext()).toBeNull();
      const after = stream.resumeToken as Document;
      expect(String(after._data) > String(before._data)).toBe(true);
      const noops = await shard
        .db('local')
        .collection('oplog.rs')
        .find({ op: 'n', 'o.msg': 'periodic noop', ts: { $gt: start.operationTime as Timestamp } })
        .toArray();
      // About one per interval (the writer skips a round in which anything else was written).
      expect(noops.length).toBeGreaterThanOrEqual(2);
      expect(noops[0]).toMatchObject({ ns: '', o: { msg: 'periodic noop' } });
      await stream.close();
    }
  });
});
