import { startReplicaSet } from '@sync/mongo-emulator';
import {
  INTERNAL_DATABASE,
  type ClaimGuard,
  type JobRecord,
  type NamespaceRecord,
  type PartitionRecord,
} from '@sync/engine';
import { Int32, Long, Timestamp } from 'bson';
import { MongoClient } from 'mongodb';
import { MongoCoordinationStore } from './mongo-coordination-store';
import { MongoJobStore } from './mongo-job-store';

type Cluster = Awaited<ReturnType<typeof startReplicaSet>>;

const believes = (epoch: number): ClaimGuard => ({
  worker: 'w',
  epoch: () => epoch,
  assertHeld: () => undefined,
  lost: null,
  lose: () => undefined,
});

const ns = (i: number, extra: Partial<NamespaceRecord> = {}): NamespaceRecord =>
  ({
    key: `uuid-${String(i).padStart(5, '0')}`,
    database: 'app',
    collection: `c${i}`,
    type: 'collection',
    options: {},
    indexes: [{ v: new Int32(2), key: { _id: new Int32(1) }, name: '_id_' }],
    relaxedIndexes: [],
    listedAt: new Timestamp({ t: 1, i }),
    copy: 'pending',
    estimatedBytes: 100 * i,
    estimatedCount: i,
    ...extra,
  }) as unknown as NamespaceRecord;

const job = (namespaces: NamespaceRecord[], note = 'n'): JobRecord =>
  ({
    _id: 'w',
    state: 'RUNNING',
    phase: 'copying',
    note,
    namespaces,
    request: { source: 'cluster0', destination: 'cluster1' },
    estimatedTotalBytes: 0,
    nextPartitionSet: 1,
    reversals: 0,
  }) as unknown as JobRecord;

/**
 * The catalog as records (issue: 100,000 namespaces): the job document no longer carries the
 * catalog; each save writes only the namespace records that changed, under the next catalog
 * version, and the job document's write switches to it. Read back exactly (order, BSON types),
 * removals hidden, and what a save that failed before its switch wrote never shows through.
 */
describe('MongoJobStore: the catalog as versioned records', () => {
  let cluster: Cluster;
  let client: MongoClient;
  const catalog = () => client.db(INTERNAL_DATABASE).collection('catalog');
  const jobDoc = () =>
    client
      .db(INTERNAL_DATABASE)
      .collection('jobs')
      .findOne({ _id: 'w' as never });

  beforeAll(async () => {
    cluster = await startReplicaSet();
    client = await new MongoClient(cluster.uri).connect();
  });
  afterAll(async () => {
    await client?.close();
    await cluster?.stop();
  });
  beforeEach(async () => {
    await client.db(INTERNAL_DATABASE).dropDatabase();
  });

  it('writes only what changed; the job document stays small; reads back exactly', async () => {
    const store = new MongoJobStore(client, 'w');
    const namespaces = Array.from({ length: 2_000 }, (_, i) => ns(i));
    await store.saveJob(job(namespaces));
    expect(await catalog().countDocuments({ version: 1 })).toBe(2_000);
    const doc = await jobDoc();
    expect(doc).not.toHaveProperty('namespaces');
    expect(doc?.catalog).toEqual({ version: 1 });

    // One namespace changes, one is added, one removed: three records, one switch.
    const next = namespaces.slice(1).map((n) => ({ ...n }));
    next[10] = { ...next[10]!, copy: 'done', estimatedBytes: new Long(5) as never };
    next.push(ns(9_999));
    await store.saveJob(job(next, 'second'));
    expect(await catalog().countDocuments({ version: 2 })).toBe(3);
    // The replaced records are gone; 2,000 records in all (1,998 + 1 changed + 1 new, and a
    // tombstone hiding the removed one).
    expect(await catalog().countDocuments({})).toBe(2_001);
    // A save that changes no namespace writes no record.
    await store.saveJob(job(next, 'third'));
    expect(await catalog().countDocuments({ version: 3 })).toBe(0);
    expect((await jobDoc())?.catalog).toEqual({ version: 2 });

    const loaded = await new MongoJobStore(client, 'w').load();
    expect((loaded?.job as unknown as { note: string }).note).toBe('third');
    expect(loaded?.job.namespaces.map((n) => n.key)).toEqual(next.map((n) => n.key));
    expect(loaded?.job.namespaces[10]).toMatchObject({ copy: 'done', estimatedBytes: 5 });
    // Exact BSON: the index spec's Int32 stays Int32.
    expect(loaded?.job.namespaces[0]!.indexes[0]!.v).toBeInstanceOf(Int32);
  });

  it('writes the records as they were when saveJob was called, not as they are later', async () => {
    // The session passes its live records (no deep copy of the catalog per save): a record
    // mutated while the write is in flight — by the first save's catalog read, or between its
    // batches — must not leak into it.
    const store = new MongoJobStore(client, 'w');
    const live = Array.from({ length: 2_500 }, (_, i) => ns(i));
    const first = store.saveJob(job(live));
    live[0]!.collection = 'renamedLater';
    live[2_400]!.copy = 'done';
    await first;
    const loaded = await new MongoJobStore(client, 'w').load();
    expect(loaded?.job.namespaces[0]).toMatchObject({ collection: 'c0' });
    expect(loaded?.job.namespaces[2_400]).toMatchObject({ copy: 'pending' });

    // A later save: only the changed records are kept, encoded; again a mutation made after the
    // call does not leak into it, and the next save writes it.
    const second = store.saveJob(job(live, 'second'));
    live[1]!.collection = 'later';
    await second;
    const after = await new MongoJobStore(client, 'w').load();
    expect(after?.job.namespaces.slice(0, 2).map((n) => n.collection)).toEqual([
      'renamedLater',
      'c1',
    ]);
    expect(after?.job.namespaces[2_400]).toMatchObject({ copy: 'done' });
    expect(after?.job.namespaces[0]!.indexes[0]!.v).toBeInstanceOf(Int32);
    await store.saveJob(job(live, 'third'));
    const third = await new MongoJobStore(client, 'w').load();
    expect(third?.job.namespaces[1]).toMatchObject({ collection: 'later' });
  });

  it('saveJobState writes the job document alone, at the catalog version in force', async () => {
    const store = new MongoJobStore(client, 'w');
    // Before the store has written or read the catalog it cannot: the caller saves the job.
    const { namespaces: _none, ...early } = job([]);
    expect(await store.saveJobState(early)).toBe(false);
    const namespaces = Array.from({ length: 50 }, (_, i) => ns(i));
    await store.saveJob(job(namespaces));
    const before = await catalog().countDocuments({});
    const { namespaces: _all, ...state } = job(namespaces, 'committing');
    expect(await store.saveJobState(state)).toBe(true);
    expect(await catalog().countDocuments({})).toBe(before); // no record written or deleted
    expect(await jobDoc()).toMatchObject({ note: 'committing', catalog: { version: 1 } });
    const loaded = await new MongoJobStore(client, 'w').load();
    expect((loaded?.job as unknown as { note: string }).note).toBe('committing');
    expect(loaded?.job.namespaces.map((n) => n.key)).toEqual(namespaces.map((n) => n.key));
  });

  it('a save that fails before its switch leaves the previous catalog in force', async () => {
    const store = new MongoJobStore(client, 'w', believes(1));
    const first = [ns(1), ns(2), ns(3)];
    await store.saveJob(job(first));
    // A newer holder fences the older one off: its next save writes records (new _ids pass
    // the fence) but its job document switch is refused.
    await new MongoCoordinationStore(client).fence('w', 2);
    const zombie = [ns(1, { copy: 'done' }), ns(3), ns(4)];
    await expect(store.saveJob(job(zombie, 'zombie'))).rejects.toMatchObject({
      error: 'ShardClaimLost',
    });
    expect(await catalog().countDocuments({ version: 2 })).toBeGreaterThan(0);

    const successor = new MongoJobStore(client, 'w', believes(2));
    const loaded = await successor.load();
    expect((loaded?.job as unknown as { note: string }).note).toBe('n');
    expect(loaded?.job.namespaces.map((n) => [n.key, n.copy])).toEqual(
      first.map((n) => [n.key, 'pending']),
    );
    // The unswitched records were removed on the way.
    expect(await catalog().countDocuments({ version: 2 })).toBe(0);
    // And the successor's own saves go on from the catalog in force.
    await successor.saveJob(job([...loaded!.job.namespaces, ns(5)], 'successor'));
    const again = await new MongoJobStore(client, 'w').load();
    expect(again?.job.namespaces.map((n) => n.key)).toEqual([1, 2, 3, 5].map((i) => ns(i).key));
  });

  it('reads a job document of the older format (catalog inside) and rewrites it as records', async () => {
    const legacy = { ...job([ns(1), ns(2)], 'legacy') } as unknown as Record<string, unknown>;
    await client
      .db(INTERNAL_DATABASE)
      .collection('jobs')
      .insertOne(legacy as never);
    const store = new MongoJobStore(client, 'w');
    const loaded = await store.load();
    expect(loaded?.job.namespaces.map((n) => n.key)).toEqual([ns(1).key, ns(2).key]);
    await store.saveJob(loaded!.job);
    expect(await jobDoc()).not.toHaveProperty('namespaces');
    expect(await catalog().countDocuments({})).toBe(2);
    const reread = await new MongoJobStore(client, 'w').load();
    expect(reread?.job.namespaces.map((n) => n.key)).toEqual([ns(1).key, ns(2).key]);
  });

  it('a crash at any write of a catalog switch resumes from the last complete catalog', async () => {
    // 2,500 namespaces, then a save that changes 1,200, removes 300 and adds 600: three record
    // writes of up to 1,000, the job document's switch, then the replaced records' removal.
    // The store's process "dies" at its k-th write command (that write and every later one
    // fail), for every k: a fresh store must load the old catalog exactly when the switch had
    // not happened, the new one exactly when it had, and carry on from there.
    const first = Array.from({ length: 2_500 }, (_, i) => ns(i));
    const second = [
      ...first.slice(0, 1_200).map((n) => ({ ...n, copy: 'done' as const })),
      ...first.slice(1_200, 2_200),
      ...Array.from({ length: 600 }, (_, i) => ns(5_000 + i)),
    ];
    const keys = (list: NamespaceRecord[]) => list.map((n) => `${n.key}:${n.copy}`);
    const crashing = await new MongoClient(cluster.uri, {
      appName: 'crashing-store',
      monitorCommands: true,
    }).connect();
    const WRITES = new Set(['insert', 'update', 'delete', 'findAndModify']);
    const writes: string[] = [];
    crashing.on('commandStarted', (e) => {
      if (WRITES.has(e.commandName)) writes.push(`${e.commandName} ${e.command[e.commandName]}`);
    });
    const failFrom = (k: number | 'off') =>
      client.db('admin').command({
        configureFailPoint: 'failCommand',
        // {skip: k}: the first k matching commands run, every later one fails
        mode: k === 'off' ? 'off' : k === 0 ? 'alwaysOn' : { skip: k },
        data: { failCommands: [...WRITES], errorCode: 2, appName: 'crashing-store' },
      });
    try {
      // The switch's writes, in order, from one save that nothing interrupts.
      await new MongoJobStore(crashing, 'w').saveJob(job(first, 'first'));
      writes.length = 0;
      const clean = new MongoJobStore(crashing, 'w');
      await clean.load();
      writes.length = 0;
      await clean.saveJob(job(second, 'second'));
      const sequence = [...writes];
      const switchAt = sequence.indexOf('update jobs');
      expect(sequence.slice(0, switchAt)).toEqual(Array(3).fill('insert catalog'));
      expect(sequence.slice(switchAt + 1)).toEqual(Array(2).fill('delete catalog'));

      for (let k = 0; k < sequence.length; k++) {
        await client.db(INTERNAL_DATABASE).dropDatabase();
        const store = new MongoJobStore(crashing, 'w');
        await store.saveJob(job(first, 'first'));
        await failFrom(k);
        // A failed removal after the switch is not an error of the save (its records are
        // garbage the next load deletes): only writes up to the switch make it throw.
        await store.saveJob(job(second, 'second')).then(
          () => expect(k).toBeGreaterThan(switchAt),
          () => expect(k).toBeLessThanOrEqual(switchAt),
        );
        await failFrom('off');

        const successor = new MongoJobStore(client, 'w');
        const loaded = await successor.load();
        const note = (loaded?.job as unknown as { note: string }).note;
        expect([k, note]).toEqual([k, k <= switchAt ? 'first' : 'second']);
        expect(keys(loaded!.job.namespaces)).toEqual(keys(k <= switchAt ? first : second));

        // It carries on: the next save and a fresh load agree exactly.
        const third = [...loaded!.job.namespaces.slice(100), ns(9_000)];
        await successor.saveJob(job(third, 'third'));
        const reloaded = await new MongoJobStore(client, 'w').load();
        expect(keys(reloaded!.job.namespaces)).toEqual(keys(third));
      }
    } finally {
      await failFrom('off').catch(() => undefined);
      await crashing.close();
    }
  }, 120_000);

  it('partitions saved beside the catalog show only once the job names them, at any crash', async () => {
    // A start's first save: 1,500 records and 1,500 partitions (each namespace's set), written
    // at the same time, then the job document. A store that dies at its k-th write leaves no
    // job and no visible partition, or the job with every partition of the sets it names.
    const namespaces = Array.from({ length: 1_500 }, (_, i) => ns(i, { partitionSet: i + 1 }));
    const partitions: PartitionRecord[] = namespaces.map((n, i) => ({
      _id: `w|${n.key}|${i + 1}|0`,
      syncID: 'w',
      key: n.key,
      set: i + 1,
      index: 0,
      natural: false,
      status: 'pending',
      copiedBytes: 0,
      copiedDocuments: 0,
    }));
    const started = { ...job(namespaces, 'started'), nextPartitionSet: 1_501 } as JobRecord;
    const crashing = await new MongoClient(cluster.uri, {
      appName: 'crashing-start',
      monitorCommands: true,
    }).connect();
    // What the job document's switch starts after: every partition write has been answered.
    const events: string[] = [];
    const counted = new Set(['insert', 'update']);
    crashing.on('commandStarted', (e) => {
      if (counted.has(e.commandName)) events.push(`started ${e.command[e.commandName]}`);
    });
    crashing.on('commandSucceeded', (e) => {
      if (counted.has(e.commandName)) events.push(`answered ${e.commandName}`);
    });
    crashing.on('commandFailed', (e) => {
      if (counted.has(e.commandName)) events.push(`failed ${e.commandName}`);
    });
    const failFrom = (k: number | 'off') =>
      client.db('admin').command({
        configureFailPoint: 'failCommand',
        mode: k === 'off' ? 'off' : k === 0 ? 'alwaysOn' : { skip: k },
        data: { failCommands: ['insert', 'update'], errorCode: 2, appName: 'crashing-start' },
      });
    try {
      // Two record writes and two partition writes (1,000 a bulk), then the switch.
      const switchAt = 4;
      for (let k = 0; k <= switchAt + 1; k++) {
        await client.db(INTERNAL_DATABASE).dropDatabase();
        await failFrom(k);
        const saved = await new MongoJobStore(crashing, 'w').saveJob(started, partitions).then(
          () => true,
          () => false,
        );
        await failFrom('off');
        expect([k, saved]).toEqual([k, k > switchAt]);
        // Nothing of the save is still in flight when the switch starts.
        const switched = events.indexOf('started jobs');
        if (switched >= 0) {
          const before = events.slice(0, switched);
          expect(before.filter((e) => e.startsWith('started')).length).toBe(
            before.filter((e) => !e.startsWith('started')).length,
          );
        }
        events.length = 0;
        const loaded = await new MongoJobStore(client, 'w').load();
        if (!saved) {
          expect([k, loaded]).toEqual([k, null]);
          continue;
        }
        expect(loaded!.job.namespaces.map((n) => n.partitionSet)).toEqual(
          namespaces.map((n) => n.partitionSet),
        );
        expect(loaded!.partitions.map((p) => p._id).sort()).toEqual(
          partitions.map((p) => p._id).sort(),
        );
      }
      // A partition write answered late (the first write held 300 ms): the switch still waits.
      await client.db(INTERNAL_DATABASE).dropDatabase();
      await client.db('admin').command({
        configureFailPoint: 'failCommand',
        mode: { times: 1 },
        data: {
          failCommands: ['insert'],
          blockConnection: true,
          blockTimeMS: 300,
          appName: 'crashing-start',
        },
      });
      await new MongoJobStore(crashing, 'w').saveJob(started, partitions);
      const switched = events.indexOf('started jobs');
      expect(switched).toBeGreaterThan(0);
      const before = events.slice(0, switched);
      expect(before.filter((e) => e.startsWith('started')).length).toBe(
        before.filter((e) => !e.startsWith('started')).length,
      );

      // A store that died at its switch left the records and partitions it wrote; a restarted
      // one saves the same start again: what exists is replaced (the fenced upsert), the rest
      // inserted, and the job shows every partition.
      await client.db(INTERNAL_DATABASE).dropDatabase();
      await client.db('admin').command({
        configureFailPoint: 'failCommand',
        mode: 'alwaysOn',
        data: { failCommands: ['update'], errorCode: 2, appName: 'crashing-start' },
      });
      await expect(new MongoJobStore(crashing, 'w').saveJob(started, partitions)).rejects.toThrow();
      await failFrom('off');
      expect(await client.db(INTERNAL_DATABASE).collection('partitions').countDocuments()).toBe(
        partitions.length,
      );
      events.length = 0;
      const restarted = new MongoJobStore(crashing, 'w');
      expect(await restarted.load()).toBeNull();
      await restarted.saveJob(started, partitions);
      // Every partition was sent as an insert first, then replaced: its 1,500 existed.
      expect(events.filter((e) => e === 'started partitions')).toHaveLength(4);
      const loaded = await new MongoJobStore(client, 'w').load();
      expect(loaded!.partitions.map((p) => p._id).sort()).toEqual(
        partitions.map((p) => p._id).sort(),
      );
    } finally {
      await failFrom('off').catch(() => undefined);
      await crashing.close();
    }
  }, 60_000);

  it('deleteJob removes the catalog; a new job under the same id starts clean', async () => {
    const store = new MongoJobStore(client, 'w');
    await store.saveJob(job([ns(1), ns(2)]));
    await store.deleteJob();
    expect(await catalog().countDocuments({})).toBe(0);
    // Stray records of a crashed earlier job, and a fresh store: none may show through.
    await catalog().insertOne({
      _id: 'w|uuid-00007|1',
      syncID: 'w',
      key: 'uuid-00007',
      version: 1,
      pos: 0,
      record: ns(7),
    } as never);
    await new MongoJobStore(client, 'w').saveJob(job([ns(3)]));
    const loaded = await new MongoJobStore(client, 'w').load();
    expect(loaded?.job.namespaces.map((n) => n.key)).toEqual([ns(3).key]);
  });
});
