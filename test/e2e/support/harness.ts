import { MongoClient, MongoServerError, type Document } from 'mongodb';
import { withCredentials } from '../../../scripts/lib/processes';
import {
  afterProcessesStop,
  ensureBuilt,
  spawnProcess,
  startEmulatorReplicaSet,
  type ManagedProcess,
} from '../../helpers/processes';
import { recordOutput } from '../../helpers/leak-ledger';
import {
  checkShardCount,
  credentialsOf,
  ensureUsers,
  listRealShards,
  resetRealCluster,
  withoutCredentials,
} from '../../helpers/real-cluster-admin';
import {
  nextScenario,
  onRealClusters,
  realReplicaSets,
  realShardedClusters,
  type RealClusterPair,
} from '../../helpers/real-clusters';

/**
 * Shared pieces of the end-to-end suites: the BUILT emulator and worker as processes (or the real
 * clusters test/helpers/real-clusters.ts names: SYNC_TEST_SOURCE_URI and the others), a small
 * HTTP client for /api/v1 that polls instead of sleeping, and MongoDB clients that are closed in
 * teardown. Nothing here reaches into the engine: the worker is driven over HTTP only.
 */

export const WORKER = 'dist/apps/worker/src/main.js';
export const EMULATOR = 'dist/libs/mongo-emulator/src/cli.js';
export const DEMO = 'dist/scripts/demo.js';

/** Builds dist once when it is missing or older than the sources. */
export function buildOnce(): void {
  ensureBuilt([WORKER, EMULATOR, DEMO]);
}

export interface User {
  name: string;
  password: string;
}

/** The sync user (root: bypasses write blocking, may block writes) and the application user. */
export const SYNCER: User = { name: 'syncer', password: 'Syncer-S3cret-pw' };
export const APP: User = { name: 'app', password: 'App-S3cret-pw' };
export const AUTH_USERS = [
  `${SYNCER.name}:${SYNCER.password}:root`,
  `${APP.name}:${APP.password}:readWriteAnyDatabase`,
];

export interface Cluster {
  /**
   * The cluster's own connection string: an emulator's has no credentials (with `auth` it can
   * do nothing); a real cluster's is the one given, with its root user.
   */
  uri: string;
  /** The emulator's process; none for a real cluster. */
  process?: ManagedProcess;
  /** Connection string for `user` (authSource=admin); `uri` without a user. */
  uriFor(user?: User): string;
}

/**
 * A replica set for a scenario: an emulated one started as a process, or — on real clusters —
 * the one SYNC_TEST_SOURCE_URI or SYNC_TEST_DESTINATION_URI names, chosen by `name` (ending in
 * `source`/`src` or `destination`/`dst`), reset for the scenario, with the suites' users
 * (SYNCER, APP) created, and reset again by stopAllProcesses().
 */
export async function startCluster(
  name: string,
  auth: boolean,
  /** Change history the emulator keeps (entries): an emulator-only knob, refused on real clusters. */
  history?: number,
): Promise<Cluster> {
  if (onRealClusters()) {
    if (history !== undefined) {
      throw new Error(
        'history is an emulator-only knob: declare the test with emulatorOnly(reason)',
      );
    }
    return startRealCluster(roleOf(name, realReplicaSets(), 'replica sets'));
  }
  const { uri, process } = await startEmulatorReplicaSet({
    name,
    users: auth ? AUTH_USERS : [],
    ...(history !== undefined ? { history } : {}),
  });
  return {
    uri,
    process,
    uriFor: (user) => (user ? withCredentials(uri, user.name, user.password) : uri),
  };
}

export interface ShardedCluster extends Cluster {
  /**
   * The shards: as the emulator printed them (`<name>-shard<i>`, each an emulated replica set),
   * or as a real cluster's listShards names them (connection strings without credentials).
   */
  shards: { _id: string; uri: string }[];
  /** A connection string that may read `shard` directly (the SYNCER, or a real cluster's root). */
  shardUri(shard: { uri: string }): string;
}

/**
 * Starts an emulated SHARDED cluster as one process (`--topology sharded`): `uri` names its
 * router, `shards` its shards (connect to one directly to see what it holds). With `auth`, the
 * launch users exist on the routers and on every shard. On real clusters: the sharded cluster
 * SYNC_TEST_SHARDED_SOURCE_URI or SYNC_TEST_SHARDED_DESTINATION_URI names (by `name`, as
 * startCluster), which must have 2 (source) or 3 (destination) shards whatever `shards` says,
 * and shards that accept its root user (for the direct reads).
 */
export async function startShardedCluster(
  name: string,
  shards: number,
  auth: boolean,
): Promise<ShardedCluster> {
  if (onRealClusters()) {
    const role = roleOf(name, realShardedClusters(), 'sharded clusters');
    const cluster = await startRealCluster(role);
    const listed = await listRealShards(cluster.uri);
    checkShardCount(role.role, listed);
    const root = credentialsOf(cluster.uri);
    return {
      ...cluster,
      shards: listed,
      shardUri: (shard) =>
        root ? withCredentials(shard.uri, root.user, root.password) : shard.uri,
    };
  }
  const args = [EMULATOR, '--topology', 'sharded', '--shards', String(shards)];
  args.push('--name', name, '--port', '0');
  for (const user of auth ? AUTH_USERS : []) args.push('--user', user);
  const emulator = spawnProcess('node', args);
  const line = await emulator.waitForJsonLine(
    (record) => typeof record.uri === 'string' && Array.isArray(record.shards),
  );
  const uri = line.uri as string;
  return {
    uri,
    process: emulator,
    shards: line.shards as ShardedCluster['shards'],
    uriFor: (user) => (user ? withCredentials(uri, user.name, user.password) : uri),
    shardUri: (shard) =>
      auth ? withCredentials(shard.uri, SYNCER.name, SYNCER.password) : shard.uri,
  };
}

interface RealRole {
  role: 'source' | 'destination';
  uri: string;
}

function roleOf(name: string, real: RealClusterPair | undefined, kind: string): RealRole {
  if (real === undefined) {
    throw new Error(
      `real clusters are configured but no ${kind}: declare the suite with describeOn(...)`,
    );
  }
  if (/(^|-)(source|src)$/.test(name)) return { role: 'source', uri: real.source };
  if (/(^|-)(destination|dst)$/.test(name)) return { role: 'destination', uri: real.destination };
  throw new Error(
    `cluster "${name}": on real clusters name it ...source/src or ...destination/dst`,
  );
}

/** A real cluster for a new scenario: reset, the suites' users, reset again at teardown. */
async function startRealCluster({ uri }: RealRole): Promise<Cluster> {
  await resetRealCluster(uri);
  await ensureUsers(uri, [
    { user: SYNCER.name, password: SYNCER.password, roles: ['root'] },
    { user: APP.name, password: APP.password, roles: ['readWriteAnyDatabase'] },
  ]);
  nextScenario();
  afterProcessesStop(() => resetRealCluster(uri));
  const bare = withoutCredentials(uri);
  return {
    uri,
    uriFor: (user) => (user ? withCredentials(bare, user.name, user.password) : uri),
  };
}

const clients = new Set<MongoClient>();

/** A driver client, closed by closeClients(). */
export async function connect(uri: string): Promise<MongoClient> {
  const client = await MongoClient.connect(uri, { serverSelectionTimeoutMS: 15_000 });
  clients.add(client);
  return client;
}

export async function closeClients(): Promise<void> {
  const all = [...clients];
  clients.clear();
  await Promise.all(all.map((client) => client.close(true).catch(() => undefined)));
}

export interface CopyFigures {
  estimatedTotalBytes: number;
  estimatedCopiedBytes: number;
}

export interface Progress {
  state: string;
  canCommit: boolean;
  canWrite: boolean | null;
  info: string | null;
  lagTimeSeconds: number | null;
  totalEventsApplied: number | null;
  collectionCopy: CopyFigures | null;
  directionMapping: { Source: string; Destination: string } | null;
  syncID: string | null;
  coordinatorID: string | null;
  failure?: string;
  /** A worker of a per-shard sync: what it waits for on the other workers. */
  waitingFor?: string;
}

export interface ApiResult {
  status: number;
  body: {
    success: boolean;
    error?: string;
    errorDescription?: string;
    progress?: Progress;
  };
}

export interface WorkerApiOptions {
  /** Sent as `Authorization: Bearer <token>` (a worker launched with an API token). */
  token?: string;
  /** Every response body is appended here (leak checks). */
  record?: string[];
}

/** /api/v1 of one worker process. */
export class WorkerApi {
  constructor(
    readonly baseUrl: string,
    private readonly options: WorkerApiOptions = {},
  ) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const token = this.options.token;
    return token === undefined ? extra : { ...extra, authorization: `Bearer ${token}` };
  }

  private async result(response: Response): Promise<ApiResult> {
    const text = await response.text();
    this.options.record?.push(text);
    recordOutput(`response ${new URL(response.url).pathname}`, text);
    return { status: response.status, body: JSON.parse(text) as ApiResult['body'] };
  }

  async post(operation: string, body: object = {}): Promise<ApiResult> {
    const response = await fetch(`${this.baseUrl}/${operation}`, {
      method: 'POST',
      headers: this.headers({ 'content-type': 'application/json' }),
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(120_000),
    });
    return this.result(response);
  }

  /** POSTs and fails the test with the API's error name when the call is refused. */
  async expectSuccess(operation: string, body: object = {}): Promise<void> {
    const result = await this.post(operation, body);
    if (result.status !== 200 || !result.body.success) {
      throw new Error(`POST /${operation} failed: ${JSON.stringify(result)}`);
    }
  }

  async progressResult(): Promise<ApiResult> {
    const response = await fetch(`${this.baseUrl}/progress`, {
      headers: this.headers(),
      signal: AbortSignal.timeout(10_000),
    });
    return this.result(response);
  }

  /** The progress snapshot; throws on an error envelope (503 NotReady while initializing). */
  async progress(): Promise<Progress> {
    const result = await this.progressResult();
    if (result.status !== 200 || !result.body.progress) {
      throw new Error(`progress failed: ${JSON.stringify(result)}`);
    }
    return result.body.progress;
  }

  /**
   * Polls progress until `done` holds. Retries NotReady and connection errors; gives up early
   * when the sync reports a failure, and always says what the last snapshot was.
   */
  async waitFor(
    what: string,
    done: (progress: Progress) => boolean,
    timeoutMs = 120_000,
    intervalMs = 100,
  ): Promise<Progress> {
    const deadline = Date.now() + timeoutMs;
    let last = 'no answer yet';
    for (;;) {
      try {
        const progress = await this.progress();
        last = JSON.stringify(progress);
        if (done(progress)) return progress;
        if (progress.failure)
          throw new SyncFailed(`sync failed while waiting for ${what}: ${last}`);
      } catch (error) {
        if (error instanceof SyncFailed) throw error;
        last = String(error);
      }
      if (Date.now() > deadline) {
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${last}`);
      }
      await sleep(intervalMs);
    }
  }
}

class SyncFailed extends Error {}

export interface StartedWorker {
  process: ManagedProcess;
  api: WorkerApi;
}

export interface WorkerOptions {
  /** `--id`: the source shard this worker syncs (one worker per source shard). */
  id?: string;
}

export function workerArgs(
  cluster0: string,
  cluster1: string,
  options: WorkerOptions = {},
): string[] {
  const args = [WORKER, '--cluster0', cluster0, '--cluster1', cluster1, '--port', '0'];
  if (options.id !== undefined) args.push('--id', options.id);
  return args;
}

/** Launches the built worker on a free port and waits for its "worker listening" line. */
export async function startWorker(
  cluster0: string,
  cluster1: string,
  options: WorkerOptions = {},
): Promise<StartedWorker> {
  const worker = spawnProcess('node', workerArgs(cluster0, cluster1, options));
  const listening = await worker.waitForJsonLine((record) => record.msg === 'worker listening');
  return { process: worker, api: new WorkerApi(listening.url as string) };
}

/** SIGKILL: no shutdown hook runs, exactly like a crashed host. */
export async function crash(worker: StartedWorker): Promise<void> {
  worker.process.child.kill('SIGKILL');
  expect(await worker.process.waitForExit(10_000)).toEqual({ code: null, signal: 'SIGKILL' });
  await worker.process.stop();
}

/** copied == total > 0 (also true for a moment mid-copy if the source grew past the estimate). */
export const copyFiguresDone = (p: Progress): boolean =>
  p.collectionCopy !== null &&
  p.collectionCopy.estimatedCopiedBytes > 0 &&
  p.collectionCopy.estimatedCopiedBytes === p.collectionCopy.estimatedTotalBytes;

/** The copy is over and change events are being applied (info moves on from "collection copy"). */
export const copyDone = (p: Progress): boolean =>
  copyFiguresDone(p) && p.info !== null && p.info !== 'collection copy';

/** Copy percentage strictly between 0 and 100. */
export const midCopy = (p: Progress): boolean =>
  p.state === 'RUNNING' &&
  p.collectionCopy !== null &&
  p.collectionCopy.estimatedCopiedBytes > 0 &&
  p.collectionCopy.estimatedCopiedBytes < p.collectionCopy.estimatedTotalBytes;

/** Runs one write and returns the server's error code name, or 'ok' when it was accepted. */
export async function tryWrite(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return 'ok';
  } catch (error) {
    if (error instanceof MongoServerError) return error.codeName ?? `code ${error.code}`;
    throw error;
  }
}

/** Polls a collection until the document with `_id` exists (change events carried it over). */
export async function waitForDocument(
  client: MongoClient,
  ns: string,
  id: unknown,
  timeoutMs = 60_000,
): Promise<Document> {
  const [db, coll] = splitNs(ns);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const doc = await client
      .db(db)
      .collection(coll)
      .findOne({ _id: id as never });
    if (doc) return doc;
    if (Date.now() > deadline) {
      throw new Error(`document ${JSON.stringify(id)} never reached ${ns} within ${timeoutMs} ms`);
    }
    await sleep(200);
  }
}

/** Document counts of every user collection (views excluded), keyed by namespace. */
export async function countAll(client: MongoClient): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const { databases } = await client.db('admin').admin().listDatabases({ nameOnly: true });
  for (const { name } of databases) {
    if (['admin', 'config', 'local', 'sync_reserved_for_internal_use'].includes(name)) continue;
    const infos = await client.db(name).listCollections({}, { nameOnly: false }).toArray();
    for (const info of infos) {
      if (info.type === 'view' || info.name.startsWith('system.')) continue;
      counts[`${name}.${info.name}`] = await client.db(name).collection(info.name).countDocuments();
    }
  }
  return counts;
}

/** Text a worker wrote (stdout and stderr), for "never prints the connection string" checks. */
export function outputOf(worker: StartedWorker | ManagedProcess): string {
  const managed = 'api' in worker ? worker.process : worker;
  return managed.stdout() + managed.stderr();
}

export function splitNs(ns: string): [string, string] {
  const dot = ns.indexOf('.');
  return [ns.slice(0, dot), ns.slice(dot + 1)];
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Tests that are steps of one scenario: once a step fails, the later ones fail at once with
 * "not run: step X failed" instead of timing out on a state the scenario never reached.
 */
export function steps(
  timeoutMs: number,
): (name: string, run: () => Promise<void>, stepTimeoutMs?: number) => void {
  let failed: string | undefined;
  return (name, run, stepTimeoutMs = timeoutMs) =>
    it(
      name,
      async () => {
        if (failed) throw new Error(`not run: the earlier step "${failed}" failed`);
        try {
          await run();
        } catch (error) {
          failed = name;
          throw error;
        }
      },
      stepTimeoutMs,
    );
}

/** Polls a local condition (writer statistics and the like) every 100 ms. */
export async function waitUntil(
  condition: () => boolean,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

/** startShardedClusterWithRouters: the routers of the cluster, one by one. */
export interface MultiRouterShardedCluster extends ShardedCluster {
  /** Connection string of router `index` alone (`uriFor` names them all), for `user`. */
  routerUriFor(index: number, user?: User): string;
}

/**
 * startShardedCluster with `routers` mongos routers (`--mongos`): `uri` and `uriFor` name them
 * all (`mongodb://h1,h2/`), so a driver spreads its operations over them and pins each
 * transaction to one; `routerUriFor` names one. On real clusters: the configured sharded
 * cluster, as startShardedCluster (whatever routers its connection string names).
 */
export async function startShardedClusterWithRouters(
  name: string,
  shards: number,
  auth: boolean,
  routers: number,
): Promise<MultiRouterShardedCluster> {
  if (onRealClusters()) {
    const cluster = await startShardedCluster(name, shards, auth);
    return { ...cluster, routerUriFor: (_index, user) => cluster.uriFor(user) };
  }
  const args = [EMULATOR, '--topology', 'sharded', '--shards', String(shards)];
  args.push('--mongos', String(routers), '--name', name, '--port', '0');
  for (const user of auth ? AUTH_USERS : []) args.push('--user', user);
  const emulator = spawnProcess('node', args);
  const line = await emulator.waitForJsonLine(
    (record) => typeof record.uri === 'string' && Array.isArray(record.shards),
  );
  const uri = line.uri as string;
  // `mongodb://h1,h2/`: a URL parser takes one host only.
  const match = /^mongodb:\/\/([^/?@]+)\/?$/.exec(uri);
  if (!match) throw new Error(`unexpected router connection string ${uri}`);
  const hosts = match[1]!.split(',');
  const forHosts = (list: string[], user?: User): string =>
    user
      ? `mongodb://${encodeURIComponent(user.name)}:${encodeURIComponent(user.password)}@` +
        `${list.join(',')}/?authSource=admin`
      : `mongodb://${list.join(',')}/`;
  return {
    uri,
    process: emulator,
    shards: line.shards as ShardedCluster['shards'],
    uriFor: (user) => forHosts(hosts, user),
    routerUriFor: (index, user) => forHosts([hosts[index]!], user),
    shardUri: (shard) =>
      auth ? withCredentials(shard.uri, SYNCER.name, SYNCER.password) : shard.uri,
  };
}
