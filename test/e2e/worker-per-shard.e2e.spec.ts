import {
  Binary,
  Decimal128,
  Int32,
  Long,
  ObjectId,
  type Document,
  type MongoClient,
} from 'mongodb';
import { writeErrorName } from '../../scripts/lib/background-writer';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { rng } from '../../scripts/lib/sample-data';
import { stopAllProcesses } from '../helpers/processes';
import { describeOn, onRealClusters, testDb, testNs } from '../helpers/real-clusters';
import {
  APP,
  SYNCER,
  buildOnce,
  closeClients,
  connect,
  copyDone,
  countAll,
  crash,
  midCopy,
  outputOf,
  startShardedCluster,
  startWorker,
  steps,
  tryWrite,
  waitUntil,
  type Progress,
  type ShardedCluster,
  type StartedWorker,
} from './support/harness';

/**
 * One worker per source shard, every piece a real process: an emulated sharded source (2
 * shards) and destination (3 shards), both with authentication, and two built workers launched
 * with `--id <shard>`, driven over HTTP only. The coordinator is killed (SIGKILL) in the middle
 * of the copy, the follower while it applies change events (an application keeps writing on
 * every collection, moving documents between shards by changing their range shard key), and
 * the coordinator again while its commit waits for the follower. Every restarted worker
 * resumes where it was; both commit; the destination equals the source through the routers,
 * with the source's shard keys and no document twice.
 */

type AnyDoc = { _id: unknown } & Document;
type Contact = { _id: string; email: string; tags: string[] };

const SIZE = { users: 18_000, orders: 18_000, events: 6_000, contacts: 10_000, notes: 4_000 };
const TOTAL = Object.values(SIZE).reduce((a, b) => a + b, 0);
/** The range shard key of app.orders is split at 'm': ap/eu below, us above (the moved chunk). */
const REGIONS = ['ap', 'eu', 'us'];
const START = { source: 'cluster0', destination: 'cluster1', enableUserWriteBlocking: true };
const SECRETS = [SYNCER.password, APP.password];

function userDoc(i: number): AnyDoc {
  return {
    _id: new Int32(i),
    uid: `u${i}`,
    name: `user ${i}`,
    score: new Long(i),
    active: !!(i % 2),
  };
}

function orderDoc(i: number, region = REGIONS[i % 3]!): AnyDoc {
  return {
    _id: new Int32(i),
    region,
    total: Decimal128.fromString(`${i % 900}.${String(i % 100).padStart(2, '0')}`),
    lines: [{ sku: `SKU-${i % 500}`, qty: new Int32(1 + (i % 4)) }],
  };
}

function eventDoc(i: number): AnyDoc {
  return {
    _id: new ObjectId(),
    seq: new Long(i),
    kind: i % 5 ? 'view' : 'click',
    at: new Date(i * 1000),
  };
}

function contactDoc(i: number): AnyDoc {
  return { _id: `contact-${i}`, email: `c${i}@example.com`, tags: i % 3 ? ['a'] : [] };
}

function noteDoc(i: number): AnyDoc {
  return { _id: new Long(i), body: `note ${i}`, blob: new Binary(Buffer.from([i % 256, 7]), 0) };
}

async function insertAll(
  client: MongoClient,
  ns: string,
  count: number,
  make: (i: number) => AnyDoc,
): Promise<void> {
  const [db, coll] = testNs(ns).split('.') as [string, string];
  for (let start = 0; start < count; start += 2_000) {
    const docs = Array.from({ length: Math.min(2_000, count - start) }, (_, k) => make(start + k));
    await client.db(db).collection<AnyDoc>(coll).insertMany(docs, { ordered: false });
  }
}

/**
 * Loads the source through its router: `app` and `crm` are created first so that round-robin
 * primaries put them on different shards; app.users is sharded on a hashed key, app.orders on a
 * compound range key split in two with the upper chunk moved to the other shard; app.events,
 * crm.contacts and crm.notes stay unsharded (each on its database's primary).
 */
async function loadSource(
  source: MongoClient,
  shards: readonly string[],
): Promise<{ app: string; crm: string }> {
  if (onRealClusters()) {
    // mongos puts a new database on the shard that holds the least data: name the primaries.
    await source.db('admin').command({ enableSharding: testDb('app'), primaryShard: shards[0] });
    await source.db('admin').command({ enableSharding: testDb('crm'), primaryShard: shards[1] });
  }
  await insertAll(source, 'app.events', SIZE.events, eventDoc);
  await insertAll(source, 'crm.notes', SIZE.notes, noteDoc);
  const databases = source.db('config').collection<{ _id: string; primary: string }>('databases');
  const app = (await databases.findOne({ _id: testDb('app') }))!.primary;
  const crm = (await databases.findOne({ _id: testDb('crm') }))!.primary;

  const admin = source.db('admin');
  await admin.command({ shardCollection: testNs('app.users'), key: { uid: 'hashed' } });
  await admin.command({ shardCollection: testNs('app.orders'), key: { region: 1, _id: 1 } });
  await source.db(testDb('app')).collection('users').createIndex({ name: 1 });
  await source
    .db(testDb('crm'))
    .collection('contacts')
    .createIndex({ email: 1 }, { unique: true, name: 'email_unique' });
  await insertAll(source, 'app.users', SIZE.users, userDoc);
  await insertAll(source, 'app.orders', SIZE.orders, (i) => orderDoc(i));
  await insertAll(source, 'crm.contacts', SIZE.contacts, contactDoc);
  await admin.command({ split: testNs('app.orders'), middle: { region: 'm', _id: 0 } });
  await admin.command({
    moveChunk: testNs('app.orders'),
    find: { region: 'us', _id: 0 },
    to: shards.find((s) => s !== app),
  });
  return { app, crm };
}

interface WriterStats {
  inserts: number;
  updates: number;
  deletes: number;
  /** Updates of app.orders' range shard key across the split point: the document changes shard. */
  crossShardMoves: number;
  /** Updates of that key that keep the document on its shard. */
  keyChangesInShard: number;
  lastError?: string;
}

/**
 * The application: inserts, updates and deletes on every collection through the source's
 * router with retryable writes (the driver's default), including shard-key updates that move
 * an order between the shards. It stops by itself once the source refuses writes (commit).
 */
class ShardedWriter {
  readonly stats: WriterStats = {
    inserts: 0,
    updates: 0,
    deletes: 0,
    crossShardMoves: 0,
    keyChangesInShard: 0,
  };
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly random = rng(11);
  private next = {
    users: SIZE.users,
    orders: SIZE.orders,
    events: SIZE.events,
    contacts: SIZE.contacts,
    notes: SIZE.notes,
  };

  constructor(private readonly client: MongoClient) {}

  get active(): boolean {
    return this.running;
  }

  get writes(): number {
    return this.stats.inserts + this.stats.updates + this.stats.deletes;
  }

  start(opsPerTick = 8, tickMs = 25): void {
    this.running = true;
    this.loop = this.run(opsPerTick, tickMs);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  private async run(opsPerTick: number, tickMs: number): Promise<void> {
    while (this.running) {
      try {
        for (let k = 0; k < opsPerTick && this.running; k++) await this.oneWrite();
      } catch (error) {
        this.stats.lastError = writeErrorName(error);
        this.running = false;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, tickMs));
    }
  }

  private pick(n: number): number {
    return Math.floor(this.random() * n);
  }

  private async oneWrite(): Promise<void> {
    const app = this.client.db(testDb('app'));
    const crm = this.client.db(testDb('crm'));
    const users = app.collection<AnyDoc>('users');
    const orders = app.collection<AnyDoc>('orders');
    const r = this.random();
    if (r < 0.1) {
      await users.insertOne(userDoc(this.next.users++));
      this.stats.inserts += 1;
    } else if (r < 0.2) {
      const i = this.pick(this.next.users);
      await users.updateOne(
        { _id: new Int32(i), uid: `u${i}` },
        { $inc: { score: new Long(3) }, $set: { seen: new Date(1_700_000_000_000 + i) } },
      );
      this.stats.updates += 1;
    } else if (r < 0.24) {
      const i = this.pick(this.next.users);
      await users.deleteOne({ _id: new Int32(i), uid: `u${i}` });
      this.stats.deletes += 1;
    } else if (r < 0.32) {
      await orders.insertOne(orderDoc(this.next.orders++, REGIONS[this.pick(3)]));
      this.stats.inserts += 1;
    } else if (r < 0.55) {
      // Shard-key changes and plain updates need the document's current region (full key).
      const id = new Int32(this.pick(this.next.orders));
      const current = await orders.findOne({ _id: id }, { projection: { region: 1 } });
      if (!current) return;
      const region = current.region as string;
      if (r < 0.4) {
        // Across the split point: mongos moves the document to the other shard (a delete on
        // one shard, an insert on the other).
        const moved = region > 'm' ? (this.random() < 0.5 ? 'eu' : 'ap') : 'us';
        await orders.updateOne({ region, _id: id }, { $set: { region: moved, movedFrom: region } });
        this.stats.crossShardMoves += 1;
      } else if (r < 0.45) {
        // On the same side of the split point: an update of the key, the document stays.
        const next: Record<string, string> = { ap: 'eu', eu: 'ap', us: 'uz', uz: 'us' };
        await orders.updateOne(
          { region, _id: id },
          { $set: { region: next[region]!, changedFrom: region } },
        );
        this.stats.keyChangesInShard += 1;
      } else if (r < 0.52) {
        await orders.updateOne({ region, _id: id }, { $inc: { 'lines.0.qty': new Int32(1) } });
      } else {
        await orders.deleteOne({ region, _id: id });
        this.stats.deletes += 1;
        return;
      }
      this.stats.updates += 1;
    } else if (r < 0.65) {
      await app.collection<AnyDoc>('events').insertOne(eventDoc(this.next.events++));
      this.stats.inserts += 1;
    } else if (r < 0.7) {
      await app
        .collection<AnyDoc>('events')
        .updateOne({ seq: new Long(this.pick(this.next.events)) }, { $set: { kind: 'seen' } });
      this.stats.updates += 1;
    } else if (r < 0.78) {
      await crm.collection<AnyDoc>('contacts').insertOne(contactDoc(this.next.contacts++));
      this.stats.inserts += 1;
    } else if (r < 0.86) {
      await crm
        .collection<Contact>('contacts')
        .updateOne({ _id: `contact-${this.pick(this.next.contacts)}` }, { $push: { tags: 'vip' } });
      this.stats.updates += 1;
    } else if (r < 0.9) {
      await crm
        .collection<Contact>('contacts')
        .deleteOne({ _id: `contact-${this.pick(this.next.contacts)}` });
      this.stats.deletes += 1;
    } else if (r < 0.95) {
      await crm.collection<AnyDoc>('notes').insertOne(noteDoc(this.next.notes++));
      this.stats.inserts += 1;
    } else {
      await crm
        .collection<AnyDoc>('notes')
        .updateOne({ _id: new Long(this.pick(this.next.notes)) }, { $set: { body: 'edited' } });
      this.stats.updates += 1;
    }
  }
}

/** Document counts of the synced collections read on each shard directly, summed per namespace. */
async function countOnShards(cluster: ShardedCluster): Promise<Record<string, number>> {
  const sums: Record<string, number> = {};
  const synced = [`${testDb('app')}.`, `${testDb('crm')}.`];
  for (const shard of cluster.shards) {
    const client = await connect(cluster.shardUri(shard));
    for (const [ns, count] of Object.entries(await countAll(client))) {
      if (!synced.some((prefix) => ns.startsWith(prefix))) continue;
      sums[ns] = (sums[ns] ?? 0) + count;
    }
  }
  return sums;
}

/** app.orders counted by region, by the region a shard-key update moved it from, and by both. */
async function ordersByRegion(client: MongoClient): Promise<Document[]> {
  return client
    .db(testDb('app'))
    .collection('orders')
    .aggregate([
      {
        $group: {
          _id: { region: '$region', movedFrom: '$movedFrom', changedFrom: '$changedFrom' },
          n: { $sum: 1 },
        },
      },
      { $sort: { '_id.region': 1, '_id.movedFrom': 1, '_id.changedFrom': 1 } },
    ])
    .toArray();
}

describeOn('shardedClusters')(
  'one worker per source shard, as processes: SIGKILL during copy, change events and commit',
  () => {
    let source: ShardedCluster;
    let destination: ShardedCluster;
    let sourceAdmin: MongoClient;
    let destinationAdmin: MongoClient;
    let sourceApp: MongoClient;
    let destinationApp: MongoClient;
    let primaries: { app: string; crm: string };
    let coordinatorId: string;
    let followerId: string;
    let writer: ShardedWriter;
    /** The live worker of each shard; every process ever started (for the credential check). */
    const live = new Map<string, StartedWorker>();
    const started: StartedWorker[] = [];
    const step = steps(240_000);

    const launch = async (id: string): Promise<StartedWorker> => {
      const worker = await startWorker(source.uriFor(SYNCER), destination.uriFor(SYNCER), { id });
      live.set(id, worker);
      started.push(worker);
      return worker;
    };
    const api = (id: string) => live.get(id)!.api;
    /** A crashed worker launched again with the same arguments, once it has restored its job. */
    const restart = async (id: string): Promise<Progress> => {
      const worker = await launch(id);
      return worker.api.waitFor(
        'the persisted job to be restored',
        (p) => p.state !== 'INITIALIZING',
      );
    };
    const both = (): string[] => [coordinatorId, followerId];
    /** Fails with the sync's own error when a live worker reports a failure. */
    const expectHealthy = async (): Promise<void> => {
      const failures: string[] = [];
      for (const [id, worker] of live) {
        const progress = await worker.api.progress().catch(() => null);
        if (progress?.failure) failures.push(`${id}: ${progress.failure}`);
      }
      if (failures.length > 0) throw new Error(`the sync failed:\n${failures.join('\n')}`);
    };
    /** Polls the destination for a document, failing early when a worker reports a failure. */
    const replicated = async (ns: string, id: unknown): Promise<void> => {
      const [db, coll] = ns.split('.') as [string, string];
      const deadline = Date.now() + 60_000;
      while (
        !(await destinationAdmin
          .db(db)
          .collection(coll)
          .findOne({ _id: id as never }))
      ) {
        await expectHealthy();
        if (Date.now() > deadline) throw new Error(`${JSON.stringify(id)} never reached ${ns}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };

    beforeAll(async () => {
      buildOnce();
      [source, destination] = await Promise.all([
        startShardedCluster('src', 2, true),
        startShardedCluster('dst', 3, true),
      ]);
      [sourceAdmin, destinationAdmin, sourceApp, destinationApp] = await Promise.all([
        connect(source.uriFor(SYNCER)),
        connect(destination.uriFor(SYNCER)),
        connect(source.uriFor(APP)),
        connect(destination.uriFor(APP)),
      ]);
      [coordinatorId, followerId] = source.shards.map((s) => s._id).sort() as [string, string];
      primaries = await loadSource(sourceAdmin, both());
      writer = new ShardedWriter(sourceApp);
    }, 180_000);

    afterAll(async () => {
      await writer?.stop().catch(() => undefined);
      await closeClients();
      await stopAllProcesses();
    }, 60_000);

    step('loads a source whose data lives on both shards', async () => {
      expect(source.shards).toHaveLength(2);
      expect(primaries.app).not.toBe(primaries.crm);
      const chunks = await sourceAdmin
        .db('config')
        .collection('chunks')
        .find({}, { projection: { shard: 1, uuid: 1 } })
        .toArray();
      const collections = await sourceAdmin.db('config').collection('collections').find().toArray();
      const orders = collections.find((c) => c._id === (testNs('app.orders') as unknown));
      const orderShards = chunks
        .filter((c) => String(c.uuid) === String(orders!.uuid))
        .map((c) => c.shard);
      expect(new Set(orderShards).size).toBe(2);
      const counts = await countAll(sourceAdmin);
      expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(TOTAL);
      // Each shard holds part of both sharded collections.
      const onShards = await Promise.all(
        source.shards.map(async (shard) => {
          const client = await connect(source.shardUri(shard));
          return countAll(client);
        }),
      );
      for (const ns of ['app.users', 'app.orders'].map(testNs)) {
        for (const held of onShards) expect(held[ns]).toBeGreaterThan(0);
      }
    });

    step('both workers start; the coordinator, killed mid-copy, resumes RUNNING', async () => {
      await Promise.all(both().map((id) => launch(id)));
      for (const id of both()) await api(id).waitFor('IDLE after boot', (p) => p.state === 'IDLE');
      // The identical request to both, at the same time.
      await Promise.all(both().map((id) => api(id).expectSuccess('start', START)));

      const atKill = await api(coordinatorId).waitFor(
        'the coordinator in the middle of its copy',
        (p) =>
          midCopy(p) &&
          p.collectionCopy!.estimatedCopiedBytes * 10 >= p.collectionCopy!.estimatedTotalBytes,
        60_000,
        20,
      );
      expect(atKill).toMatchObject({ syncID: coordinatorId, coordinatorID: coordinatorId });
      await crash(live.get(coordinatorId)!);
      const { estimatedCopiedBytes, estimatedTotalBytes } = atKill.collectionCopy!;
      process.stdout.write(
        `coordinator killed at ${estimatedCopiedBytes}/${estimatedTotalBytes} bytes\n`,
      );

      const restored = await restart(coordinatorId);
      expect(restored).toMatchObject({
        state: 'RUNNING',
        syncID: coordinatorId,
        coordinatorID: coordinatorId,
        directionMapping: {
          Source: expect.stringMatching(/^cluster0: /),
          Destination: expect.stringMatching(/^cluster1: /),
        },
      });
      // It resumed its own share of the copy (nobody else copies it).
      expect(restored.info).toBe('collection copy');
      expect(await api(followerId).progress()).toMatchObject({
        state: 'RUNNING',
        syncID: followerId,
        coordinatorID: coordinatorId,
      });

      for (const id of both()) {
        const done = await api(id).waitFor(`${id}: the end of its copy`, copyDone, 90_000);
        expect(done.state).toBe('RUNNING');
        expect(done.collectionCopy!.estimatedCopiedBytes).toBeGreaterThan(0);
      }
      // Nothing has been written since the load: every document is there exactly once.
      const sourceCounts = await countAll(sourceAdmin);
      expect(await countAll(destinationAdmin)).toEqual(sourceCounts);
      expect(await countOnShards(destination)).toEqual(sourceCounts);
      const report = await compareClusters(sourceAdmin, destinationAdmin, {
        databases: [testDb('app'), testDb('crm')],
        compareUnique: false, // unique indexes stay relaxed until commit
      });
      expect(report.differences).toEqual([]);
      expect(report.documents).toBe(TOTAL);
    });

    step(
      'the follower, killed while it applies change events, resumes and catches up',
      async () => {
        writer.start();
        for (const id of both())
          await api(id).waitFor(`${id}: canCommit`, (p) => p.canCommit, 90_000);
        const applying = await api(followerId).waitFor(
          'the follower applying change events',
          (p) => copyDone(p) && (p.totalEventsApplied ?? 0) > 0,
          60_000,
        );
        expect(applying.state).toBe('RUNNING');
        const before = writer.stats.crossShardMoves;
        await waitUntil(
          () => writer.stats.crossShardMoves > before + 5,
          'shard-key moves on the source',
        );
        expect(writer.active).toBe(true);
        await expectHealthy();
        await crash(live.get(followerId)!);

        // Written while the follower is down: documents its shard owns.
        const marker = { _id: `marker-${new ObjectId().toHexString()}`, note: 'follower down' };
        const markerDb = testDb(primaries.app === followerId ? 'app' : 'crm');
        const markerColl = markerDb === testDb('app') ? 'events' : 'notes';
        await sourceApp.db(markerDb).collection<AnyDoc>(markerColl).insertOne(marker);
        const moves = writer.stats.crossShardMoves;
        await waitUntil(
          () => writer.stats.crossShardMoves > moves + 5,
          'shard-key moves while the follower is down',
        );

        const restored = await restart(followerId);
        expect(restored).toMatchObject({
          state: 'RUNNING',
          syncID: followerId,
          coordinatorID: coordinatorId,
        });
        await replicated(`${markerDb}.${markerColl}`, marker._id);
        for (const id of both())
          await api(id).waitFor(`${id}: canCommit again`, (p) => p.canCommit, 90_000);
        expect(writer.active).toBe(true);
      },
    );

    step(
      'commit waits for every worker, survives the coordinator killed, and completes on both',
      async () => {
        // canCommit may drop for a moment between the poll and the call (a lag spike on a
        // loaded machine): the worker refuses with CommitNotReady, and a client tries again.
        for (let tries = 0; ; tries++) {
          await api(coordinatorId).waitFor('canCommit', (p) => p.canCommit, 60_000);
          const answer = await api(coordinatorId).post('commit');
          if (answer.status === 200) break;
          expect(answer.body.error).toBe('CommitNotReady');
          if (tries >= 10) throw new Error(`commit refused: ${JSON.stringify(answer.body)}`);
        }
        const waiting = await api(coordinatorId).waitFor(
          'the coordinator waiting for the follower to commit',
          (p) => p.state === 'COMMITTING' && (p.waitingFor ?? '').includes(followerId),
          30_000,
        );
        expect(waiting.canWrite).toBe(false);
        // The follower has not been told: it keeps syncing, and the source is not blocked yet.
        expect((await api(followerId).progress()).state).toBe('RUNNING');
        const writes = writer.writes;
        await waitUntil(() => writer.writes > writes + 10, 'application writes while commit waits');

        await expectHealthy();
        await crash(live.get(coordinatorId)!);
        const restored = await restart(coordinatorId);
        // A worker restarted in COMMITTING resumes the commit by itself (and waits again).
        expect(restored.state).toBe('COMMITTING');
        await api(coordinatorId).waitFor(
          'the restarted coordinator waiting for the follower',
          (p) => p.state === 'COMMITTING' && (p.waitingFor ?? '').includes(followerId),
          60_000,
        );

        await api(followerId).waitFor('the follower ready to commit', (p) => p.canCommit, 60_000);
        await api(followerId).expectSuccess('commit');
        for (const id of both()) {
          const committed = await api(id).waitFor(
            `${id}: COMMITTED`,
            (p) => p.state === 'COMMITTED',
            90_000,
          );
          expect(committed).toMatchObject({
            canWrite: true,
            lagTimeSeconds: 0,
            info: 'commit completed',
          });
        }
        await writer.stop(); // stopped by itself once the source refused writes
        expect(writer.stats.lastError ?? 'UserWritesBlocked').toBe('UserWritesBlocked');
        process.stdout.write(`writer: ${JSON.stringify(writer.stats)}\n`);
      },
    );

    step(
      'the destination equals the source, sharded with its keys, every document once',
      async () => {
        const sourceCounts = await countAll(sourceAdmin);
        expect(Object.values(sourceCounts).reduce((a, b) => a + b, 0)).toBeGreaterThan(TOTAL / 2);
        expect(await countAll(destinationAdmin)).toEqual(sourceCounts);
        // Read on each destination shard directly: no orphan, no document on two shards.
        expect(await countOnShards(destination)).toEqual(sourceCounts);
        // Every shard-key change arrived: orders per region (and per former region) agree.
        expect(await ordersByRegion(destinationAdmin)).toEqual(await ordersByRegion(sourceAdmin));
        const report = await compareClusters(sourceAdmin, destinationAdmin, {
          databases: [testDb('app'), testDb('crm')],
          compareUnique: true,
        });
        expect(report.differences).toEqual([]);
        expect(report.documents).toBe(Object.values(sourceCounts).reduce((a, b) => a + b, 0));
        expect(writer.stats.crossShardMoves).toBeGreaterThan(10);
        expect(writer.stats.keyChangesInShard).toBeGreaterThan(0);

        const config = destinationAdmin.db('config').collection('collections');
        expect(await config.findOne({ _id: testNs('app.users') as never })).toMatchObject({
          key: { uid: 'hashed' },
        });
        expect(await config.findOne({ _id: testNs('app.orders') as never })).toMatchObject({
          key: { region: 1, _id: 1 },
        });
        for (const ns of ['app.events', 'crm.contacts', 'crm.notes'].map(testNs)) {
          expect(await config.findOne({ _id: ns as never, dropped: { $ne: true } })).toBeNull();
        }
        // The balancers are back on; the application moves over: source blocked, destination open.
        expect((await sourceAdmin.db('admin').command({ balancerStatus: 1 })).mode).toBe('full');
        expect((await destinationAdmin.db('admin').command({ balancerStatus: 1 })).mode).toBe(
          'full',
        );
        const probe = { _id: new ObjectId(), seq: new Long(-1) };
        expect(
          await tryWrite(() => sourceApp.db(testDb('app')).collection('events').insertOne(probe)),
        ).toBe('UserWritesBlocked');
        expect(
          await tryWrite(() =>
            destinationApp.db(testDb('app')).collection('events').insertOne(probe),
          ),
        ).toBe('ok');

        // No worker, killed or not, ever printed a password of the connection strings.
        expect(started.length).toBe(5);
        for (const worker of started) {
          const output = outputOf(worker);
          for (const secret of SECRETS) expect(output).not.toContain(secret);
          expect(output).not.toMatch(/mongodb:\/\/[^\s"]*@/);
        }
      },
    );
  },
);
