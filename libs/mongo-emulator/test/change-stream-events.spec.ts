import { Int32, Timestamp, type Document } from 'bson';
import { ReplicaSetNode } from '../src/node/replica-set-node';
import { highWaterMarkToken, openChangeStream } from '../src/changes';
import type { CommandContext } from '../src/commands/types';
import type { CommandError } from '../src/errors';
import { describeEmulatorOnly } from './helpers/real-server';

/** Node-level tests: the change-stream module against the real oplog and catalog, no wire. */

function ctx(node: ReplicaSetNode, db: string, target: string | number): CommandContext {
  return {
    node,
    conn: {
      id: 1,
      remoteAddress: 'test',
      users: [],
      closed: new AbortController().signal,
      sasl: new Map(),
    },
    db,
    cmd: { aggregate: target },
    name: 'aggregate',
  };
}

async function watch(
  node: ReplicaSetNode,
  db: string,
  target: string | number,
  options: Document = {},
  stages: Document[] = [],
): Promise<Document> {
  return openChangeStream(ctx(node, db, target), [{ $changeStream: options }, ...stages], {});
}

async function more(
  node: ReplicaSetNode,
  cursor: Document,
  maxTimeMS = 20,
  batchSize?: number,
): Promise<Document> {
  return node.cursors.getMore(cursor.id, cursor.ns, { maxTimeMS, batchSize });
}

async function failure(p: Promise<unknown>): Promise<CommandError> {
  try {
    await p;
  } catch (err) {
    return err as CommandError;
  }
  throw new Error('expected a failure');
}

function coll(node: ReplicaSetNode, db: string, name: string, options: Document = {}) {
  return node.catalog.getCollection(db, name) ?? node.catalog.createCollection(db, name, options);
}

function update(node: ReplicaSetNode, db: string, name: string, id: unknown, set: Document) {
  const c = coll(node, db, name);
  const rec = c.recordById(id)!;
  c.replace(rec, { ...rec.doc, ...set }, 'update', {
    updatedFields: set,
    removedFields: [],
    truncatedArrays: [],
  });
}

const suite = describeEmulatorOnly(
  "node-level test of the emulator's change-stream code, no server",
);

suite('change stream events (node level)', () => {
  let node: ReplicaSetNode;
  beforeEach(() => {
    node = new ReplicaSetNode({ setName: 'rs0' });
  });
  afterEach(() => node.cursors.closeAll());

  it('returns an empty first batch with a high-water-mark PBRT and keeps the cursor open', async () => {
    const cs = await watch(node, 'app', 'users');
    expect(cs.firstBatch).toEqual([]);
    expect(cs.id.isZero()).toBe(false);
    expect(cs.ns).toBe('app.users');
    expect(cs.postBatchResumeToken._data).toMatch(/^82[0-9A-F]{16}2B0429296E1404$/);
  });

  it('shapes CRUD events with MongoDB field order', async () => {
    const c = coll(node, 'app', 'users');
    const cs = await watch(node, 'app', 'users');
    c.insert({ _id: 1, name: 'a' });
    update(node, 'app', 'users', 1, { name: 'b' });
    c.replace(c.recordById(1)!, { _id: 1, other: true }, 'replace', undefined);
    c.delete(c.recordById(1)!);
    const batch = (await more(node, cs)).nextBatch as Document[];
    expect(batch.map((e) => e.operationType)).toEqual(['insert', 'update', 'replace', 'delete']);
    expect(Object.keys(batch[0])).toEqual([
      '_id',
      'operationType',
      'clusterTime',
      'wallTime',
      'fullDocument',
      'ns',
      'documentKey',
    ]);
    // Stored documents are BSON bytes decoded exactly: the number 1 was stored as an int32.
    expect(batch[0].fullDocument).toEqual({ _id: new Int32(1), name: 'a' });
    expect(batch[0].ns).toEqual({ db: 'app', coll: 'users' });
    expect(Object.keys(batch[1])).toEqual([
      '_id',
      'operationType',
      'clusterTime',
      'wallTime',
      'ns',
      'documentKey',
      'updateDescription',
    ]);
    expect(batch[1].updateDescription).toEqual({
      updatedFields: { name: 'b' },
      removedFields: [],
      truncatedArrays: [],
    });
    expect(Object.keys(batch[2])).toEqual([
      '_id',
      'operationType',
      'clusterTime',
      'wallTime',
      'fullDocument',
      'ns',
      'documentKey',
    ]);
    expect(Object.keys(batch[3])).toEqual([
      '_id',
      'operationType',
      'clusterTime',
      'wallTime',
      'ns',
      'documentKey',
    ]);
    expect(batch[3].documentKey).toEqual({ _id: new Int32(1) }); // read from the stored bytes
    for (let i = 1; i < batch.length; i++)
      expect(batch[i]._id._data > batch[i - 1]._id._data).toBe(true);
  });

  it('reports a drop then invalidate and closes a collection stream', async () => {
    coll(node, 'app', 'users').insert({ _id: 1 });
    const cs = await watch(node, 'app', 'users');
    node.catalog.dropNamespace('app', 'users');
    const reply = await more(node, cs);
    const [drop, inv] = reply.nextBatch as Document[];
    expect(drop.operationType).toBe('drop');
    expect(Object.keys(drop)).toEqual(['_id', 'operationType', 'clusterTime', 'wallTime', 'ns']);
    expect(Object.keys(inv)).toEqual(['_id', 'operationType', 'clusterTime', 'wallTime']);
    expect(inv.operationType).toBe('invalidate');
    expect(inv.clusterTime).toEqual(drop.clusterTime);
    expect(reply.id.isZero()).toBe(true);
    expect(reply.postBatchResumeToken).toEqual(inv._id);

    // resumeAfter an invalidate is refused; startAfter opens a new stream after it.
    const err = await failure(watch(node, 'app', 'users', { resumeAfter: inv._id }));
    expect(err.code).toBe(260);
    const again = await watch(node, 'app', 'users', { startAfter: inv._id });
    coll(node, 'app', 'users').insert({ _id: 2 });
    const next = (await more(node, again)).nextBatch as Document[];
    expect(next.map((e) => e.operationType)).toEqual(['insert']);
    // resumeAfter the drop event: the invalidate comes again.
    const fromDrop = await watch(node, 'app', 'users', { resumeAfter: drop._id });
    expect((fromDrop.firstBatch as Document[]).map((e) => e.operationType)).toEqual(['invalidate']);
    expect(fromDrop.id.isZero()).toBe(true);
  });

  it('rename invalidates the source collection stream; database streams see it without invalidation', async () => {
    coll(node, 'app', 'a').insert({ _id: 1 });
    const collStream = await watch(node, 'app', 'a');
    const dbStream = await watch(node, 'app', 1);
    node.catalog.renameCollection('app', 'a', 'app', 'b', false);
    const r1 = await more(node, collStream);
    const [rename, inv] = r1.nextBatch as Document[];
    expect(Object.keys(rename)).toEqual([
      'to',
      '_id',
      'operationType',
      'clusterTime',
      'wallTime',
      'ns',
    ]);
    expect(rename.to).toEqual({ db: 'app', coll: 'b' });
    expect(inv.operationType).toBe('invalidate');
    const r2 = await more(node, dbStream);
    expect((r2.nextBatch as Document[]).map((e) => e.operationType)).toEqual(['rename']);
    expect(r2.id.isZero()).toBe(false);
    expect(dbStream.ns).toBe('app.$cmd.aggregate');
  });

  it('dropDatabase invalidates a database stream; the cluster stream never invalidates', async () => {
    coll(node, 'app', 'a').insert({ _id: 1 });
    const dbStream = await watch(node, 'app', 1);
    const cluster = await watch(node, 'admin', 1, { allChangesForCluster: true });
    node.catalog.dropDatabase('app');
    const r1 = await more(node, dbStream);
    expect((r1.nextBatch as Document[]).map((e) => e.operationType)).toEqual([
      'drop',
      'dropDatabase',
      'invalidate',
    ]);
    const dropDb = (r1.nextBatch as Document[])[1];
    expect(dropDb.ns).toEqual({ db: 'app' });
    expect(r1.id.isZero()).toBe(true);
    const r2 = await more(node, cluster);
    expect((r2.nextBatch as Document[]).map((e) => e.operationType)).toEqual([
      'drop',
      'dropDatabase',
    ]);
    expect(r2.id.isZero()).toBe(false);
  });

  it('shows DDL events, collectionUUID and disambiguatedPaths only with showExpandedEvents', async () => {
    const plain = await watch(node, 'app', 1);
    const expanded = await watch(node, 'app', 1, { showExpandedEvents: true });
    const c = coll(node, 'app', 'x');
    node.catalog.addIndex(c, { v: 2, key: { a: 1 }, name: 'a_1' });
    c.insert({ _id: 1 });
    update(node, 'app', 'x', 1, { a: 2 });
    expect(((await more(node, plain)).nextBatch as Document[]).map((e) => e.operationType)).toEqual(
      ['insert', 'update'],
    );
    const events = (await more(node, expanded)).nextBatch as Document[];
    expect(events.map((e) => e.operationType)).toEqual([
      'create',
      'createIndexes',
      'insert',
      'update',
    ]);
    expect(Object.keys(events[0])).toEqual([
      '_id',
      'operationType',
      'clusterTime',
      'collectionUUID',
      'wallTime',
      'ns',
      'operationDescription',
    ]);
    expect(events[0].operationDescription).toEqual({
      idIndex: { v: 2, key: { _id: 1 }, name: '_id_' },
    });
    expect(events[1].operationDescription).toEqual({
      indexes: [{ v: 2, key: { a: 1 }, name: 'a_1' }],
    });
    expect(events[3].updateDescription.disambiguatedPaths).toEqual({});
    expect(events[2].collectionUUID.sub_type).toBe(4);
  });

  it('never reports internal databases or system collections', async () => {
    const cluster = await watch(node, 'admin', 1, {
      allChangesForCluster: true,
      showExpandedEvents: true,
    });
    coll(node, 'config', 'x').insert({ _id: 1 });
    coll(node, 'app', 'system.js').insert({ _id: 1 });
    coll(node, 'app', 'ok').insert({ _id: 1 });
    const events = (await more(node, cluster)).nextBatch as Document[];
    expect(events.map((e) => `${e.operationType} ${e.ns.db}.${e.ns.coll}`)).toEqual([
      'create app.ok',
      'insert app.ok',
    ]);
    for (const [db, target, opts, code] of [
      ['admin', 1, {}, 73],
      ['local', 'oplog.rs', {}, 73],
      ['app', 'system.views', {}, 73],
      ['app', 'x', { allChangesForCluster: true }, 73],
      ['app', 'x', { bogus: 1 }, 40415],
      ['app', 'x', { fullDocument: 'sometimes' }, 2],
      ['app', 'x', { fullDocument: 1 }, 14],
      ['app', 'x', { resumeAfter: { _data: 'zz' } }, 9],
      [
        'app',
        'x',
        {
          startAtOperationTime: new Timestamp({ t: 1, i: 1 }),
          resumeAfter: highWaterMarkToken(new Timestamp({ t: 1, i: 1 })),
        },
        40674,
      ],
      ['app', 'x', { resumeAfter: { _data: 'AB' }, startAfter: { _data: 'AB' } }, 50865],
    ] as Array<[string, string | number, Document, number]>) {
      expect((await failure(watch(node, db, target, opts))).code).toBe(code);
    }
  });

  it('resumes after event tokens, high-water marks and operation times', async () => {
    const c = coll(node, 'app', 'r');
    const cs = await watch(node, 'app', 'r');
    for (let i = 1; i <= 4; i++) c.insert({ _id: i });
    const events = (await more(node, cs)).nextBatch as Document[];
    const ids = (b: Document) => (b.firstBatch as Document[]).map((e) => e.documentKey._id);

    expect(ids(await watch(node, 'app', 'r', { resumeAfter: events[1]._id }))).toEqual([3, 4]);
    expect(ids(await watch(node, 'app', 'r', { startAfter: events[1]._id }))).toEqual([3, 4]);
    expect(
      ids(await watch(node, 'app', 'r', { startAtOperationTime: events[2].clusterTime })),
    ).toEqual([3, 4]);
    expect(ids(await watch(node, 'app', 'r', { resumeAfter: cs.postBatchResumeToken }))).toEqual([
      1, 2, 3, 4,
    ]);

    // An event token of another collection is never found: 280 once the stream passes it.
    coll(node, 'app', 'other').insert({ _id: 'x' });
    const foreign = (
      await watch(node, 'app', 'other', { startAtOperationTime: events[0].clusterTime })
    ).firstBatch as Document[];
    // MongoDB only notices when the stream passes the token's position with an event in scope.
    const resumed = await watch(node, 'app', 'r', { resumeAfter: foreign[0]._id });
    expect(resumed.firstBatch).toEqual([]);
    c.insert({ _id: 5 });
    const err = await failure(more(node, resumed));
    expect(err.code).toBe(280);
    expect(err.message).toMatch(/^cannot resume stream; the resume token was not found\./);
    expect(err.errorLabels).toContain('NonResumableChangeStreamError');
  });

  it('advances the idle postBatchResumeToken with the cluster time', async () => {
    const cs = await watch(node, 'app', 'quiet');
    const first = cs.postBatchResumeToken._data as string;
    const r1 = await more(node, cs, 10);
    node.oplog.append({ op: 'noop', db: 'admin', o: { msg: 'periodic noop' } });
    coll(node, 'app', 'elsewhere').insert({ _id: 1 });
    const r2 = await more(node, cs, 10);
    expect(r1.nextBatch).toEqual([]);
    expect(r2.nextBatch).toEqual([]);
    expect(r1.postBatchResumeToken._data >= first).toBe(true);
    expect(r2.postBatchResumeToken._data > r1.postBatchResumeToken._data).toBe(true);
    // Resuming from an idle PBRT sees exactly the later events.
    coll(node, 'app', 'quiet').insert({ _id: 'later' });
    const resumed = await watch(node, 'app', 'quiet', { resumeAfter: r2.postBatchResumeToken });
    expect((resumed.firstBatch as Document[]).map((e) => e.documentKey._id)).toEqual(['later']);
  });

  it('waits for events up to maxTimeMS and wakes on a write', async () => {
    const cs = await watch(node, 'app', 'w');
    // An unbounded wait has no timer: only the write can end this getMore (a getMore that did
    // not wake on it would hang until the test times out).
    const pending = more(node, cs, Infinity);
    setTimeout(() => coll(node, 'app', 'w').insert({ _id: 1 }), 30);
    const reply = await pending;
    expect((reply.nextBatch as Document[]).length).toBe(1);
    const t0 = Date.now();
    const idle = await more(node, cs, 100);
    expect(idle.nextBatch).toEqual([]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90);
  });

  it('honours batchSize and keeps the PBRT at the last returned event while more are queued', async () => {
    const c = coll(node, 'app', 'b');
    const cs = await watch(node, 'app', 'b');
    for (let i = 0; i < 5; i++) c.insert({ _id: i });
    const r1 = await more(node, cs, 10, 2);
    expect((r1.nextBatch as Document[]).length).toBe(2);
    expect(r1.postBatchResumeToken).toEqual((r1.nextBatch as Document[])[1]._id);
    const r2 = await more(node, cs, 10);
    expect((r2.nextBatch as Document[]).map((e) => e.documentKey._id)).toEqual([2, 3, 4]);
  });

  it('fails with ChangeStreamHistoryLost when the start point fell off the oplog', async () => {
    node = new ReplicaSetNode({ setName: 'rs0', historySize: 5 });
    const c = coll(node, 'app', 'h');
    const early = node.clock.current();
    const cs = await watch(node, 'app', 'h');
    for (let i = 0; i < 10; i++) c.insert({ _id: i });
    const atOpen = await failure(watch(node, 'app', 'h', { startAtOperationTime: early }));
    expect(atOpen.code).toBe(286);
    expect(atOpen.message).toBe(
      'Resume of change stream was not possible, as the resume point may no longer be in the oplog.',
    );
    expect(atOpen.errorLabels).toEqual(['NonResumableChangeStreamError']);
    const atGetMore = await failure(more(node, cs));
    expect(atGetMore.code).toBe(286);
    expect(atGetMore.errorLabels).toEqual(['NonResumableChangeStreamError']);
  });

  it('updateLookup returns the current document, or null once it is gone', async () => {
    const c = coll(node, 'app', 'u');
    c.insert({ _id: 1, v: 0 });
    const cs = await watch(node, 'app', 'u', { fullDocument: 'updateLookup' });
    update(node, 'app', 'u', 1, { v: 1 });
    update(node, 'app', 'u', 1, { v: 2 });
    const batch = (await more(node, cs)).nextBatch as Document[];
    expect(batch.map((e) => e.fullDocument)).toEqual([
      { _id: new Int32(1), v: new Int32(2) },
      { _id: new Int32(1), v: new Int32(2) },
    ]);
    expect(Object.keys(batch[0]).slice(-2)).toEqual(['updateDescription', 'fullDocument']);
    update(node, 'app', 'u', 1, { v: 3 });
    c.delete(c.recordById(1)!);
    const later = (await more(node, cs)).nextBatch as Document[];
    expect(later[0].fullDocument).toBeNull();
    expect('fullDocument' in later[1]).toBe(false);
  });

  it('reports pre- and post-images only for collections with changeStreamPreAndPostImages', async () => {
    const withImages = coll(node, 'app', 'img', {
      changeStreamPreAndPostImages: { enabled: true },
    });
    const without = coll(node, 'app', 'plain');
    withImages.insert({ _id: 1, v: 0 });
    without.insert({ _id: 1, v: 0 });
    const opts = { fullDocument: 'whenAvailable', fullDocumentBeforeChange: 'whenAvailable' };
    const s1 = await watch(node, 'app', 'img', opts);
    const s2 = await watch(node, 'app', 'plain', opts);
    update(node, 'app', 'img', 1, { v: 1 });
    update(node, 'app', 'plain', 1, { v: 1 });
    withImages.delete(withImages.recordById(1)!);
    const [u, d] = (await more(node, s1)).nextBatch as Document[];
    expect(Object.keys(u).slice(-3)).toEqual([
      'updateDescription',
      'fullDocumentBeforeChange',
      'fullDocument',
    ]);
    // Images are kept BSON-encoded and decoded exactly, as a wire client receives them.
    const int = (n: number) => new Int32(n);
    expect(u.fullDocumentBeforeChange).toEqual({ _id: int(1), v: int(0) });
    expect(u.fullDocument).toEqual({ _id: int(1), v: int(1) });
    expect(d.fullDocumentBeforeChange).toEqual({ _id: int(1), v: int(1) });
    const [u2] = (await more(node, s2)).nextBatch as Document[];
    expect(u2.fullDocumentBeforeChange).toBeNull();
    expect(u2.fullDocument).toBeNull();

    const required = await watch(node, 'app', 'plain', { fullDocumentBeforeChange: 'required' });
    update(node, 'app', 'plain', 1, { v: 2 });
    const err = await failure(more(node, required));
    expect(err.code).toBe(47);
    expect(err.message).toMatch(
      /^Change stream was configured to require a pre-image for all update, delete and replace events/,
    );
  });
});
