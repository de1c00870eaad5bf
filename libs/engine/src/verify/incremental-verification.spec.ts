import { Int32, type Document } from 'bson';
import { documentIdentity } from '../apply/doc-key';
import type { JobSession } from '../job/job-session';
import { systemClock, type Clock } from '../ports/clock';
import type { EngineLogger } from '../ports/engine-logger';
import type { JobRecord, NamespaceRecord, PartitionRecord } from '../ports/job-store';
import { FakeCluster, replicaSet } from '../testing/in-memory-clusters';
import type { DirtyTracker } from './dirty-tracker';
import { Verification, VerificationFailedError, type VerificationOptions } from './verification';

const logger: EngineLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
} as unknown as EngineLogger;

const docs = (n: number): Document[] =>
  Array.from({ length: n }, (_, i) => ({ _id: i, n: new Int32(i), s: `v${i}` }));

/**
 * A session fake's catalog watch: these tests change partitions and records behind the
 * session's back, so every look walks the whole catalog (the incremental look has its own test
 * over a real session).
 */
function walksEverything() {
  let changed = true;
  let looks = 0;
  return {
    watchCatalog: () => null,
    unwatchCatalog: () => undefined,
    changesFor: () => {
      changed = false;
      looks += 1;
      return { full: true, keys: new Set<string>() };
    },
    catalogChangedFor: () => changed,
    /** A catalog write the live pass has not looked at yet (as a session save reports it). */
    catalogWritten: () => void (changed = true),
    looks: () => looks,
  };
}

/** Two clusters with shop.items (100 documents in 4 copy partitions) and a session over them. */
function setup(request: Partial<JobRecord['request']> = {}) {
  const src = new FakeCluster('cluster0', replicaSet('rsA', 'a:1'));
  const dst = new FakeCluster('cluster1', replicaSet('rsB', 'b:1'));
  for (const cluster of [src, dst]) cluster.seed('shop', 'items', docs(100));
  const record = {
    key: 'items-key',
    database: 'shop',
    collection: 'items',
    type: 'collection',
    options: {},
    indexes: [],
    relaxedIndexes: [],
    estimatedBytes: 4_000,
    estimatedCount: 100,
    capped: false,
    copy: 'done',
    partitionSet: 1,
  } as unknown as NamespaceRecord;
  const bounds = [
    [undefined, 25],
    [25, 50],
    [50, 75],
    [75, undefined],
  ] as const;
  const partitions = bounds.map(
    ([min, max], index) =>
      ({
        key: record.key,
        set: 1,
        index,
        ...(min !== undefined ? { min } : {}),
        ...(max !== undefined ? { max } : {}),
      }) as unknown as PartitionRecord,
  );
  const job = { namespaces: [record], request: { ...request } } as unknown as JobRecord;
  const session = {
    job,
    source: src,
    destinationReader: dst,
    partitionsOf: () => partitions,
    catalog: { byKey: (key: string) => (key === record.key ? record : undefined) },
    ...walksEverything(),
  } as unknown as JobSession;
  const { verification, advance } = verifier();
  /** Change application wrote `_id` on the destination (reported as the write lanes do). */
  const wrote = (id: number) =>
    verification.appliedWrites.document(
      { db: 'shop', coll: 'items' },
      id,
      documentIdentity('shop', 'items', { _id: id }),
    );
  const item = (cluster: FakeCluster, id: number) =>
    cluster.collection('shop', 'items')!.documents.find((d) => d._id === id)!;
  return {
    src,
    dst,
    job,
    session,
    verification,
    wrote,
    item,
    advance,
  };
}

/** Runs the live pass until `until` holds, then stops it. */
async function live(s: ReturnType<typeof setup>, until: () => boolean): Promise<void> {
  const controller = new AbortController();
  const running = s.verification.runLive(s.session, controller.signal);
  const deadline = Date.now() + 5_000;
  while (!until() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  controller.abort();
  await running;
  if (!until()) throw new Error('the live pass did not get there');
}

const caughtUp = (s: ReturnType<typeof setup>) => s.verification.caughtUp(s.job);

describe('incremental verification (ranges checked once, then kept verified by writes)', () => {
  it('the final pass reads only the documents written since they were checked, and passes byte-equal', async () => {
    const s = setup();
    await live(s, () => caughtUp(s));
    expect(s.src.comparisons).toBe(4); // every copied range once
    // An application writes; change application applies the writes and reports them.
    for (const id of [3, 30, 31, 99]) {
      s.item(s.src, id).s = `changed ${id}`;
      s.item(s.dst, id).s = `changed ${id}`;
      s.wrote(id);
    }
    s.src.collection('shop', 'items')!.documents.splice(40, 1); // _id 40 deleted on both
    s.dst.collection('shop', 'items')!.documents.splice(40, 1);
    s.wrote(40);
    expect(s.verification.status(s.job, false)?.backlog).toMatchObject({ dirtyDocuments: 5 });
    const before = s.src.comparisons;
    await s.verification.finalPass(s.session, new AbortController().signal);
    expect(s.src.comparisons).toBe(before); // no range re-read
    expect(s.src.documentsReadById).toBe(4); // 3, 30, 31, 99 (40 is gone on both sides)
    expect(s.verification.status(s.job, true)).toMatchObject({
      phase: 'passed',
      mode: 'incremental',
      backlog: { dirtyDocuments: 0, dirtyRanges: 0, uncheckedRanges: 0 },
      finalPass: { mode: 'incremental', rangesRead: 0, documentsRead: 4 },
    });
  });

  it('a live range check that finds documents different names them in the same read, then re-checks only them', async () => {
    const s = setup();
    // Two writes not applied yet: the destination is behind on 10 and 60.
    s.item(s.src, 10).s = 'changed 10';
    s.item(s.src, 60).s = 'changed 60';
    await live(s, () => caughtUp(s));
    // Every range read once on each side, the two that differ included: no second read to
    // name their documents.
    expect([s.src.comparisons, s.dst.comparisons]).toEqual([4, 4]);
    expect(s.verification.status(s.job, false)?.pendingRecheck).toBe(1);
    // Applied since: the next checks read those two documents by _id, not their ranges.
    s.item(s.dst, 10).s = 'changed 10';
    s.item(s.dst, 60).s = 'changed 60';
    s.advance(60_000);
    await live(s, () => s.src.documentsReadById === 2);
    expect([s.src.comparisons, s.dst.comparisons]).toEqual([4, 4]);
    await s.verification.finalPass(s.session, new AbortController().signal);
    expect(s.verification.status(s.job, true)?.phase).toBe('passed');
  });

  it('a document that stays different with no write pending is repaired once by change application, never by the final pass', async () => {
    const s = setup();
    // The identity the lanes and the verifier share: the collection's key and the `_id`.
    const identity = documentIdentity('items-key', '', { _id: 7 });
    const wrote = () =>
      s.verification.appliedWrites.document({ db: 'shop', coll: 'items' }, 7, identity);
    const asked: Array<{ id: unknown; identity: string; collection: unknown }> = [];
    let accept = false;
    s.verification.appliedWrites.repairs!((ns, id, asIdentity, collection) => {
      asked.push({ id, identity: asIdentity, collection });
      if (!accept) return false; // e.g. lanes being resized: asked again at the next check
      expect(ns).toEqual({ db: 'shop', coll: 'items' });
      s.item(s.dst, 7).s = s.item(s.src, 7).s; // the lookup's rewrite, reported as lanes do
      wrote();
      return true;
    });
    // Written by change application, yet different: its events could not reproduce it.
    s.item(s.dst, 7).s = 'not what the source holds';
    wrote();
    s.advance(60_000);
    await live(s, () => asked.length >= 1);
    expect(asked[0]).toMatchObject({ identity, collection: {} });
    expect(Number(asked[0]!.id)).toBe(7); // as the check read it (an Int32)
    expect(s.verification.status(s.job, false)?.documentsRepaired).toBeUndefined();
    accept = true;
    s.advance(60_000); // its next recheck is due
    await live(s, () => s.verification.status(s.job, false)?.documentsRepaired === 1);
    s.advance(60_000);
    await live(s, () => s.verification.status(s.job, false)?.backlog?.dirtyDocuments === 0);
    // Different again after its repair, with no write (altered behind the sync): the final
    // pass reports it and never repairs.
    const before = asked.length;
    s.item(s.dst, 7).s = 'altered again';
    wrote();
    await expect(
      s.verification.finalPass(s.session, new AbortController().signal),
    ).rejects.toBeInstanceOf(VerificationFailedError);
    expect(asked.length).toBe(before);
    expect(s.verification.status(s.job, false)?.documentsRepaired).toBe(1);
  });

  it('a repaired document still different is not repaired again while it is tracked', async () => {
    const s = setup();
    const identity = documentIdentity('items-key', '', { _id: 7 });
    let asked = 0;
    // The rewrite lands, yet the destination still differs (what the repair cannot fix).
    s.verification.appliedWrites.repairs!((ns, id, asIdentity) => {
      asked += 1;
      s.verification.appliedWrites.document(ns, id, asIdentity);
      return true;
    });
    s.item(s.dst, 7).s = 'not what the source holds';
    s.verification.appliedWrites.document({ db: 'shop', coll: 'items' }, 7, identity);
    for (let round = 0; round < 4; round++) {
      s.advance(60_000);
      await live(
        s,
        () =>
          asked >= 1 &&
          s.verification.tracker.get('shop', 'items')!.ids.get(identity)!.differs >= round + 2,
      );
    }
    expect(asked).toBe(1);
    expect(s.verification.status(s.job, false)?.pendingRecheck).toBe(1);
  });

  it('live cycles start a tick apart: one that read for longer is followed at once', async () => {
    const s = setup();
    const { verification, pauses, advance } = pausingVerifier({ recheckMs: 5_000 });
    s.verification = verification;
    // Every range read takes 200 ms of the clock: the first cycle reads the 4 ranges, 800 ms.
    const read = s.src.read.bind(s.src);
    s.src.read = (...args) => {
      if (args[2].sortById) advance(200);
      return read(...args);
    };
    await live(s, () => pauses.length >= 3);
    // After the reading cycle, no pause but the bookkeeping's share; after idle ones, the tick.
    expect(pauses[0]).toBeLessThan(100);
    expect(pauses.slice(1, 3)).toEqual([500, 500]);
  });

  it('a collection being copied is read only once its partitions are in and copied', async () => {
    const s = setup();
    const record = s.job.namespaces[0]!;
    record.copy = 'pending';
    // The catalog names its partition set before the session holds the set's partitions.
    const planned = (s.session.partitionsOf as (key: string) => PartitionRecord[])(record.key);
    let partitions: PartitionRecord[] = [];
    (s.session as { partitionsOf: (key: string) => readonly PartitionRecord[] }).partitionsOf =
      () => partitions;
    const controller = new AbortController();
    const running = s.verification.runLive(s.session, controller.signal);
    const digests: number[] = [];
    try {
      await new Promise((r) => setTimeout(r, 60));
      digests.push(s.src.comparisons); // nothing copied yet: nothing to compare
      partitions = planned.map((p) => ({ ...p, status: 'pending' }) as PartitionRecord);
      await new Promise((r) => setTimeout(r, 60));
      digests.push(s.src.comparisons);
      partitions[0]!.status = 'done'; // the first range's copy landed
      const deadline = Date.now() + 5_000;
      while (s.src.comparisons < 1 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 5));
    } finally {
      controller.abort();
      await running;
    }
    expect(digests).toEqual([0, 0]);
    expect(s.src.comparisons).toBe(1);
    expect(s.dst.comparisons).toBe(1);
  });

  it('a collection being copied has its metadata compared once its own copy is done, not after the whole copy', async () => {
    // The job is still copying (no phase `copied`) throughout.
    const listingsOnceCopied = async (copiedDocuments: number) => {
      const s = setup();
      const record = s.job.namespaces[0]!;
      record.copy = 'pending';
      const partitions = (s.session.partitionsOf as (key: string) => PartitionRecord[])(
        record.key,
      ).map((p) => ({ ...p, status: 'pending', copiedDocuments: 0 }) as PartitionRecord);
      (s.session as { partitionsOf: (key: string) => readonly PartitionRecord[] }).partitionsOf =
        () => partitions;
      const listings = () => s.src.indexListings + s.src.batchedIndexListings;
      const controller = new AbortController();
      const running = s.verification.runLive(s.session, controller.signal);
      const seen: number[] = [];
      try {
        await new Promise((r) => setTimeout(r, 60));
        seen.push(listings()); // nothing copied: nothing compared
        partitions.slice(0, 3).forEach((p) => {
          p.status = 'done';
          p.copiedDocuments = copiedDocuments;
        });
        await new Promise((r) => setTimeout(r, 60));
        seen.push(listings()); // one partition still copying
        partitions[3]!.status = 'done';
        partitions[3]!.copiedDocuments = copiedDocuments;
        const deadline = Date.now() + 300;
        while (listings() === 0 && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 5));
        seen.push(listings());
      } finally {
        controller.abort();
        await running;
      }
      return seen;
    };
    const [nothing, partly, copied] = await listingsOnceCopied(25);
    expect([nothing, partly]).toEqual([0, 0]);
    expect(copied).toBeGreaterThan(0);
    // Left to the copy's first insert to create, and no partition wrote a document: it is
    // created when the whole copy ends, and compared only then.
    expect(await listingsOnceCopied(0)).toEqual([0, 0, 0]);
  });

  it('follows a catalog record changed in place between live cycles (a rename), and one removed', async () => {
    const s = setup();
    await live(s, () => caughtUp(s));
    expect(s.src.comparisons).toBe(4);
    // A rename as the catalog applies it: the same record object, renamed in place.
    for (const cluster of [s.src, s.dst]) cluster.seed('shop', 'renamed', docs(100));
    const record = s.job.namespaces[0]!;
    record.collection = 'renamed';
    const tracker = (s.verification as unknown as { tracker: DirtyTracker }).tracker;
    await live(s, () => s.src.comparisons === 8 && caughtUp(s));
    expect(tracker.get('shop', 'items')).toBeUndefined();
    expect(tracker.get('shop', 'renamed')?.ranges?.every((r) => r.checked)).toBe(true);
    // Dropped from the catalog: no longer followed.
    s.job.namespaces = [];
    await live(s, () => tracker.get('shop', 'renamed') === undefined);
    expect(s.src.comparisons).toBe(8);
  });

  it('caughtUp waits for the live pass to look at the catalog again: a collection planned and copied between two looks is read first', async () => {
    const s = setup();
    const record = s.job.namespaces[0]!;
    const copied = { copy: record.copy, partitionSet: record.partitionSet };
    // Still to copy, no partition planned: a look finds nothing to check.
    record.copy = 'pending';
    delete (record as { partitionSet?: number }).partitionSet;
    const session = s.session as unknown as ReturnType<typeof walksEverything>;
    const controller = new AbortController();
    const running = s.verification.runLive(s.session, controller.signal);
    try {
      const deadline = Date.now() + 5_000;
      while (session.looks() === 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 2));
      expect(s.src.comparisons).toBe(0);
      // Planned and copied before the next look (a small collection): the catalog write.
      Object.assign(record, copied);
      session.catalogWritten();
      expect(caughtUp(s)).toBe(false);
      while (!caughtUp(s) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
      // Caught up only once every range of it was checked.
      expect(caughtUp(s)).toBe(true);
      expect(s.src.comparisons).toBe(4);
    } finally {
      controller.abort();
      await running;
    }
  });

  it('mode full re-reads every range', async () => {
    const s = setup({ verification: { enabled: true, mode: 'full' } });
    await live(s, () => caughtUp(s));
    await s.verification.finalPass(s.session, new AbortController().signal);
    expect(s.verification.status(s.job, true)?.finalPass).toMatchObject({
      mode: 'full',
      rangesRead: 4,
      documentsRead: 100,
    });
  });

  it('a document changed on the source, then altered on the destination behind the sync, fails the final pass by namespace and _id', async () => {
    const s = setup();
    await live(s, () => caughtUp(s));
    s.item(s.src, 12).s = 'from the application';
    s.item(s.dst, 12).s = 'from the application';
    s.wrote(12);
    s.item(s.dst, 12).s = 'behind the sync'; // after change application wrote it
    const failure = await s.verification
      .finalPass(s.session, new AbortController().signal)
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(VerificationFailedError);
    expect((failure as Error).message).toContain(
      'shop.items: document _id {"$numberInt":"12"} differs',
    );
    expect(s.verification.status(s.job, false)).toMatchObject({
      phase: 'failed',
      mismatches: 1,
      samples: [{ namespace: 'shop.items', ids: ['{"$numberInt":"12"}'] }],
    });
    // Still dirty: once fixed, commit again re-checks it and passes.
    s.item(s.dst, 12).s = 'from the application';
    await s.verification.finalPass(s.session, new AbortController().signal);
  });

  it('what an incremental pass cannot see: a destination document altered where nothing was written since its check', async () => {
    const s = setup();
    await live(s, () => caughtUp(s));
    s.item(s.dst, 60).s = 'behind the sync';
    await s.verification.finalPass(s.session, new AbortController().signal); // passes
    const full = setup({ verification: { enabled: true, mode: 'full' } });
    await live(full, () => caughtUp(full));
    full.item(full.dst, 60).s = 'behind the sync';
    await expect(
      full.verification.finalPass(full.session, new AbortController().signal),
    ).rejects.toThrow('document _id {"$numberInt":"60"} differs');
  });

  it('without a live pass (a restart, a per-shard coordinator) the final pass reads every range', async () => {
    const s = setup();
    s.item(s.dst, 80).s = 'behind the sync';
    await expect(s.verification.finalPass(s.session, new AbortController().signal)).rejects.toThrow(
      'document _id {"$numberInt":"80"} differs',
    );
  });

  it('canCommit waits for the live pass, which gives way to change application only while it keeps up', async () => {
    const s = setup();
    const controller = new AbortController();
    let held = 0;
    // Change application stays behind throughout: a live pass that always gave way to it would
    // never check anything, and canCommit would stay false for ever.
    const running = s.verification.runLive(s.session, controller.signal, async () => {
      held += 1;
      while (!controller.signal.aborted) await new Promise((r) => setTimeout(r, 2));
    });
    expect(caughtUp(s)).toBe(false); // ranges not checked yet
    expect(s.verification.status(s.job, false)?.caughtUp).toBe(false);
    // Behind on its own work (unchecked ranges), it does not give way: every range is checked.
    while (!caughtUp(s)) await new Promise((r) => setTimeout(r, 2));
    expect(held).toBe(0);
    // A write left unchecked past half the limit: the live pass checks it without giving way,
    // though change application is still behind.
    s.wrote(5);
    s.advance(6_000);
    expect(caughtUp(s)).toBe(false);
    while (!caughtUp(s)) await new Promise((r) => setTimeout(r, 2));
    expect(held).toBe(0);
    controller.abort();
    await running;
    expect(caughtUp(s)).toBe(true); // no live pass: nothing to wait for
  });

  it('a read that fails transiently is retried in place and progress says so', async () => {
    const s = setup();
    const read = s.dst.read.bind(s.dst);
    let failures = 1;
    s.dst.read = (...args) => {
      if (args[2].sortById && failures-- > 0)
        throw Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' });
      return read(...args);
    };
    await s.verification.finalPass(s.session, new AbortController().signal);
    expect(s.verification.status(s.job, true)).toMatchObject({
      phase: 'passed',
      retriedReads: 1,
      lastRetry: expect.stringContaining('comparison of shop.items: MongoNetworkError'),
    });
  });

  it('verification disabled: the commit skips the check and progress says so', async () => {
    const s = setup({ verification: { enabled: false } });
    s.item(s.dst, 1).s = 'behind the sync';
    await s.verification.finalPass(s.session, new AbortController().signal);
    expect(s.src.comparisons).toBe(0);
    expect(caughtUp(s)).toBe(true);
    expect(s.verification.status(s.job, true)).toMatchObject({
      phase: 'disabled',
      finalPass: { mode: 'skipped' },
    });
  });
});

/** `n` small collections of one database (3 documents each) on both sides, one range each. */
function smallCollections(n: number, options: (i: number) => Document = () => ({})) {
  const src = new FakeCluster('cluster0', replicaSet('rsA', 'a:1'));
  const dst = new FakeCluster('cluster1', replicaSet('rsB', 'b:1'));
  const namespaces = Array.from({ length: n }, (_, i) => {
    for (const cluster of [src, dst]) cluster.seed('tenants', `t${i}`, docs(3));
    return {
      key: `key-${i}`,
      database: 'tenants',
      collection: `t${i}`,
      type: 'collection',
      options: options(i),
      indexes: [],
      relaxedIndexes: [],
      estimatedBytes: 120,
      estimatedCount: 3,
      capped: false,
      copy: 'done',
      partitionSet: 1,
    } as unknown as NamespaceRecord;
  });
  const job = { namespaces, request: {} } as unknown as JobRecord;
  const session = {
    job,
    source: src,
    destinationReader: dst,
    partitionsOf: (key: string) => [
      { key, set: 1, index: 0, status: 'done', natural: false } as unknown as PartitionRecord,
    ],
    ...walksEverything(),
  } as unknown as JobSession;
  return { src, dst, job, session, verification: verifier().verification };
}

/** A verifier on a clock that each of its sleeps moves on (the live pass runs at full speed). */
/** As `verifier`, also recording every pause the live pass asks the clock for. */
function pausingVerifier(options: Partial<VerificationOptions> = {}) {
  let now = 0;
  const pauses: number[] = [];
  const clock: Clock = {
    now: () => now,
    sleep: (ms, signal) => (pauses.push(ms), (now += ms), systemClock.sleep(2, signal)),
  };
  const verification = new Verification({ logger, clock, caughtUpMs: 5_000, ...options });
  return { verification, pauses, advance: (ms: number) => (now += ms) };
}

function verifier(options: Partial<VerificationOptions> = {}) {
  let now = 0;
  const clock: Clock = {
    now: () => now,
    sleep: (ms, signal) => ((now += ms), systemClock.sleep(2, signal)),
  };
  const verification = new Verification({
    logger,
    clock,
    recheckMs: 100,
    caughtUpMs: 5_000,
    ...options,
  });
  return { verification, advance: (ms: number) => (now += ms) };
}

describe('many small collections', () => {
  const liveUntilCaughtUp = async (s: ReturnType<typeof smallCollections>) => {
    const controller = new AbortController();
    const running = s.verification.runLive(s.session, controller.signal);
    const deadline = Date.now() + 5_000;
    while (!s.verification.caughtUp(s.job) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    await running;
    expect(s.verification.caughtUp(s.job)).toBe(true);
  };

  it('are digested together, 50 a read per side; one that differs is then read alone and named', async () => {
    const s = smallCollections(120);
    s.dst.collection('tenants', 't7')!.documents[1]!.s = 'altered behind the sync';
    await liveUntilCaughtUp(s);
    expect(s.src.batchedDigests).toBe(3); // 120 collections: 50 + 50 + 20
    expect(s.dst.batchedDigests).toBe(3);
    expect(s.src.comparisons).toBe(1); // t7 alone, to name its document
    expect(s.verification.status(s.job, false)?.samples).toEqual([
      expect.objectContaining({ namespace: 'tenants.t7', ids: ['{"$numberInt":"1"}'] }),
    ]);
  });

  it('lists indexes 100 collections a read per side; the rest of the pass takes them from there', async () => {
    const s = smallCollections(120);
    for (const cluster of [s.src, s.dst])
      for (let i = 0; i < 120; i++)
        cluster
          .collection('tenants', `t${i}`)!
          .indexes.push({ v: 2, key: { _id: 1 }, name: '_id_' });
    await liveUntilCaughtUp(s);
    expect(s.src.batchedIndexListings).toBe(2); // 100 + 20
    expect(s.dst.batchedIndexListings).toBe(2);
    expect(s.src.indexListings + s.dst.indexListings).toBe(0);
    expect(s.verification.status(s.job, false)?.samples).toEqual([]);
  });

  it('while they are copied, a database is compared once none of its collections still copies', async () => {
    const s = smallCollections(6);
    const partitions = new Map(
      s.job.namespaces.map((n) => {
        n.copy = 'pending'; // the job is still copying throughout
        const p = { key: n.key, set: 1, index: 0, status: 'pending', natural: false };
        return [n.key, [{ ...p, copiedDocuments: 0 } as unknown as PartitionRecord]];
      }),
    );
    (s.session as { partitionsOf: (key: string) => readonly PartitionRecord[] }).partitionsOf = (
      key,
    ) => partitions.get(key)!;
    const copied = (i: number) => {
      const p = partitions.get(`key-${i}`)![0]!;
      p.status = 'done';
      p.copiedDocuments = 3;
    };
    const listings = () => [s.src.batchedIndexListings, s.dst.batchedIndexListings];
    const controller = new AbortController();
    const running = s.verification.runLive(s.session, controller.signal);
    const seen: number[][] = [];
    try {
      for (let i = 0; i < 5; i++) copied(i);
      await new Promise((r) => setTimeout(r, 100));
      seen.push(listings()); // t5 still copies: tenants waits
      copied(5);
      const deadline = Date.now() + 2_000;
      while (s.src.batchedIndexListings === 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 50));
      seen.push(listings());
    } finally {
      controller.abort();
      await running;
    }
    // Then all six in one batched index listing per side.
    expect(seen).toEqual([
      [0, 0],
      [1, 1],
    ]);
  });

  it('a cycle with more metadata due than a slice checks every namespace, slice by slice', async () => {
    const s = smallCollections(120);
    s.verification = verifier({ metadataSlice: 50 }).verification;
    for (const cluster of [s.src, s.dst])
      for (let i = 0; i < 120; i++)
        cluster
          .collection('tenants', `t${i}`)!
          .indexes.push({ v: 2, key: { _id: 1 }, name: '_id_' });
    s.dst.collection('tenants', 't110')!.indexes.push({ v: 2, key: { s: 1 }, name: 's_1' });
    await liveUntilCaughtUp(s);
    // Slices of 50, 50 and 20: each lists its own collections' indexes in one read per side.
    expect(s.src.batchedIndexListings).toBe(3);
    expect(s.dst.batchedIndexListings).toBe(3);
    // The last slice was checked too: its difference is named.
    expect(s.verification.status(s.job, false)?.samples).toEqual([
      expect.objectContaining({
        namespace: 'tenants.t110',
        problems: [expect.stringMatching(/s_1/)],
      }),
    ]);
  });

  it('a DDL that lands after a pass read its metadata leaves the namespace to the next pass', async () => {
    const s = smallCollections(3);
    const idIndex = { v: 2, key: { _id: 1 }, name: '_id_' };
    for (const cluster of [s.src, s.dst])
      for (let i = 0; i < 3; i++) cluster.collection('tenants', `t${i}`)!.indexes.push(idIndex);
    // The first listing has read t1's indexes (equal on both sides) when t1 gets an index on
    // the source, which the destination never builds: that read must not settle t1.
    s.src.afterIndexListing = () => {
      s.src.afterIndexListing = null;
      s.src.collection('tenants', 't1')!.indexes.push({ v: 2, key: { s: 1 }, name: 's_1' });
      s.verification.appliedWrites.ddl({
        operationType: 'createIndexes',
        ns: { db: 'tenants', coll: 't1' },
      } as never);
    };
    const samples = () => s.verification.status(s.job, false)?.samples ?? [];
    const controller = new AbortController();
    const running = s.verification.runLive(s.session, controller.signal);
    const deadline = Date.now() + 5_000;
    while (samples().length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    await running;
    expect(samples()).toEqual([
      expect.objectContaining({
        namespace: 'tenants.t1',
        problems: [expect.stringMatching(/s_1/)],
      }),
    ]);
  });

  it('the commit compares the indexes the live pass skipped as relaxed, reusing its other checks', async () => {
    const s = smallCollections(3);
    const unique = { v: 2, key: { s: 1 }, name: 's_1', unique: true };
    s.src.collection('tenants', 't1')!.indexes.push(unique);
    // Relaxed on the destination (built non-unique) and, here, never restored: the commit's
    // pass must see it although the live pass, which skips it, found the collection equal.
    s.dst.collection('tenants', 't1')!.indexes.push({ v: 2, key: { s: 1 }, name: 's_1' });
    s.job.namespaces[1]!.relaxedIndexes = [{ name: 's_1' } as never];
    await liveUntilCaughtUp(s);
    expect(s.verification.status(s.job, false)?.samples).toEqual([]);
    const failure = await s.verification
      .finalPass(s.session, new AbortController().signal)
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(VerificationFailedError);
    expect((failure as VerificationFailedError).message).toMatch(/tenants\.t1.*s_1/s);
    expect((failure as VerificationFailedError).message).not.toMatch(/tenants\.t[02]/);
  });

  it('a collection with a default collation is digested alone; a cluster without the batched read falls back', async () => {
    const s = smallCollections(4, (i) => (i === 2 ? { collation: { locale: 'fr' } } : {}));
    s.dst.digestsTogether = false;
    await liveUntilCaughtUp(s);
    expect(s.src.batchedDigests).toBe(1); // the three without a collation, tried together
    expect(s.src.comparisons).toBe(4); // the destination could not: each alone, and the collated one
    expect(s.dst.comparisons).toBe(4);
    expect(s.verification.status(s.job, false)?.samples).toEqual([]);
  });
});
