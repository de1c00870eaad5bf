import { ApiError, type StartRequest } from '@sync/contracts';
import { BSON, Int32 } from 'bson';
import { silentLogger } from '../ports/engine-logger';
import { FakeCluster, FakeDirectory, replicaSet } from '../testing/in-memory-clusters';
import { HistoryLostError } from '../apply/errors';
import type { NamespaceRecord } from '../ports/job-store';
import type { ChangeApplication, PhaseContext } from './phases';
import { SyncJob, type SyncJobOptions } from './sync-job';

const request = (overrides: Partial<StartRequest> = {}): StartRequest => ({
  source: 'cluster0',
  destination: 'cluster1',
  buildIndexes: 'beforeDataCopy',
  enableUserWriteBlocking: false,
  reversible: false,
  ...overrides,
});

function world() {
  const src = new FakeCluster('cluster0', replicaSet('rsA', 'a:27017'));
  const dst = new FakeCluster('cluster1', replicaSet('rsB', 'b:27018'));
  for (let c = 0; c < 3; c++) {
    src.seed(
      'shop',
      `c${c}`,
      Array.from({ length: 300 }, (_, i) => ({ _id: i, v: new Int32(i), pad: 'p'.repeat(50) })),
    );
  }
  src
    .collection('shop', 'c0')!
    .indexes.push(
      { v: 2, key: { email: 1 }, name: 'email_1', unique: true },
      { v: 2, key: { at: 1 }, name: 'at_1', expireAfterSeconds: new Int32(60), hidden: true },
    );
  src.seed('shop', 'log', [{ _id: 1 }, { _id: 2 }], { capped: true, size: 4096 });
  src.seed('crm', 'people', [{ _id: 'x' }]);
  const view = src.collection('shop', 'cheap')!;
  view.type = 'view';
  view.indexes = [];
  view.options = { viewOn: 'c1', pipeline: [{ $match: { v: { $lt: 10 } } }] };
  return { src, dst, directory: new FakeDirectory(src, dst) };
}

async function boot(
  directory: FakeDirectory,
  extra: Partial<SyncJobOptions> = {},
): Promise<SyncJob> {
  const job = new SyncJob({
    clusters: directory,
    logger: silentLogger,
    copier: {
      concurrency: 3,
      readBatchSize: 50,
      writeBatchDocuments: 40,
      writeBatchBytes: 1 << 20,
    },
    partitioning: { targetBytes: 4000, maxPartitions: 8, oversampling: 4 },
    restoreRetryMs: 1,
    ...extra,
  });
  await job.initialize();
  return job;
}

async function until(predicate: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A change application that applies nothing, reports lag 1 s, and records its passes. */
function fakeApplication(options: { ready?: boolean; onRun?: (ctx: PhaseContext) => void } = {}) {
  const state = {
    contexts: [] as PhaseContext[],
    waitedFor: [] as unknown[],
    factory: (): ChangeApplication => {
      let running = false;
      return {
        async run(ctx) {
          state.contexts.push(ctx);
          options.onRun?.(ctx);
          running = true;
          await new Promise<void>((resolve) => {
            if (ctx.signal.aborted) resolve();
            ctx.signal.addEventListener('abort', () => resolve());
          });
          running = false;
        },
        status: () => ({
          lagTimeSeconds: 1,
          totalEventsApplied: 5,
          readyToCommit: running && options.ready !== false,
        }),
        async waitUntilApplied(point) {
          state.waitedFor.push(point);
        },
      };
    },
  };
  return state;
}

async function expectApiError(promise: Promise<unknown>, name: string): Promise<ApiError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  expect((error as ApiError).error).toBe(name);
  return error as ApiError;
}

describe('SyncJob', () => {
  it('INITIALIZING answers NotReady, then IDLE with null progress', async () => {
    const { directory } = world();
    const job = new SyncJob({ clusters: directory, logger: silentLogger });
    expect(job.state).toBe('INITIALIZING');
    expect(() => job.progress()).toThrow(ApiError);
    await expectApiError(job.start(request()), 'NotReady');
    await job.initialize();
    expect(job.progress()).toMatchObject({
      state: 'IDLE',
      canCommit: false,
      canWrite: null,
      collectionCopy: null,
    });
  });

  it('start copies every selected namespace, relaxes indexes and persists the job', async () => {
    const { src, dst, directory } = world();
    const job = await boot(directory);
    await job.start(request({ excludeNamespaces: [{ database: 'crm' }] }));
    expect(job.state).toBe('RUNNING');
    await job.idle();
    for (const c of ['c0', 'c1', 'c2', 'log']) {
      const s = src
        .collection('shop', c)!
        .documents.map((d) => Buffer.from(BSON.serialize(d)).toString('hex'))
        .sort();
      const d = dst
        .collection('shop', c)!
        .documents.map((x) => Buffer.from(BSON.serialize(x)).toString('hex'))
        .sort();
      expect(d).toEqual(s);
    }
    expect(dst.collection('crm', 'people', false)).toBeUndefined();
    expect(dst.collection('shop', 'cheap')!.type).toBe('view');
    expect(dst.collection('shop', 'log')!.options).toMatchObject({ capped: true });
    const indexes = dst.collection('shop', 'c0')!.indexes;
    expect(indexes.find((i) => i.name === 'email_1')).not.toHaveProperty('unique');
    expect(indexes.find((i) => i.name === 'at_1')).toMatchObject({
      expireAfterSeconds: 2147483647,
    });
    expect(indexes.find((i) => i.name === 'at_1')).not.toHaveProperty('hidden');
    const stored = dst.store.job!;
    expect(stored).toMatchObject({ _id: 'worker', state: 'RUNNING', phase: 'copied' });
    expect(JSON.stringify(stored)).not.toContain('mongodb://');
    const relaxed = stored.namespaces.find((n) => n.collection === 'c0')!.relaxedIndexes;
    expect(relaxed.map((r) => r.name).sort()).toEqual(['at_1', 'email_1']);

    const p = job.progress();
    expect(p).toMatchObject({
      state: 'RUNNING',
      canCommit: false,
      canWrite: false,
      info: 'collection copy',
      lagTimeSeconds: null,
      totalEventsApplied: null,
      directionMapping: { Source: 'cluster0: a:27017', Destination: 'cluster1: b:27018' },
      syncID: 'worker',
      coordinatorID: 'worker',
    });
    expect(p.collectionCopy!.estimatedCopiedBytes).toBe(p.collectionCopy!.estimatedTotalBytes);
    expect(p.collectionCopy!.estimatedCopiedBytes).toBeGreaterThan(1);
  });

  it('the copy creates a default collection with its first insert, and one it wrote nothing to explicitly', async () => {
    const { src, dst, directory } = world();
    // Estimated at two documents when planned, empty by the time it is copied.
    src.seed('shop', 'emptied', []);
    const stats = src.collectionStats.bind(src);
    src.collectionStats = async (database, collection) =>
      collection === 'emptied' ? { bytes: 40, count: 2 } : stats(database, collection);
    const created: string[] = [];
    const create = dst.createCollection.bind(dst);
    dst.createCollection = async (database, collection, options) => {
      created.push(`${database}.${collection}`);
      return create(database, collection, options);
    };
    const job = await boot(directory);
    await job.start(request());
    await job.idle();
    // Default options, no secondary index, documents: created by the copy's inserts.
    expect(created).not.toContain('shop.c1');
    expect(created).not.toContain('shop.c2');
    expect(created).not.toContain('crm.people');
    // Options of its own (capped): created by the preparation.
    expect(created).toContain('shop.log');
    // Nothing written to it: created explicitly once its copy is done.
    expect(created).toContain('shop.emptied');
    expect(dst.collection('shop', 'emptied', false)).toMatchObject({ documents: [], options: {} });
    expect(dst.collection('shop', 'c1', false)?.documents).toHaveLength(300);
    expect(dst.collection('crm', 'people', false)?.documents).toEqual([{ _id: 'x' }]);
  });

  it("the initial copy ends with one job write that rewrites no namespace record (phase 'copied')", async () => {
    const { dst, directory } = world();
    const saves: Array<{ phase: string; namespaces: string }> = [];
    const save = dst.store.saveJob.bind(dst.store);
    dst.store.saveJob = async (job) => {
      saves.push({ phase: job.phase, namespaces: JSON.stringify(job.namespaces) });
      return save(job);
    };
    const job = await boot(directory);
    await job.start(request());
    await job.idle();
    const copied = saves.findIndex((s) => s.phase === 'copied');
    expect(copied).toBeGreaterThan(0);
    expect(saves[copied - 1]!.phase).toBe('prepared');
    // The records the copy ended with are those it began with: still `initial`, done by phase.
    expect(saves[copied]!.namespaces).toBe(saves[copied - 1]!.namespaces);
    const stored = dst.store.job!.namespaces;
    expect(stored.filter((n) => n.type === 'collection').map((n) => n.copy)).toEqual(
      stored.filter((n) => n.type === 'collection').map(() => 'initial'),
    );
    // Progress counts them copied, view included.
    expect(job.progress().namespaces).toMatchObject({
      total: stored.length,
      copied: stored.length,
    });
  });

  it("a lone worker's first job write names its small collections' partitions; preparing rewrites no other record", async () => {
    const { dst, directory } = world();
    const saves: Array<{ phase: string; namespaces: NamespaceRecord[] }> = [];
    const save = dst.store.saveJob.bind(dst.store);
    dst.store.saveJob = async (job) => {
      saves.push({ phase: job.phase, namespaces: JSON.parse(JSON.stringify(job.namespaces)) });
      return save(job);
    };
    const job = await boot(directory);
    await job.start(request());
    await job.idle();
    const [planned, prepared] = saves;
    expect(planned!.phase).toBe('planned');
    expect(prepared!.phase).toBe('prepared');
    const set = (n: NamespaceRecord[], coll: string) =>
      n.find((r) => r.collection === coll)?.partitionSet;
    // One partition each, no read: planned by start, named by its write (sets 1 and 2).
    expect([set(planned!.namespaces, 'people'), set(planned!.namespaces, 'log')].sort()).toEqual([
      1, 2,
    ]);
    // Split by sampling: planned when the copy begins.
    expect(set(planned!.namespaces, 'c1')).toBeUndefined();
    // The preparation's write changes only the record whose indexes it relaxed.
    const before = new Map(planned!.namespaces.map((r) => [r.key, JSON.stringify(r)]));
    const changed = prepared!.namespaces
      .filter((r) => JSON.stringify(r) !== before.get(r.key))
      .map((r) => r.collection);
    expect(changed).toEqual(['c0']);
    // Copied all the same.
    expect(dst.collection('crm', 'people', false)?.documents).toEqual([{ _id: 'x' }]);
    expect(dst.collection('shop', 'log', false)?.documents).toHaveLength(2);
  });

  it('operations outside their states answer named errors; commit/reverse are not faked', async () => {
    const { directory } = world();
    const job = await boot(directory);
    await expectApiError(job.pause(), 'InvalidState');
    await expectApiError(job.resume(), 'InvalidState');
    await expectApiError(job.commit(), 'InvalidState');
    await expectApiError(job.reverse(), 'InvalidState');
    await expectApiError(job.start(request({ source: 'nope' })), 'UnknownCluster');
    await expectApiError(
      job.start(request({ destination: 'cluster0' })),
      'SameSourceAndDestination',
    );
    await expectApiError(
      job.start(
        request({
          includeNamespaces: [{ database: 'shop', collectionsRegex: { pattern: '(a+)+' } }],
        }),
      ),
      'InvalidRequest',
    );
    expect(job.state).toBe('IDLE');
    await job.start(request());
    await expectApiError(job.start(request()), 'NotIdle');
    await expectApiError(job.resume(), 'InvalidState');
    const commit = await expectApiError(job.commit(), 'InvalidState');
    expect(commit.message).toMatch(/commit/);
    await job.idle();
  });

  it('refuses a selection larger than the worker can hold (CatalogTooLarge), changing nothing', async () => {
    const { dst, directory } = world();
    const job = await boot(directory, { maxNamespaces: { limit: 3, why: 'a test limit' } });
    const error = await expectApiError(job.start(request()), 'CatalogTooLarge');
    expect(error.message).toContain('at most 3 (a test limit)');
    expect(error.message).toMatch(/holds \d+ namespaces/);
    expect(job.state).toBe('IDLE');
    expect(dst.store.job).toBeNull();
    expect(dst.collection('shop', 'c0', false)).toBeUndefined();
    // Narrowed to what fits, the same worker starts.
    await job.start(request({ includeNamespaces: [{ database: 'crm' }] }));
    expect(job.state).toBe('RUNNING');
  });

  it('refuses a destination that already holds a selected namespace', async () => {
    const { dst, directory } = world();
    dst.seed('shop', 'c1', [{ _id: 1 }]);
    const job = await boot(directory);
    const error = await expectApiError(job.start(request()), 'DestinationNotEmpty');
    expect(error.message).toContain('shop.c1');
    expect(job.state).toBe('IDLE');
    expect(dst.store.job).toBeNull();
  });

  it('pause stops at a safe point; resume finishes; copied never exceeds total', async () => {
    const { src, dst, directory } = world();
    src.readDelayMs = 3;
    const job = await boot(directory);
    await job.start(request());
    // Pause mid-copy: once a partition is done (not after a sleep that may be too short or long).
    await until(() => [...dst.store.partitions.values()].some((p) => p.status === 'done'));
    await job.pause();
    expect(job.state).toBe('PAUSED');
    expect(dst.store.job!.state).toBe('PAUSED');
    const paused = job.progress();
    expect(paused.lagTimeSeconds).toBeNull();
    expect(paused.collectionCopy!.estimatedCopiedBytes).toBeGreaterThan(0);
    expect(paused.collectionCopy!.estimatedCopiedBytes).toBeLessThanOrEqual(
      paused.collectionCopy!.estimatedTotalBytes,
    );
    await job.resume();
    await job.idle();
    expect(dst.store.job!.phase).toBe('copied');
    expect(dst.collection('shop', 'c2')!.documents).toHaveLength(300);
  });

  it('a restarted instance resumes the persisted job and redoes only unfinished partitions', async () => {
    const { src, dst, directory } = world();
    src.readDelayMs = 3;
    const first = await boot(directory);
    await first.start(request());
    const stored = () => [...dst.store.partitions.values()];
    await until(() => stored().some((p) => p.status === 'done'));
    await first.close(); // a crash at a safe point: state stays RUNNING on the destination
    const done = stored().filter((p) => p.status === 'done');
    const pending = stored().filter((p) => p.status !== 'done');
    expect(done.length).toBeGreaterThan(0);
    expect(pending.length).toBeGreaterThan(0);
    src.readDelayMs = 0;
    const ranges: string[] = [];
    const read = src.read.bind(src);
    src.read = (db, coll, options) => {
      // The copy's reads (the verifier's comparisons read in `_id` order).
      if (!options.sortById) ranges.push(`${db}.${coll}|${JSON.stringify(options.range)}`);
      return read(db, coll, options);
    };
    const second = await boot(directory);
    expect(second.state).toBe('RUNNING');
    await second.idle();
    expect(dst.store.job!.phase).toBe('copied');
    expect(dst.collection('shop', 'c1')!.documents).toHaveLength(300);
    // Only the unfinished partitions are read again.
    const nameOf = (key: string) => {
      const ns = dst.store.job!.namespaces.find((n) => n.key === key)!;
      return `${ns.database}.${ns.collection}`;
    };
    const rangeOf = (p: (typeof done)[number]) =>
      `${nameOf(p.key)}|${JSON.stringify(
        p.natural
          ? 'natural'
          : { ...('min' in p ? { min: p.min } : {}), ...('max' in p ? { max: p.max } : {}) },
      )}`;
    expect(ranges.sort()).toEqual(pending.map(rangeOf).sort());
    const p = second.progress();
    expect(p.collectionCopy!.estimatedCopiedBytes).toBe(p.collectionCopy!.estimatedTotalBytes);
  });

  it('a PAUSED job stays paused after a restart', async () => {
    const { src, directory } = world();
    src.readDelayMs = 3;
    const first = await boot(directory);
    await first.start(request());
    await first.pause();
    await first.close();
    const second = await boot(directory);
    expect(second.state).toBe('PAUSED');
    await second.resume();
    await second.idle();
    expect(second.progress().state).toBe('RUNNING');
  });

  it('refuses to resume a job made for other clusters (JobClusterMismatch)', async () => {
    const { src, dst, directory } = world();
    const first = await boot(directory);
    await first.start(request());
    await first.idle();
    await first.close();
    const other = new FakeCluster('cluster0', replicaSet('rsOther', 'c:1'));
    other.databases.clear();
    const mismatched = new FakeDirectory(other, dst);
    const job = new SyncJob({ clusters: mismatched, logger: silentLogger });
    await expectApiError(job.initialize(), 'JobClusterMismatch');
    expect(() => job.progress()).toThrow(/different clusters|not the source/);
    await expectApiError(job.start(request()), 'JobClusterMismatch');
    // swapped connection strings: the job is found on the cluster named as its source
    const swappedSrc = new FakeCluster('cluster0', dst.description);
    swappedSrc.store.job = dst.store.job;
    const swapped = new SyncJob({
      clusters: new FakeDirectory(swappedSrc, new FakeCluster('cluster1', src.description)),
      logger: silentLogger,
    });
    await expectApiError(swapped.initialize(), 'JobClusterMismatch');
  });

  it('change application starts from T0 once the copy is done (one pass) and enables commit', async () => {
    const { src, dst, directory } = world();
    let copiedWhenStarted = false;
    const fake = fakeApplication({
      onRun: () => (copiedWhenStarted = dst.store.job!.phase === 'copied'),
    });
    const job = await boot(directory, { phases: { changeApplication: fake.factory } });
    await job.start(request({ enableUserWriteBlocking: true }));
    expect(dst.writeBlocked).toBe(true);
    await until(() => job.progress().canCommit === true);
    expect(fake.contexts).toHaveLength(1);
    expect(fake.contexts[0]!.startAt).toEqual(dst.store.job!.t0);
    expect(copiedWhenStarted).toBe(true);
    expect(job.progress()).toMatchObject({
      canCommit: true,
      info: 'change event application',
      lagTimeSeconds: 1,
    });
    await job.commit();
    expect(['COMMITTING', 'COMMITTED']).toContain(job.state);
    await job.idle();
    expect(src.writeBlocked).toBe(true);
    expect(dst.writeBlocked).toBe(false);
    expect(fake.waitedFor).toHaveLength(1);
    const relaxedUnique = dst.collection('shop', 'c0')!.indexes.find((i) => i.name === 'email_1');
    expect(relaxedUnique).toMatchObject({ unique: true });
    expect(dst.collection('shop', 'c0')!.indexes.find((i) => i.name === 'at_1')).toMatchObject({
      hidden: true,
      expireAfterSeconds: 60,
    });
    expect(job.progress()).toMatchObject({
      state: 'COMMITTED',
      canWrite: true,
      lagTimeSeconds: 0,
      info: 'commit completed',
    });
    expect(dst.store.job!.commit).toMatchObject({ step: 'done' });
    await expectApiError(job.reverse(), 'ReverseNotAllowed');
  });

  it('commit is refused until canCommit, and only while RUNNING', async () => {
    const { directory } = world();
    const fake = fakeApplication({ ready: false });
    const job = await boot(directory, { phases: { changeApplication: fake.factory } });
    await job.start(request());
    await until(() => job.progress().info === 'change event application');
    await expectApiError(job.commit(), 'CommitNotReady');
    await job.pause();
    expect(job.progress().lagTimeSeconds).toBeNull();
    await expectApiError(job.commit(), 'InvalidState');
    await job.close();
  });

  it('a crash mid-commit is finished by the next instance from the persisted step', async () => {
    const { src, dst, directory } = world();
    const fake = fakeApplication();
    let crash = true;
    const first = await boot(directory, {
      phases: { changeApplication: fake.factory },
      onCommitStep: async (step) => {
        if (crash && step === 'drained') throw new Error('simulated crash');
      },
    });
    await first.start(request({ enableUserWriteBlocking: true }));
    await until(() => first.progress().canCommit === true);
    await first.commit();
    await first.idle();
    expect(first.state).toBe('COMMITTING');
    expect(dst.store.job!.commit).toMatchObject({ step: 'drained' });
    await first.close();
    crash = false;
    const second = await boot(directory, { phases: { changeApplication: fake.factory } });
    expect(second.state).toBe('COMMITTING');
    await second.idle();
    expect(second.progress()).toMatchObject({ state: 'COMMITTED', canWrite: true });
    expect(src.writeBlocked).toBe(true);
    expect(dst.writeBlocked).toBe(false);
    // the commit point was not taken twice
    expect(fake.waitedFor).toHaveLength(1);
  });

  it('history loss fails the sync loudly, is persisted, and a restart shows it', async () => {
    const { dst, directory } = world();
    const fatal: Error[] = [];
    const failing: ChangeApplication = {
      run: async () => {
        throw new HistoryLostError('the oplog no longer holds the resume point', 286);
      },
      status: () => ({ lagTimeSeconds: null, totalEventsApplied: 0, readyToCommit: false }),
      waitUntilApplied: async () => undefined,
    };
    const job = await boot(directory, {
      phases: { changeApplication: () => failing },
      onFatal: (e) => fatal.push(e),
    });
    await job.start(request());
    await until(() => fatal.length > 0);
    expect(job.progress()).toMatchObject({
      state: 'RUNNING',
      error: 'HistoryLost',
      canCommit: false,
    });
    expect(String(job.progress().failure)).toMatch(/oplog/);
    await until(() => dst.store.job?.failure !== undefined);
    await job.close();
    const again = await boot(directory, { phases: { changeApplication: () => failing } });
    expect(again.progress()).toMatchObject({ state: 'RUNNING', error: 'HistoryLost' });
    await expectApiError(again.commit(), 'CommitNotReady');
    await again.pause();
    await expectApiError(again.resume(), 'HistoryLost');
  });

  it('reverse swaps roles from the commit time without copying, and a second commit hands back', async () => {
    const { src, dst, directory } = world();
    const fake = fakeApplication();
    const job = await boot(directory, { phases: { changeApplication: fake.factory } });
    await expectApiError(
      job.start(request({ reversible: true })),
      'ReversibleRequiresWriteBlocking',
    );
    await job.start(request({ reversible: true, enableUserWriteBlocking: true }));
    await until(() => job.progress().canCommit === true);
    await job.commit();
    await job.idle();
    const destinationTime = dst.store.job!.commit!.destinationTime;
    const readsBefore = dst.reads;
    await job.reverse();
    expect(job.state).toBe('RUNNING');
    expect(job.progress()).toMatchObject({
      directionMapping: { Source: 'cluster1: b:27018', Destination: 'cluster0: a:27017' },
      canWrite: false,
    });
    expect(src.store.job).toMatchObject({ state: 'RUNNING', phase: 'copied' });
    expect(src.store.job!.source.name).toBe('cluster1');
    const last = fake.contexts[fake.contexts.length - 1]!;
    expect(last.startAt).toEqual(destinationTime);
    expect(last.job.source.name).toBe('cluster1');
    expect(src.writeBlocked).toBe(true);
    await until(() => job.progress().canCommit === true);
    expect(dst.reads).toBe(readsBefore); // no re-copy
    await job.commit();
    await job.idle();
    expect(job.progress()).toMatchObject({ state: 'COMMITTED', canWrite: true });
    expect(dst.writeBlocked).toBe(true);
    expect(src.writeBlocked).toBe(false);
    // a restart finds the newest job (on cluster0 now)
    await job.close();
    const again = await boot(directory, { phases: { changeApplication: fake.factory } });
    expect(again.progress().directionMapping).toMatchObject({ Destination: 'cluster0: a:27017' });
  });

  it('a collection renamed on the source while partitions are planned is still copied (by UUID)', async () => {
    const { src, dst, directory } = world();
    const sample = src.sampleSortedIds.bind(src);
    let renamed = false;
    src.sampleSortedIds = async (db, coll, size) => {
      const ids = await sample(db, coll, size);
      if (!renamed && coll === 'c1') {
        renamed = true;
        const shop = src.databases.get('shop')!;
        shop.set('moved', shop.get('c1')!);
        shop.delete('c1');
      }
      return ids;
    };
    const job = await boot(directory);
    await job.start(request());
    await job.idle();
    expect(renamed).toBe(true);
    // The destination keeps the listed name until the rename event is applied; no data lost.
    const copied = dst.collection('shop', 'c1')!.documents.map((d) => BSON.serialize(d).toString());
    const source = src
      .collection('shop', 'moved')!
      .documents.map((d) => BSON.serialize(d).toString());
    expect(copied.sort()).toEqual(source.sort());
    expect(copied).toHaveLength(300);
  });

  it('commands with an id apply once: a re-delivery succeeds and changes nothing, also after a restart', async () => {
    const { directory } = world();
    const fake = fakeApplication();
    const job = await boot(directory, { phases: { changeApplication: fake.factory } });
    await job.start(request(), { commandId: 'start-1' });
    await job.start(request(), { commandId: 'start-1' }); // re-delivered: success, no NotIdle
    await expectApiError(job.start(request(), { commandId: 'start-2' }), 'NotIdle');
    await job.pause({ commandId: 'pause-1' });
    await job.pause({ commandId: 'pause-1' });
    expect(job.state).toBe('PAUSED');
    await expectApiError(job.resume({ commandId: 'pause-1' }), 'InvalidRequest');
    await job.close();
    const again = await boot(directory, { phases: { changeApplication: fake.factory } });
    await again.pause({ commandId: 'pause-1' }); // remembered in the job document
    await again.resume({ commandId: 'resume-1' });
    await again.resume({ commandId: 'resume-1' });
    expect(again.state).toBe('RUNNING');
    expect(again.job!.commands!.map((c) => c.id)).toEqual(['start-1', 'pause-1', 'resume-1']);
    await again.close();
  });

  it('a transient failure is retried from the persisted state, shown in progress, and the sync goes on', async () => {
    const { dst, directory } = world();
    const ok = fakeApplication();
    let runs = 0;
    const flaky = (): ChangeApplication => {
      const inner = ok.factory();
      return {
        ...inner,
        run: async (ctx) => {
          runs++;
          if (runs === 1) {
            await new Promise((r) => setTimeout(r, 20));
            throw Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' });
          }
          return inner.run(ctx);
        },
      };
    };
    const fatal: Error[] = [];
    const job = await boot(directory, {
      phases: { changeApplication: flaky },
      retryBaseMs: 150,
      onFatal: (e) => fatal.push(e),
    });
    await job.start(request({ enableUserWriteBlocking: true }));
    await until(() => job.progress().retrying !== undefined);
    expect(job.progress()).toMatchObject({
      state: 'RUNNING',
      canCommit: false,
      retrying: { error: expect.stringMatching(/connection reset/), retries: 1 },
    });
    await until(() => job.progress().canCommit === true);
    expect(job.progress().retrying).toBeUndefined();
    await job.commit();
    await job.idle();
    expect(job.state).toBe('COMMITTED');
    expect(dst.store.job).toMatchObject({ state: 'COMMITTED', commit: { step: 'done' } });
    expect(dst.store.job!.failure).toBeUndefined();
    expect(fatal).toEqual([]);
  });

  it('replica set → sharded: sharding entries are checked at start and sharded before any copy', async () => {
    const { src } = world();
    const dst = new FakeCluster('cluster1', {
      kind: 'sharded',
      shardCount: 2,
      displayHost: 'mongos:27017',
      fingerprint: { kind: 'sharded', setName: null, members: ['s0', 's1'] },
    });
    const directory = new FakeDirectory(src, dst);
    const job = await boot(directory);
    const entry = (collection: string, key: Record<string, number | string>) => ({
      database: 'shop',
      collection,
      shardCollection: { key: [key] },
    });
    await expectApiError(job.start(request()), 'ShardingRequiredForReplicaSetToSharded');
    await expectApiError(
      job.start(
        request({
          sharding: {
            createSupportingIndexes: false,
            shardingEntries: [entry('c1', { v: 'hashed' })],
          },
        }),
      ),
      'ShardKeyIndexMissing',
    );
    await expectApiError(
      job.start(
        request({
          sharding: { createSupportingIndexes: true, shardingEntries: [entry('nope', { v: 1 })] },
        }),
      ),
      'InvalidShardingEntry',
    );
    expect(dst.store.job).toBeNull(); // refused starts change nothing
    await job.start(
      request({
        sharding: {
          createSupportingIndexes: true,
          shardingEntries: [entry('c0', { email: 1 }), entry('c1', { v: 'hashed' })],
        },
      }),
    );
    await job.idle();
    // Sharded non-unique while the unique supporting index is relaxed; the index becomes
    // unique again at commit.
    expect(dst.sharded.get('shop.c0')).toEqual({
      key: { email: 1 },
      unique: false,
      documentsBefore: 0,
    });
    expect(dst.sharded.get('shop.c1')).toEqual({
      key: { v: 'hashed' },
      unique: false,
      documentsBefore: 0,
    });
    expect(dst.sharded.has('shop.c2')).toBe(false); // not listed: stays unsharded
    expect(dst.collection('shop', 'c1')!.indexes.map((i) => i.name)).toContain('v_hashed');
    expect(dst.collection('shop', 'c1')!.documents).toHaveLength(300);
    expect(dst.store.job!.namespaces.find((n) => n.collection === 'c1')!.shardKey).toMatchObject({
      key: { v: 'hashed' },
      supportingIndex: 'v_hashed',
    });
  });

  it('sharded → sharded: each collection sharded on the source is sharded alike on the destination', async () => {
    const sharded = (name: string, host: string, members: string[]) => ({
      kind: 'sharded' as const,
      shardCount: members.length,
      displayHost: host,
      fingerprint: { kind: 'sharded' as const, setName: null, members },
    });
    const src = new FakeCluster('cluster0', sharded('a', 'ma:1', ['a0', 'a1']));
    const dst = new FakeCluster('cluster1', sharded('b', 'mb:1', ['b0', 'b1']));
    src.seed('shop', 'orders', [{ _id: 1, region: 'eu' }]);
    src.seed('shop', 'notes', [{ _id: 1 }]);
    await src.shardCollection('shop', 'orders', { region: 1, _id: 1 }, true);
    const job = await boot(new FakeDirectory(src, dst));
    await job.start(request());
    await job.idle();
    expect(dst.sharded.get('shop.orders')).toMatchObject({ key: { region: 1, _id: 1 } });
    expect(dst.sharded.has('shop.notes')).toBe(false);
    expect(dst.collection('shop', 'orders')!.documents).toHaveLength(1);
  });

  it('progress with detail=namespaces lists every namespace with its copy state', async () => {
    const { directory } = world();
    const job = await boot(directory);
    await job.start(request({ excludeNamespaces: [{ database: 'crm' }] }));
    await job.idle();
    const detail = job.progress({ detail: 'namespaces' }).namespaceDetail as Array<{
      namespace: string;
      state: string;
      type: string;
      copiedBytes: number;
      estimatedBytes: number;
      partitions: { total: number; done: number };
    }>;
    expect(detail.map((d) => d.namespace).sort()).toEqual([
      'shop.c0',
      'shop.c1',
      'shop.c2',
      'shop.cheap',
      'shop.log',
    ]);
    const c1 = detail.find((d) => d.namespace === 'shop.c1')!;
    expect(c1).toMatchObject({ type: 'collection', state: 'copied' });
    expect(c1.partitions.total).toBeGreaterThan(1);
    expect(c1.partitions.done).toBe(c1.partitions.total);
    expect(c1.copiedBytes).toBe(c1.estimatedBytes);
    expect(detail.find((d) => d.namespace === 'shop.cheap')).toMatchObject({
      type: 'view',
      state: 'created',
    });
    expect(job.progress()).not.toHaveProperty('namespaceDetail');
  });

  it('a write failure fails the sync loudly (onFatal) without marking partitions done', async () => {
    const { dst, directory } = world();
    dst.failInsert = () =>
      Object.assign(new Error('E121 Document failed validation'), { code: 121 });
    const fatal: Error[] = [];
    const job = await boot(directory, { onFatal: (e) => fatal.push(e) });
    await job.start(request());
    await job.idle();
    expect(fatal).toHaveLength(1);
    expect(fatal[0]!.message).toContain('failed validation');
    expect(job.progress().failure).toMatch(/failed validation/);
    expect(dst.store.job!.phase).toBe('prepared');
    expect([...dst.store.partitions.values()].every((p) => p.status === 'pending')).toBe(true);
    // persisted with the error: a restart shows it instead of trying again
    expect(dst.store.job!.failure).toMatchObject({ error: 'CopyWriteError' });
  });
});
