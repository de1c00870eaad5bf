import { ChangeApplier, type ChangeApplierOptions, type DocumentRepair } from './change-applier';
import { documentIdentity } from './doc-key';
import { CheckpointSaveError, HistoryLostError } from './errors';
import {
  batch,
  crud,
  ddlEvent,
  FakeCheckpoints,
  FakeFeed,
  FakeLookup,
  FakeWriter,
  NameRouter,
  historyLost,
  tokenAt,
  ts,
} from './testing-fakes.spec-helper';

function setup(
  feed: FakeFeed,
  extra: Partial<ChangeApplierOptions> = {},
  selected: (db: string, coll: string) => boolean = () => true,
) {
  const writer = new FakeWriter();
  const checkpoints = new FakeCheckpoints();
  const lookup = new FakeLookup();
  const router = new NameRouter(selected, writer);
  const applier = new ChangeApplier({
    feed,
    writer,
    lookup,
    checkpoints,
    router,
    startAtOperationTime: ts(100),
    // Four lanes always (these tests are about writes running in parallel lanes); the lane
    // count's adaptation has its own tests.
    lanes: 4,
    minLanes: 4,
    checkpointIntervalMs: 0,
    ...extra,
  });
  return { applier, writer, checkpoints, lookup, router };
}

/** Resolves once `done()` holds; fails the test if it does not within `timeoutMs`. */
async function waitFor(done: () => boolean, timeoutMs = 3000): Promise<void> {
  const started = Date.now();
  while (!done()) {
    if (Date.now() - started > timeoutMs)
      throw new Error(`waitFor: condition not reached in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function runUntil(applier: ChangeApplier, done: () => boolean, timeoutMs = 3000) {
  const ctrl = new AbortController();
  const running = applier.run(ctrl.signal);
  const started = Date.now();
  while (!done()) {
    if (Date.now() - started > timeoutMs) {
      ctrl.abort();
      await running.catch(() => undefined);
      throw new Error(`runUntil: condition not reached in ${timeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  ctrl.abort();
  await running;
}

describe('ChangeApplier', () => {
  it('a resume point the destination refuses to save stops the run, named CheckpointSaveError', async () => {
    const feed = new FakeFeed([batch([crud('insert', 1, 101, { v: 1 })])]);
    const { applier, checkpoints } = setup(feed, {
      retry: { attempts: 0 },
    });
    checkpoints.save = () =>
      Promise.reject(
        Object.assign(new Error('not authorized'), {
          name: 'MongoServerError',
          code: 13,
          codeName: 'Unauthorized',
        }),
      );
    const error = await applier.run(new AbortController().signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointSaveError);
    expect(error).toMatchObject({ name: 'CheckpointSaveError', isRetryable: false });
    expect((error as Error).message).toBe(
      "saving the change stream's resume point in the destination's sync metadata failed: Unauthorized (code 13): not authorized",
    );
  });

  it('starts at T0, applies each document in event order and counts events', async () => {
    const feed = new FakeFeed([
      batch([crud('insert', 1, 101, { v: 1 }), crud('update', 1, 102, { v: 2 })]),
      batch([
        crud('insert', 2, 103, { v: 1 }),
        crud('delete', 1, 104),
        crud('insert', 1, 105, { v: 3 }),
      ]),
    ]);
    const { applier, writer } = setup(feed);
    await runUntil(applier, () => applier.stats().totalEventsApplied === 5);
    expect(feed.opened[0]).toEqual({ startAtOperationTime: ts(100) });
    expect(writer.docs.get('d.c|1')).toEqual({ _id: 1, v: 3 });
    expect(writer.docs.get('d.c|2')).toEqual({ _id: 2, v: 1 });
    expect(applier.stats().totalEventsApplied).toBe(5);
  });

  it('collapses writes of one document in a batch: the last full write wins, updates after it applied onto it', async () => {
    const feed = new FakeFeed([
      batch([
        crud('insert', 1, 101, { v: 1 }),
        crud('update', 1, 102, { v: 2 }),
        crud('replace', 1, 103, { v: 3 }),
        crud('update', 1, 104, { w: 1 }),
      ]),
    ]);
    const { applier, writer } = setup(feed);
    await runUntil(applier, () => applier.stats().totalEventsApplied === 4);
    expect(writer.log).toEqual(['replace:d.c|1']);
    expect(writer.docs.get('d.c|1')).toEqual({ _id: 1, v: 3, w: 1 });
    // One bulk per round, each with distinct documents.
    for (const b of writer.bulks) {
      const ids = b.ops.map((o) => JSON.stringify(o.filter));
      expect(new Set(ids).size).toBe(ids.length);
    }
  });

  it('runs DDL only after every lane drained (barrier)', async () => {
    const feed = new FakeFeed([
      batch([
        crud('insert', 1, 101),
        crud('insert', 2, 102),
        crud('insert', 3, 103),
        ddlEvent('drop', 104),
        crud('insert', 4, 105),
      ]),
    ]);
    const { applier, writer } = setup(feed);
    writer.delayFor = () => 30;
    await runUntil(applier, () => applier.stats().totalEventsApplied === 5);
    const dropAt = writer.log.indexOf('ddl:drop');
    expect(writer.log.slice(0, dropAt).sort()).toEqual([
      'replace:d.c|1',
      'replace:d.c|2',
      'replace:d.c|3',
    ]);
    expect(writer.log[dropAt + 1]).toBe('replace:d.c|4');
  });

  it('never checkpoints past an event that is not applied yet', async () => {
    const slow = crud('insert', 1, 101);
    const fast = crud('insert', 2, 102);
    const feed = new FakeFeed([batch([slow, fast])]);
    const { applier, writer, checkpoints } = setup(feed, { lanes: 16, minLanes: 16 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const origBulk = writer.bulkWrite.bind(writer);
    writer.bulkWrite = async (ns, ops) => {
      if (ops.some((o) => o.filter._id === 1)) await gate;
      return origBulk(ns, ops);
    };
    const ctrl = new AbortController();
    const running = applier.run(ctrl.signal);
    try {
      await waitFor(() => writer.docs.has('d.c|2'));
      // Give a wrong checkpoint the time to be written (checkpointIntervalMs is 0).
      await new Promise((r) => setTimeout(r, 50));
      expect(checkpoints.saved).toEqual([]);
      release();
      await waitFor(() => checkpoints.saved.some((c) => (c.clusterTime?.t ?? 0) >= 102));
    } finally {
      ctrl.abort();
      await running;
    }
    const last = checkpoints.saved[checkpoints.saved.length - 1];
    expect(last.clusterTime!.t).toBeGreaterThanOrEqual(102);
  });

  it('checkpoints between two events of one transaction (one clusterTime), never past an unapplied one', async () => {
    // A source transaction: one event per operation, all at the commit's time, tokens ordered
    // by the operation's index in the transaction (txnOpIndex).
    const commit = ts(200, 1);
    const events = [1, 2, 3, 4, 5].map((id, txnOpIndex) => ({
      ...crud('update', id, 200, { n: txnOpIndex }),
      _id: { _data: `${tokenAt(200, 1)._data}${txnOpIndex.toString(16).padStart(4, '0')}` },
      clusterTime: commit,
      lsid: { id: 'session' },
      txnNumber: 7,
    }));
    const feed = new FakeFeed([batch(events)]);
    const { applier, writer, checkpoints } = setup(feed, { lanes: 16, minLanes: 16 });
    for (const id of [1, 2, 3, 4, 5]) writer.docs.set(`d.c|${id}`, { _id: id });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const origBulk = writer.bulkWrite.bind(writer);
    writer.bulkWrite = async (ns, ops) => {
      if (ops.some((o) => o.filter._id === 2)) await gate;
      return origBulk(ns, ops);
    };
    const ctrl = new AbortController();
    const running = applier.run(ctrl.signal);
    try {
      await waitFor(() => writer.docs.get('d.c|5')?.n === 4);
      await new Promise((r) => setTimeout(r, 50)); // time for a wrong checkpoint to be saved
      expect(checkpoints.saved.map((c) => c.resumeToken)).toEqual([events[0]._id]);
      expect(checkpoints.saved[0].clusterTime).toEqual(commit);
    } finally {
      ctrl.abort();
      release();
      await running;
    }
    // Released: the resume point moves past the transaction.
    const last = checkpoints.saved[checkpoints.saved.length - 1];
    expect(last.clusterTime!.t).toBeGreaterThan(commit.t);
    expect(applier.stats().totalEventsApplied).toBe(5);
  });

  it('advances applied time with idle batches so lag does not grow', async () => {
    const feed = new FakeFeed([batch([crud('insert', 1, 101)])], 500);
    const { applier } = setup(feed);
    await runUntil(applier, () => (applier.appliedTime?.t ?? 0) >= 500);
    expect(applier.lagSeconds(ts(502))).toBe(2);
  });

  it('resumes from the persisted checkpoint', async () => {
    const feed = new FakeFeed([batch([crud('insert', 1, 101)], 150)]);
    const { applier, checkpoints } = setup(feed);
    await runUntil(applier, () => applier.stats().totalEventsApplied === 1);
    await runUntil(applier, () => true);
    expect(feed.opened[1]).toEqual({ resumeAfter: checkpoints.saved[0].resumeToken });
  });

  it('fails with HistoryLostError and does not skip', async () => {
    const feed = new FakeFeed([], 1000, historyLost());
    const { applier } = setup(feed);
    await expect(applier.run(new AbortController().signal)).rejects.toBeInstanceOf(
      HistoryLostError,
    );
    expect(applier.stats().failure).toBeInstanceOf(HistoryLostError);
  });

  it('a repair asked for while it runs rewrites the document from the source in its lane, as no event', async () => {
    const feed = new FakeFeed([batch([crud('insert', 1, 101, { v: 1 })])]);
    let repair: DocumentRepair | null = null;
    const { applier, writer, lookup } = setup(feed, {
      appliedWrites: {
        document: () => undefined,
        ddl: () => undefined,
        repairs: (r) => {
          repair = r;
        },
      },
    });
    lookup.source.set('d.c|1', { _id: 1, w: 2, v: 1 });
    const ctrl = new AbortController();
    const running = applier.run(ctrl.signal);
    await waitFor(() => writer.docs.has('d.c|1') && repair !== null);
    const identity = documentIdentity('d.c', '', { _id: 1 });
    expect(repair!({ db: 'd', coll: 'c' }, 1, identity, {})).toBe(true);
    await waitFor(() => lookup.calls === 1 && writer.docs.get('d.c|1')?.w === 2);
    expect(writer.docs.get('d.c|1')).toEqual({ _id: 1, w: 2, v: 1 });
    expect(writer.log.slice(-1)).toEqual(['replace:d.c|1']);
    // On a sharded destination collection the replacement's filter names the shard key.
    lookup.source.set('d.s|2', { _id: 2, region: 'eu', v: 3 });
    const sharded = { shardKeyFields: ['region'] };
    expect(
      repair!({ db: 'd', coll: 's' }, 2, documentIdentity('d.s', '', { _id: 2 }), sharded),
    ).toBe(true);
    await waitFor(() => writer.docs.has('d.s|2'));
    const last = writer.bulks[writer.bulks.length - 1]!;
    expect(last).toMatchObject({
      ns: 'd.s',
      ops: [{ kind: 'replace', filter: { _id: 2, region: 'eu' } }],
    });
    // Not an event: the applied count and the checkpoint's pending work are untouched.
    expect(applier.stats().totalEventsApplied).toBe(1);
    expect(applier.stats().pendingEvents).toBe(0);
    // Stopping (the commit's drain stops the run): refused at once, though the run still ends
    // its lanes — nothing queued after that drain could land after the destination opens.
    const stillHeld = repair!;
    ctrl.abort();
    expect(stillHeld({ db: 'd', coll: 'c' }, 1, identity, {})).toBe(false);
    await running;
    // Stopped: the verifier is told it can no longer ask.
    expect(repair).toBeNull();
    expect(lookup.calls).toBe(2);
  });

  it('falls back to a source lookup when the destination rejects a replayed update', async () => {
    const feed = new FakeFeed([batch([crud('update', 7, 101, { a: 1 })])]);
    const { applier, writer, lookup } = setup(feed);
    writer.failUpdates = true;
    lookup.source.set('d.c|7', { _id: 7, a: 'current' });
    await runUntil(applier, () => applier.stats().totalEventsApplied === 1);
    expect(lookup.calls).toBe(1);
    expect(writer.docs.get('d.c|7')).toEqual({ _id: 7, a: 'current' });
  });

  it('hands DDL to the router behind a barrier: earlier writes land first, later ones after', async () => {
    const feed = new FakeFeed([
      batch([
        crud('insert', 1, 101, { v: 1 }),
        ddlEvent('createIndexes', 102, {
          operationDescription: { indexes: [{ v: 2, key: { a: 1 }, name: 'a_1', unique: true }] },
        }),
        crud('insert', 2, 103, { v: 1 }),
      ]),
    ]);
    const { applier, writer, router } = setup(feed);
    await runUntil(applier, () => applier.stats().totalEventsApplied === 3);
    expect(router.ddl.map((e) => e.operationType)).toEqual(['createIndexes']);
    expect(writer.log).toEqual(['replace:d.c|1', 'ddl:createIndexes', 'replace:d.c|2']);
  });

  it('waitUntilApplied resolves once the commit point is applied and saved', async () => {
    const feed = new FakeFeed(
      [batch([crud('insert', 1, 101)]), batch([crud('insert', 2, 120)])],
      130,
    );
    const { applier, checkpoints } = setup(feed, { checkpointIntervalMs: 60000 });
    const ctrl = new AbortController();
    const running = applier.run(ctrl.signal);
    await applier.waitUntilApplied(ts(125));
    expect(applier.appliedTime!.t).toBeGreaterThanOrEqual(125);
    expect(checkpoints.saved[checkpoints.saved.length - 1].clusterTime!.t).toBeGreaterThanOrEqual(
      125,
    );
    ctrl.abort();
    await running;
    await expect(applier.waitUntilApplied(ts(99999))).rejects.toThrow(/not running/);
  });

  it('ignores events outside the filter but still moves the checkpoint', async () => {
    const feed = new FakeFeed([batch([crud('insert', 1, 101, {}, 'skip')], 110)]);
    const { applier, writer, checkpoints } = setup(feed, {}, (_d, c) => c !== 'skip');
    await runUntil(applier, () => checkpoints.saved.length > 0);
    expect(writer.bulks).toEqual([]);
    expect(applier.stats().ignoredEvents).toBe(1);
    expect(checkpoints.saved[0].resumeToken).toEqual(tokenAt(110));
  });

  describe('the lanes in use', () => {
    /** `n` inserts of new documents (ids from `first`) in one namespace, one feed batch. */
    const inserts = (first: number, n: number, t: number, coll = 'c') =>
      batch(Array.from({ length: n }, (_, k) => crud('insert', first + k, t, { v: 0 }, coll)));
    const updates = (first: number, n: number, t: number, coll = 'c') =>
      batch(Array.from({ length: n }, (_, k) => crud('update', first + k, t, { v: t }, coll)));

    /** A clock that moves 100 ms each time it is read: a review is due every ten reads. */
    function ticking() {
      let now = 0;
      return () => (now += 100);
    }

    it('widen while bulks are full (1 → 8) and narrow while they are small (8 → 1), every write in order', async () => {
      const feed = new FakeFeed([]);
      const { applier, writer } = setup(feed, { lanes: 8, minLanes: 1, now: ticking() });
      const expected = new Map<number, number>();
      const push = (b: ReturnType<typeof batch>) => {
        feed.batches.push(b);
        // An insert carries v: 0; an update sets v to its cluster time's seconds.
        for (const e of b.events)
          expected.set(
            e.documentKey!._id as number,
            e.operationType === 'insert' ? 0 : e.clusterTime!.t,
          );
      };
      const lanesSeen: number[] = [];
      const note = () => lanesSeen.push(applier.stats().activeLanes);
      const settle = () =>
        waitFor(() => feed.batches.length === 0 && applier.stats().pendingEvents === 0);
      const ctrl = new AbortController();
      const running = applier.run(ctrl.signal);
      note();
      // Full bulks: batches of 2,100 new documents, each followed by a batch updating the
      // documents of the batch before (an update lands after its insert, whatever the lanes in
      // use in between: otherwise it finds no document and the value stays 0).
      let id = 0;
      for (let round = 0; round < 12; round++) {
        push(inserts(id, 2100, 200 + round));
        if (round > 0) push(updates(id - 2100, 2100, 200 + round));
        id += 2100;
        await settle();
        note();
      }
      expect(applier.stats().activeLanes).toBe(8);
      // Small bulks: three documents per batch.
      for (let round = 0; round < 40; round++) {
        push(updates(round * 3, 3, 300 + round));
        await settle();
        note();
      }
      ctrl.abort();
      await running;
      expect(applier.stats().activeLanes).toBe(1);
      // Only doublings and halvings.
      const changes = lanesSeen.filter((n, i) => i === 0 || n !== lanesSeen[i - 1]);
      expect(changes).toEqual([1, 2, 4, 8, 4, 2, 1]);
      for (const [k, v] of expected) expect([k, writer.docs.get(`d.c|${k}`)?.v]).toEqual([k, v]);
    });

    it('stay as many as lanes when minLanes equals it, however small the bulks', async () => {
      const feed = new FakeFeed(Array.from({ length: 30 }, (_, r) => inserts(r * 2, 2, 200 + r)));
      const { applier, writer } = setup(feed, { lanes: 4, minLanes: 4, now: ticking() });
      await runUntil(applier, () => writer.docs.size === 60);
      expect(applier.stats().activeLanes).toBe(4);
    });
  });
});
