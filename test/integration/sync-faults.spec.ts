import { Int32, type Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { SyncJob, type EngineLogger, type SyncJobOptions } from '@sync/engine';
import { MongoClusterDirectory } from '@sync/mongo';
import { mongoChangeApplication } from '../../apps/worker/src/composition/create-sync-engine';
import {
  CEA_TUNING,
  TUNING,
  expectEqualClusters,
  request,
  startAuthClusters,
  waitFor,
  type AuthClusters,
} from './sync-helpers';
import { describeEmulatorOnly } from '../helpers/real-clusters';

/**
 * Issue 13 point 1: transient faults injected with the servers' `failCommand` fail point
 * (appName "cluster-sync": only the worker's own commands fail, never the test's) into the
 * source and the destination during copy, change application and commit. Prints its figures.
 */
type AnyDoc = { _id: unknown } & Document;

/** Every command a sync sends (copy, change stream, apply, job store, commit). */
const ALL_COMMANDS = [
  'find',
  'getMore',
  'aggregate',
  'insert',
  'update',
  'delete',
  'findAndModify',
  'count',
  'distinct',
  'listCollections',
  'listIndexes',
  'listDatabases',
  'collStats',
  'dbStats',
  'create',
  'createIndexes',
  'collMod',
  'killCursors',
  'appendOplogNote',
  'setUserWriteBlockMode',
  'replSetGetStatus',
  'serverStatus',
  'buildInfo',
  'endSessions',
];

const RATE = Number(process.env.FAULT_RATE ?? 0.05);
const DOCS = Number(process.env.FAULT_DOCS ?? 1000);
const ROUNDS = Number(process.env.FAULT_ROUNDS ?? 2);

/** The fault kinds rotated through at the 5 % rate. */
const KINDS: Array<{ name: string; data: Document }> = [
  { name: 'NotWritablePrimary', data: { errorCode: 10107 } },
  { name: 'ExceededTimeLimit', data: { errorCode: 262 } },
  { name: 'RetryableWriteError', data: { errorCode: 6, errorLabels: ['RetryableWriteError'] } },
  {
    name: 'ResumableChangeStreamError',
    data: { errorCode: 91, errorLabels: ['ResumableChangeStreamError'] },
  },
  { name: 'closeConnection', data: { closeConnection: true } },
];

async function failPoint(client: MongoClient, mode: unknown, data: Document = {}): Promise<number> {
  const reply = await client.db('admin').command({
    configureFailPoint: 'failCommand',
    mode,
    data: { appName: 'cluster-sync', ...data },
  });
  return Number(reply.count ?? 0);
}

async function seed(c: AuthClusters, count: number): Promise<void> {
  const items = c.appSrc.db('shop').collection<AnyDoc>('items');
  await items.createIndex({ sku: 1 }, { unique: true, name: 'sku_1' });
  for (let i = 0; i < count; i += 500) {
    await items.insertMany(
      Array.from({ length: Math.min(500, count - i) }, (_, k) => ({
        _id: new Int32(i + k),
        sku: `sku-${i + k}`,
        v: new Int32(0),
        pad: 'p'.repeat(200),
      })),
    );
  }
}

async function churn(c: AuthClusters, round: number, count: number, modulo: number): Promise<void> {
  const items = c.appSrc.db('shop').collection<AnyDoc>('items');
  for (let i = 0; i < count; i++) {
    const _id = new Int32((i * 7 + round * 13) % modulo);
    if (i % 10 === 9) await items.deleteOne({ _id });
    else await items.updateOne({ _id }, { $set: { v: new Int32(round), [`r${round}`]: i } });
  }
}

/** Both clusters' URIs with one connection-string option set. */
function withUriOption(
  c: AuthClusters,
  name: string,
  value: string,
): { source: string; destination: string } {
  const set = (uri: string) => {
    const url = new URL(uri);
    url.searchParams.set(name, value);
    return url.toString();
  };
  return { source: set(c.sourceUri), destination: set(c.destinationUri) };
}

interface Worker {
  job: SyncJob;
  fatal: Error[];
  warnings: string[];
  close(): Promise<void>;
}

/** A worker as the service builds it, with the URIs' options (e.g. socketTimeoutMS) and tuning. */
async function worker(
  c: AuthClusters,
  extra: Partial<SyncJobOptions> = {},
  uris = { source: c.sourceUri, destination: c.destinationUri },
): Promise<Worker> {
  const directory = new MongoClusterDirectory(
    { cluster0: uris.source, cluster1: uris.destination },
    'worker',
  );
  const fatal: Error[] = [];
  const warnings: string[] = [];
  const logger: EngineLogger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (message, fields) => void warnings.push(`${message} ${JSON.stringify(fields ?? {})}`),
    error: () => undefined,
  };
  const job = new SyncJob({
    clusters: directory,
    logger,
    ...TUNING,
    phases: { changeApplication: mongoChangeApplication(directory, CEA_TUNING) },
    onFatal: (e) => fatal.push(e),
    onClose: () => directory.close(),
    ...extra,
  });
  await job.initialize();
  return { job, fatal, warnings, close: () => job.close() };
}

describeEmulatorOnly('failCommand fail points with probabilities, emulator users')(
  'transient faults survived (failCommand on source and destination)',
  () => {
    let c: AuthClusters;
    const workers: Worker[] = [];

    afterEach(async () => {
      for (const client of [c.src, c.dst]) await failPoint(client, 'off').catch(() => undefined);
      for (const w of workers.splice(0)) await w.close().catch(() => undefined);
      await c.close();
    });

    // Sized for CI; FAULT_RATE (0.05), FAULT_DOCS (1000) and FAULT_ROUNDS (2) make a longer run.
    it('a 5 % failure rate on every command, copy → change application → commit: byte-equal', async () => {
      c = await startAuthClusters();
      await seed(c, DOCS);
      // ShutdownInProgress (91) carries no topologyVersion, so after one the driver waits for its
      // monitor's next heartbeat (heartbeatFrequencyMS, 10 s by default) before it selects the
      // server again, as it does against mongod; a short heartbeat keeps each such wait short.
      const w = await worker(
        c,
        { maxTransientRetries: 10_000, retryBaseMs: 20 },
        withUriOption(c, 'heartbeatFrequencyMS', '500'),
      );
      workers.push(w);

      // 5 % of every command of the worker fails, on both sides; the kind rotates every 200 ms.
      const injected: Record<string, number> = {};
      let kind = 0;
      let rotating = true;
      // count replies are cumulative (timesEntered): the differences are the faults of a period
      let last = { src: 0, dst: 0 };
      const rotate = async () => {
        while (rotating) {
          const k = KINDS[kind % KINDS.length]!;
          const counts = { src: 0, dst: 0 };
          for (const [side, client] of [
            ['src', c.src],
            ['dst', c.dst],
          ] as const) {
            counts[side] = await failPoint(
              client,
              { activationProbability: RATE },
              {
                failCommands: ALL_COMMANDS,
                ...k.data,
              },
            );
          }
          const previous = KINDS[(kind + KINDS.length - 1) % KINDS.length]!.name;
          injected[previous] =
            (injected[previous] ?? 0) + counts.src - last.src + counts.dst - last.dst;
          last = counts;
          kind += 1;
          await new Promise((r) => setTimeout(r, 200));
        }
      };
      await w.job.start(request()); // the API call; its copy and everything after run under faults
      const rotation = rotate();
      const stopRotation = async () => {
        rotating = false;
        await rotation.catch(() => undefined);
      };
      try {
        const writer = churn(c, 1, 200, DOCS);
        await waitFor(
          () => w.job.progress().canCommit === true,
          50_000 * Math.max(1, DOCS / 1000),
          'canCommit',
          () => JSON.stringify(w.job.progress()),
        );
        await writer;
        for (let round = 2; round <= ROUNDS; round++) {
          await churn(c, round, 100, DOCS); // change application under faults
          await waitFor(
            () => w.job.progress().canCommit === true,
            60_000,
            'canCommit again',
            () => JSON.stringify(w.job.progress()),
          );
        }
        // As a user would: a refused commit (a fault while checking readiness) is asked again,
        // and so is one rolled back because its final check could not read through the faults
        // (VerificationUnavailable: the source is writable again, the sync runs on).
        const rolledBack = () =>
          ((w.job.progress().warnings as unknown[] | undefined) ?? []).some((x) =>
            String(x).startsWith('CommitRolledBack'),
          );
        for (let attempt = 1; ; attempt++) {
          await w.job.commit().catch(async (e: unknown) => {
            await new Promise((r) => setTimeout(r, 200));
            if ((e as { error?: string }).error !== 'CommitNotReady') throw e;
            await w.job.commit();
          });
          await waitFor(
            () =>
              w.job.progress().state === 'COMMITTED' ||
              !!w.job.progress().commitFailure ||
              (w.job.progress().state === 'RUNNING' && rolledBack()),
            40_000,
            'COMMITTED',
            () => JSON.stringify(w.job.progress()),
          );
          if (w.job.progress().state !== 'RUNNING' || attempt >= 3) break;
          await waitFor(
            () => w.job.progress().canCommit === true,
            60_000,
            'canCommit after a rollback',
            () => JSON.stringify(w.job.progress()),
          );
        }
      } finally {
        await stopRotation();
      }
      for (const client of [c.src, c.dst]) await failPoint(client, 'off');
      const progress = w.job.progress();
      const total = Object.values(injected).reduce((a, b) => a + b, 0);
      console.log(
        `[faults] ${RATE * 100} % on every command, ${DOCS} documents: ${total} faults injected and survived ` +
          `(${JSON.stringify(injected)}); operations retried in place: ${String(progress.retriedOperations ?? 0)}; ` +
          `runs restarted from persisted state: ${String(progress.retries ?? 0)}; ` +
          `retry log lines: ${w.warnings.filter((l) => /retrying/.test(l)).length}; ` +
          `events applied: ${String(progress.totalEventsApplied)}`,
      );
      expect(progress).toMatchObject({ state: 'COMMITTED', canWrite: true });
      expect(w.fatal).toEqual([]);
      expect(total).toBeGreaterThan(0);
      // every fault was met by a retry (in place, or of the run), none was skipped
      expect(
        Number(progress.retries ?? 0) + Number(progress.retriedOperations ?? 0),
      ).toBeGreaterThan(0);
      await expectEqualClusters(c);
    });

    it('blockConnection beyond socketTimeoutMS and interrupted change-stream getMores', async () => {
      c = await startAuthClusters();
      await seed(c, 1000);
      const w = await worker(
        c,
        { maxTransientRetries: 50, retryBaseMs: 20 },
        withUriOption(c, 'socketTimeoutMS', '1000'),
      );
      workers.push(w);
      // copy reads hang past the socket timeout three times
      await failPoint(
        c.src,
        { times: 3 },
        {
          failCommands: ['find', 'getMore'],
          blockConnection: true,
          blockTimeMS: 1500,
        },
      );
      await w.job.start(request());
      await waitFor(
        () => w.job.progress().canCommit === true,
        40_000,
        'canCommit',
        () => JSON.stringify(w.job.progress()),
      );
      const blocked = await failPoint(c.src, 'off');
      // the change stream's getMores: interrupted (resumable) and cut, then destination writes hang
      await failPoint(
        c.src,
        { times: 4 },
        {
          failCommands: ['getMore'],
          errorCode: 11601,
          errorLabels: ['ResumableChangeStreamError'],
        },
      );
      await churn(c, 1, 100, 1000);
      await failPoint(
        c.dst,
        { times: 2 },
        {
          failCommands: ['update', 'delete', 'insert'],
          blockConnection: true,
          blockTimeMS: 1500,
        },
      );
      await churn(c, 2, 100, 1000);
      await waitFor(() => w.job.progress().canCommit === true, 30_000, 'canCommit again');
      const interrupted = await failPoint(c.src, 'off');
      const blockedWrites = await failPoint(c.dst, 'off');
      await w.job.commit();
      await waitFor(() => w.job.progress().state === 'COMMITTED', 30_000, 'COMMITTED');
      console.log(
        `[faults] blocked reads ${blocked - 0}, interrupted getMores ${interrupted - blocked}, ` +
          `blocked writes ${blockedWrites}: all survived; sync retries ${String(w.job.progress().retries ?? 0)}`,
      );
      expect(w.fatal).toEqual([]);
      expect(blocked).toBeGreaterThan(0);
      await expectEqualClusters(c);
    });

    it('authorization lost on the destination during change application stops the sync, named and located', async () => {
      c = await startAuthClusters();
      await seed(c, 200);
      const w = await worker(c, { maxTransientRetries: 3, retryBaseMs: 10 });
      workers.push(w);
      await w.job.start(request());
      await waitFor(() => w.job.progress().canCommit === true, 30_000, 'canCommit');
      // The sync user loses its rights on the destination: every write is refused (13).
      await failPoint(c.dst, 'alwaysOn', {
        failCommands: ['update', 'delete', 'insert'],
        errorCode: 13,
      });
      await churn(c, 1, 20, 200);
      await waitFor(
        () => w.fatal.length > 0,
        30_000,
        'the sync to stop',
        () => JSON.stringify(w.job.progress()),
      );
      await failPoint(c.dst, 'off');
      const progress = w.job.progress();
      console.log(`[faults] authorization lost: ${progress.failure as string}`);
      // Not retried as if transient, not skipped: stopped, with the server's reason. The first
      // write refused may be a lane's (then named DestinationWriteError, located on shop.items)
      // or the checkpoint's (the sync's own metadata): either way the sync stops at once.
      expect(Number(progress.retries ?? 0)).toBe(0);
      expect(Number(progress.retriedOperations ?? 0)).toBe(0);
      expect(progress.canCommit).toBe(false);
      expect(String(progress.error)).toMatch(/^(DestinationWriteError|CheckpointSaveError)$/);
      expect(String(progress.failure)).toMatch(/Unauthorized \(code 13\)/);
      if (progress.error === 'DestinationWriteError') {
        expect(progress.failureNamespace).toBe('shop.items');
        expect(String(progress.failure)).toMatch(/write\(s\) to shop\.items failed: .*\(code 13\)/);
      }
    });

    it('a fault outlasting the retry budget stops the sync with a named, persisted error', async () => {
      c = await startAuthClusters();
      await seed(c, 500);
      const w = await worker(c, { maxTransientRetries: 3, retryBaseMs: 10 });
      workers.push(w);
      await failPoint(c.dst, 'alwaysOn', { failCommands: ['insert'], errorCode: 262 });
      await w.job.start(request());
      await waitFor(
        () => w.fatal.length > 0,
        30_000,
        'a fatal failure',
        () => JSON.stringify(w.job.progress()),
      );
      expect(w.fatal[0]!.name).toBe('TransientFaultBudgetExhausted');
      expect(w.fatal[0]!.message).toMatch(/4 transient failures in a row/);
      const progress = w.job.progress();
      expect(progress).toMatchObject({ error: 'TransientFaultBudgetExhausted', canCommit: false });
      expect(String(progress.failure)).toMatch(
        /shop\.items failed: Failing command via 'failCommand'/,
      );
      expect(Number(progress.retries)).toBe(3);
      await failPoint(c.dst, 'off');
      // persisted: a restarted worker shows it instead of spinning
      await w.close();
      workers.pop();
      const again = await worker(c);
      workers.push(again);
      expect(again.job.progress()).toMatchObject({ error: 'TransientFaultBudgetExhausted' });
      console.log(`[faults] budget: ${progress.failure as string}`);
    });
  },
);
