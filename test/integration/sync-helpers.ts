import type { StartRequest } from '@sync/contracts';
import { SyncJob, silentLogger, type EngineLogger, type SyncJobOptions } from '@sync/engine';
import { MongoClusterDirectory } from '@sync/mongo';
import {
  createSyncEngine,
  mongoChangeApplication,
} from '../../apps/worker/src/composition/create-sync-engine';
import { MongoClient, MongoServerError } from 'mongodb';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import {
  startTestCluster,
  startTestClusters,
  withCredentials,
  type TestCluster,
  type TestClusters,
} from '../helpers/clusters';
import { waitFor } from './copy-helpers';
import { REPAIR_WARNING } from '../helpers/leak-ledger';

export { waitFor };

/** The worker's user (root: bypasses write blocking) and an ordinary application user. */
export const USERS = [
  { user: 'syncer', password: 'sync-pw', roles: ['root'] },
  { user: 'app', password: 'app-pw', roles: ['readWriteAnyDatabase'] },
];

export interface AuthClusters {
  clusters: TestClusters;
  /** Worker connection strings (root). */
  sourceUri: string;
  destinationUri: string;
  /** Root clients (setup and comparison). */
  src: MongoClient;
  dst: MongoClient;
  /** Application clients (readWriteAnyDatabase: subject to write blocking). */
  appSrc: MongoClient;
  appDst: MongoClient;
  close(): Promise<void>;
}

export async function startAuthClusters(historySize?: number): Promise<AuthClusters> {
  const clusters = await startTestClusters({ users: USERS, historySize });
  const creds = (uri: string, u: (typeof USERS)[number]) =>
    withCredentials(uri, u.user, u.password);
  const sourceUri = creds(clusters.sourceUri, USERS[0]!);
  const destinationUri = creds(clusters.destinationUri, USERS[0]!);
  const src = await MongoClient.connect(sourceUri);
  const dst = await MongoClient.connect(destinationUri);
  const appSrc = await MongoClient.connect(creds(clusters.sourceUri, USERS[1]!));
  const appDst = await MongoClient.connect(creds(clusters.destinationUri, USERS[1]!));
  return {
    clusters,
    sourceUri,
    destinationUri,
    src,
    dst,
    appSrc,
    appDst,
    close: async () => {
      await Promise.all([src, dst, appSrc, appDst].map((c) => c.close()));
      await clusters.stop();
    },
  };
}

/** The start request of the per-shard suites: cluster0 → cluster1, writes blocked at commit. */
export const PER_SHARD_START = {
  source: 'cluster0',
  destination: 'cluster1',
  buildIndexes: 'beforeDataCopy' as const,
  enableUserWriteBlocking: true,
  reversible: false,
} satisfies StartRequest;

/** Repair warnings the helpers' engines logged in the current test. */
const repairWarnings: string[] = [];
// Registered in every test file that imports these helpers: each test starts with none (a test
// that alters the destination behind the sync may see its divergence repaired, legitimately).
beforeEach(() => {
  repairWarnings.length = 0;
});

/**
 * Silent, except that it keeps the live verifier's repair warnings: a repair rewrites a document
 * the sync's own change application got wrong, so a test that ends byte-equal only thanks to one
 * would prove nothing about change application. `expectEqualClusters` fails on any; tests that
 * mean to cause a repair pass a logger of their own.
 */
export const testLogger: EngineLogger = {
  ...silentLogger,
  warn: (message, fields) => {
    if (message.includes(REPAIR_WARNING))
      repairWarnings.push(`${message} ${JSON.stringify(fields)}`);
  },
};

export const TUNING = {
  partitioning: { targetBytes: 8 * 1024, maxPartitions: 16, oversampling: 8 },
  copier: {
    concurrency: 4,
    readBatchSize: 100,
    writeBatchDocuments: 100,
    writeBatchBytes: 64 * 1024,
  },
} satisfies Partial<SyncJobOptions>;

export const CEA_TUNING = {
  lagPollMs: 100,
  feed: { maxAwaitTimeMS: 100 },
  applier: { checkpointIntervalMs: 100 },
};

export function request(overrides: Partial<StartRequest> = {}): StartRequest {
  return {
    source: 'cluster0',
    destination: 'cluster1',
    buildIndexes: 'beforeDataCopy',
    enableUserWriteBlocking: true,
    reversible: false,
    ...overrides,
  };
}

/** An engine as the worker builds it. */
export async function engineFor(c: AuthClusters, fatal: Error[] = []): Promise<SyncJob> {
  const engine = await createSyncEngine({
    clusters: { cluster0: c.sourceUri, cluster1: c.destinationUri },
    logger: testLogger,
    onFatal: (e) => fatal.push(e),
    engine: TUNING,
    changeApplication: CEA_TUNING,
  });
  await engine.ready;
  return engine as unknown as SyncJob;
}

/**
 * An engine whose connections the test can cut abruptly (`crash()`): no graceful stop, no final
 * checkpoint, like a SIGKILL as far as the clusters can tell.
 */
export async function crashableEngine(
  c: AuthClusters,
  extra: Partial<SyncJobOptions> = {},
): Promise<{ job: SyncJob; crash: () => Promise<void> }> {
  const directory = new MongoClusterDirectory(
    { cluster0: c.sourceUri, cluster1: c.destinationUri },
    'worker',
  );
  const job = new SyncJob({
    clusters: directory,
    logger: testLogger,
    ...TUNING,
    phases: { changeApplication: mongoChangeApplication(directory, CEA_TUNING) },
    onFatal: () => undefined,
    ...extra,
  });
  await job.initialize();
  return {
    job,
    // Connections cut mid-flight (no graceful stop of what is in flight), then the engine is
    // stopped: driver 6 reconnects a closed client on its next operation, so without the stop
    // the "crashed" engine would go on beside its successor.
    crash: async () => {
      await directory.close().catch(() => undefined);
      await job.close().catch(() => undefined);
    },
  };
}

export async function expectEqualClusters(c: AuthClusters): Promise<void> {
  const report = await compareClusters(c.src, c.dst, { compareUnique: true });
  expect(report.differences).toEqual([]);
  expect(report.documents).toBeGreaterThan(0);
  // Equal by the sync's own writes, not by the verifier's repairs (see testLogger).
  expect(repairWarnings.splice(0)).toEqual([]);
}

/** The server error code of a write, or null when it succeeded. */
export async function writeError(run: () => Promise<unknown>): Promise<number | null> {
  try {
    await run();
    return null;
  } catch (error) {
    if (error instanceof MongoServerError) return Number(error.code);
    const code = (error as { code?: unknown }).code;
    return typeof code === 'number' ? code : -1;
  }
}

export async function commitAndWait(job: SyncJob): Promise<void> {
  await waitFor(
    () => job.progress().canCommit === true,
    30_000,
    'canCommit',
    () => JSON.stringify(job.progress()),
  );
  await job.commit();
  await waitFor(
    () => job.progress().state === 'COMMITTED',
    30_000,
    'COMMITTED',
    () => JSON.stringify(job.progress()),
  );
}

/** Two sharded clusters and per-shard worker engines, for the per-shard specs. */
export interface ShardedSyncFixture {
  source: TestCluster;
  destination: TestCluster;
  src: MongoClient;
  dst: MongoClient;
  /**
   * A worker engine (`id`: a source shard id; none: a lone worker), ready, closed after the
   * suite. The lease is the worker's default (6 s), renewed every 0.5 s, unless timings are
   * given: the suites that test takeovers and lapses give short ones; the others must not lose
   * a 2 s lease to a loaded CI machine's stall (a lapse stops the run, by design).
   */
  worker(
    id?: string,
    options?: {
      shardClaim?: { staleMs: number; renewMs: number };
      onFatal?: (error: Error) => void;
      logger?: EngineLogger;
      /** Called after each commit step this worker runs (a test pauses or fails there). */
      onCommitStep?: (step: string) => Promise<void>;
    },
  ): Promise<SyncJob>;
}

/**
 * Registers beforeAll/afterAll that start a sharded source and destination (emulated, or real
 * ones through SYNC_TEST_* when set) and stop them with every worker made by `worker`. The
 * fixture's fields are filled in beforeAll.
 */
export function useShardedClusters(options: {
  source: string;
  destination: string;
  sourceShards: number;
  destinationShards: number;
  logger?: EngineLogger;
}): ShardedSyncFixture {
  const workers: SyncJob[] = [];
  const fixture = {
    async worker(id, opts = {}) {
      const engine = await createSyncEngine({
        clusters: { cluster0: fixture.source.uri, cluster1: fixture.destination.uri },
        ...(id ? { id } : {}),
        logger: opts.logger ?? options.logger ?? testLogger,
        ...(opts.onFatal ? { onFatal: opts.onFatal } : {}),
        engine: {
          ...TUNING,
          shardClaim: opts.shardClaim ?? { staleMs: 6_000, renewMs: 500 },
          balancerWatchMs: 200,
          ...(opts.onCommitStep ? { onCommitStep: opts.onCommitStep } : {}),
        },
        changeApplication: CEA_TUNING,
      });
      await engine.ready;
      workers.push(engine as unknown as SyncJob);
      return engine as unknown as SyncJob;
    },
  } as ShardedSyncFixture;
  beforeAll(async () => {
    fixture.source = await startTestCluster('source', {
      kind: 'sharded',
      name: options.source,
      shards: options.sourceShards,
    });
    fixture.destination = await startTestCluster('destination', {
      kind: 'sharded',
      name: options.destination,
      shards: options.destinationShards,
    });
    fixture.src = await new MongoClient(fixture.source.uri).connect();
    fixture.dst = await new MongoClient(fixture.destination.uri).connect();
  });
  afterAll(async () => {
    for (const w of workers) await w.close().catch(() => undefined);
    await fixture.src?.close();
    await fixture.dst?.close();
    await fixture.destination?.stop();
    await fixture.source?.stop();
  });
  return fixture;
}
