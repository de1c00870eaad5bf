/**
 * `--sharded`: per-shard scale. The same dataset (one hashed-key collection of ~1 KB documents by
 * default) on a fresh 4-shard emulated source is synced into a fresh 2-shard destination twice:
 *   (a) by ONE worker without `--id`, reading everything through the routers, and
 *   (b) by FOUR workers, one per source shard (`--id <shard>`), each reading only its own shard
 *       (connected directly to the shard's replica set), driven with identical commands as the
 *       README's "A sharded source: one worker per shard" shows.
 * Each run is timed from `start` until every worker reports `canCommit: true`. Reported per run:
 * the workers' CPU-seconds (utime + stime from /proc, summed over the worker processes) and per
 * document, and the read amplification: documents the source shards returned (the sum over every
 * source shard node of `serverStatus().metrics.document.returned`, after minus before) ÷
 * documents synced. When an emulator does not report that counter, the documents the shards
 * hold are counted instead (said so in the output: a count of what is there, not of what was
 * read). The emulators' CPU is reported too: on 2 cores they compete with the workers, so the
 * wall-clock throughput ratio cannot be judged there.
 */
import type { ChildProcess } from 'node:child_process';
import { Long, MaxKey, MongoClient, type Document } from 'mongodb';
import { startNodeProcess, type Started } from '../lib/processes';
import { collectionName, insertRange, type DatasetSpec, type LoadResult } from './dataset';
import {
  EMULATOR_CLI,
  EMULATOR_NODE_FLAGS,
  nodeFlags,
  RssSampler,
  sleep,
  startWorker,
  track,
} from './processes';
import type { WorkerProcess } from './processes';
import { post, progress } from './worker-copy';
import { cpuSecondsOf } from './cpu-budget';

interface ShardedLine {
  uri: string;
  shards: Array<{ _id: string; uri: string }>;
}

export const SOURCE_SHARDS = 4;
export const DESTINATION_SHARDS = 2;

export interface ProcessCpu {
  name: string;
  cpuSeconds: number;
  cpuMicrosPerDocument: number;
  peakRssMB?: number;
}

export interface ReadCount {
  /** Documents the source shards returned during the run (or held, when `method` is `counted`). */
  documents: number;
  /** `serverStatus`: metrics.document.returned after − before; `counted`: documents held. */
  method: 'serverStatus' | 'counted';
  /** Source shard nodes whose serverStatus lacked metrics.document.returned. */
  missingOn: string[];
}

export interface ShardedRun {
  workers: number;
  documents: number;
  /** From `start` until every worker reported `canCommit: true`. */
  seconds: number;
  docsPerSec: number;
  /** Each worker's seconds from `start` to its own first `canCommit: true`. */
  workerSeconds: number[];
  /** Every process: the workers, then the two emulators. */
  processes: ProcessCpu[];
  /** CPU-seconds of the worker processes, summed. */
  workerCpuSeconds: number;
  /** workerCpuSeconds ÷ documents, in µs per document. */
  workerCpuMicrosPerDocument: number;
  /** Sum of every process's CPU-seconds (workers and emulators) over the documents, µs each. */
  totalCpuMicrosPerDocument: number;
  /** Documents in the destination after the run, counted through its router. */
  destinationDocuments: number;
  read: ReadCount;
  /** serverStatus().opcounters of the source shard nodes, after − before, summed over them. */
  shardOpcounters: Record<string, number>;
  /** read.documents ÷ documents synced. */
  readAmplification: number;
}

export interface ShardedResult {
  sourceShards: number;
  destinationShards: number;
  /** (a) one worker without `--id`, through the routers. */
  oneWorker: ShardedRun;
  /** (b) one worker per source shard, `--id`, each reading its own shard. */
  perShardWorkers: ShardedRun;
  readAmplification1: number;
  readAmplification4: number;
  /** How the amplification figures were obtained (see ReadCount.method). */
  readAmplificationMethod: ReadCount['method'];
  /** Worker CPU per document, four workers ÷ one. */
  cpuPerDocRatio4: number;
  /** Throughput, four workers ÷ one. */
  throughputRatio4: number;
}

export const SHARDED_TARGETS = {
  readAmplificationMax: 1.1,
  cpuPerDocRatio4Max: 1.2,
  /** 0.8 × 4, judged only with at least 4 free cores. */
  throughputRatio4Min: 3.2,
  freeCoresForThroughput: 4,
};

interface RunOptions {
  profileDir: string | null;
  timeoutMs: number;
  log: (line: string) => void;
  /**
   * The embedded verifier in both runs (default off here: the read amplification measures how
   * the sync's own reads divide; the verifier reads every document once more, in both runs).
   */
  verification?: boolean;
}

export async function runShardedScale(
  spec: DatasetSpec,
  options: RunOptions,
): Promise<ShardedResult> {
  const { log } = options;
  log(`(a) one worker through the routers, ${SOURCE_SHARDS}-shard source…`);
  const oneWorker = await onFreshClusters(spec, options, false);
  log(`  ${describeRun(oneWorker)}`);
  log(`(b) ${SOURCE_SHARDS} per-shard workers (--id), each reading its own shard…`);
  const perShardWorkers = await onFreshClusters(spec, options, true);
  log(`  ${describeRun(perShardWorkers)}`);
  const method =
    oneWorker.read.method === 'serverStatus' && perShardWorkers.read.method === 'serverStatus'
      ? 'serverStatus'
      : 'counted';
  return {
    sourceShards: SOURCE_SHARDS,
    destinationShards: DESTINATION_SHARDS,
    oneWorker,
    perShardWorkers,
    readAmplification1: oneWorker.readAmplification,
    readAmplification4: perShardWorkers.readAmplification,
    readAmplificationMethod: method,
    cpuPerDocRatio4: round(
      perShardWorkers.workerCpuMicrosPerDocument / oneWorker.workerCpuMicrosPerDocument,
    ),
    throughputRatio4: round(perShardWorkers.docsPerSec / oneWorker.docsPerSec),
  };
}

function describeRun(run: ShardedRun): string {
  return `${Math.round(run.docsPerSec)} docs/s, ${run.seconds.toFixed(1)} s to canCommit, workers ${run.workerCpuSeconds.toFixed(1)} CPU-s (${run.workerCpuMicrosPerDocument.toFixed(0)} µs/doc), read amplification ${run.readAmplification.toFixed(3)}${run.read.method === 'counted' ? ' (counted)' : ''}`;
}

function startSharded(
  options: RunOptions,
  name: string,
  shards: number,
  tag: string,
): Promise<Started<ShardedLine>> {
  return startNodeProcess<ShardedLine>([
    ...nodeFlags(options.profileDir, `emulator-${name}-${tag}`),
    ...EMULATOR_NODE_FLAGS,
    EMULATOR_CLI,
    ...['--topology', 'sharded', '--shards', String(shards), '--name', name, '--port', '0'],
  ]).then(track);
}

/** Loads the dataset into a fresh 4-shard source and syncs it with one or four workers. */
async function onFreshClusters(
  spec: DatasetSpec,
  options: RunOptions,
  perShard: boolean,
): Promise<ShardedRun> {
  const tag = perShard ? 'per-shard' : 'one';
  const source = await startSharded(options, 'bsrc', SOURCE_SHARDS, tag);
  const destination = await startSharded(options, 'bdst', DESTINATION_SHARDS, tag);
  const workers: WorkerProcess[] = [];
  const client = await MongoClient.connect(source.firstLine.uri);
  const destinationClient = await MongoClient.connect(destination.firstLine.uri);
  const shardIds = source.firstLine.shards.map((s) => s._id);
  const nodes = await ShardNodes.open(source.firstLine.shards.map((s) => s.uri));
  try {
    await shardDataset(client, spec, shardIds, options.log);
    const loaded: LoadResult = await insertRange(client, spec.database, spec, 0, spec.documents, {
      batchSize: 1_000,
      concurrency: 4,
    });
    options.log(`  loaded ${loaded.documents} documents in ${loaded.seconds.toFixed(1)} s`);
    const ids: Array<string | null> = perShard ? shardIds : [null];
    for (const id of ids) {
      workers.push(
        await startWorker(
          source.firstLine.uri,
          destination.firstLine.uri,
          options.profileDir,
          `sharded-${id ?? 'one'}`,
          id ? ['--id', id] : [],
        ),
      );
    }
    const measured: Array<{ name: string; child: ChildProcess }> = [
      ...workers.map((w, i) => ({ name: `worker ${ids[i] ?? ''}`.trim(), child: w.started.child })),
      { name: 'source emulator', child: source.child },
      { name: 'destination emulator', child: destination.child },
    ];
    const samplers = workers.map((w) => new RssSampler(w.started.child));
    const returnedBefore = await nodes.returned();
    const before = measured.map((p) => cpuSecondsOf(p.child));
    const startedAt = Date.now();
    await Promise.all(
      workers.map((w) =>
        post(w.api, 'start', {
          source: 'cluster0',
          destination: 'cluster1',
          ...(options.verification ? {} : { verification: { enabled: false } }),
        }),
      ),
    );
    const ends = await untilEveryCanCommit(workers, startedAt, options.timeoutMs);
    const endedAt = Math.max(...ends);
    const cpuAfter = measured.map((p) => cpuSecondsOf(p.child));
    const returnedAfter = await nodes.returned();
    const seconds = Math.max(1e-3, (endedAt - startedAt) / 1000);
    const processes = measured.map((p, i) => {
      const cpuSeconds = round(cpuAfter[i]! - before[i]!);
      return {
        name: p.name,
        cpuSeconds,
        cpuMicrosPerDocument: round((1e6 * cpuSeconds) / spec.documents),
        ...(i < samplers.length ? { peakRssMB: round(samplers[i]!.stop()) } : {}),
      };
    });
    const workerCpu = processes.slice(0, workers.length).reduce((s, p) => s + p.cpuSeconds, 0);
    const total = processes.reduce((sum, p) => sum + p.cpuSeconds, 0);
    for (const p of processes)
      options.log(
        `    ${p.name}: ${p.cpuSeconds.toFixed(1)} CPU-s, ${p.cpuMicrosPerDocument.toFixed(0)} µs/doc`,
      );
    const read = await readCount(returnedBefore.returned, returnedAfter.returned, nodes, spec);
    const shardOpcounters = Object.fromEntries(
      Object.entries(returnedAfter.opcounters).map(([k, v]) => [
        k,
        v - (returnedBefore.opcounters[k] ?? 0),
      ]),
    );
    options.log(
      `  source shard nodes' opcounters during the run: ${Object.entries(shardOpcounters)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );
    if (read.method === 'counted')
      options.log(
        `  serverStatus().metrics.document.returned missing on ${read.missingOn.join(', ')}: counted the ${read.documents} documents the source shards hold instead`,
      );
    const destinationDocuments = await countDataset(destinationClient, spec);
    if (destinationDocuments !== spec.documents)
      options.log(
        `  note: the destination holds ${destinationDocuments} documents, the source ${spec.documents}`,
      );
    return {
      workers: workers.length,
      documents: spec.documents,
      seconds: round(seconds),
      docsPerSec: round(spec.documents / seconds),
      workerSeconds: ends.map((t) => round((t - startedAt) / 1000)),
      processes,
      workerCpuSeconds: round(workerCpu),
      workerCpuMicrosPerDocument: round((1e6 * workerCpu) / spec.documents),
      totalCpuMicrosPerDocument: round((1e6 * total) / spec.documents),
      destinationDocuments,
      read,
      shardOpcounters,
      readAmplification: round(read.documents / spec.documents),
    };
  } finally {
    await Promise.all([client.close(), destinationClient.close(), nodes.close()]);
    for (const w of workers) await w.started.stop();
    await Promise.all([source.stop(), destination.stop()]);
  }
}

/**
 * When each worker first reported `canCommit: true` (progress polled every 250 ms: polling costs
 * the workers CPU).
 */
async function untilEveryCanCommit(
  workers: WorkerProcess[],
  startedAt: number,
  timeoutMs: number,
): Promise<number[]> {
  const ends: Array<number | null> = workers.map(() => null);
  for (;;) {
    await Promise.all(
      workers.map(async (w, i) => {
        if (ends[i] !== null) return;
        if (w.started.child.exitCode !== null)
          throw new Error(`worker exited before canCommit: ${w.errors.join('; ')}`);
        const p = await progress(w.api);
        if (p.canCommit) ends[i] = Date.now();
      }),
    );
    if (ends.every((e) => e !== null)) return ends as number[];
    if (Date.now() - startedAt > timeoutMs) {
      const states = await Promise.all(
        workers.map((w) =>
          progress(w.api).then(
            (p) => `${p.state} ${p.info}`,
            () => 'no progress',
          ),
        ),
      );
      throw new Error(`canCommit not reached after ${timeoutMs / 1000} s (${states.join('; ')})`);
    }
    await sleep(250);
  }
}

interface NodeCounters {
  returned: Map<string, number | null>;
  opcounters: Record<string, number>;
}

/** Every node of the source's shards, each through a direct connection for its serverStatus. */
class ShardNodes {
  private constructor(
    readonly shardClients: MongoClient[],
    readonly nodes: Array<{ host: string; client: MongoClient }>,
  ) {}

  static async open(shardUris: string[]): Promise<ShardNodes> {
    const shardClients: MongoClient[] = [];
    const nodes: Array<{ host: string; client: MongoClient }> = [];
    try {
      for (const uri of shardUris) {
        const shard = await MongoClient.connect(uri);
        shardClients.push(shard);
        const hello = await shard.db('admin').command({ hello: 1 });
        const hosts = [
          ...((hello.hosts as string[]) ?? []),
          ...((hello.passives as string[]) ?? []),
        ];
        for (const host of hosts.length ? hosts : [new URL(uri).host]) {
          const client = await MongoClient.connect(`mongodb://${host}/?directConnection=true`);
          nodes.push({ host, client });
        }
      }
    } catch (error) {
      await Promise.all([...shardClients, ...nodes.map((n) => n.client)].map((c) => c.close()));
      throw error;
    }
    return new ShardNodes(shardClients, nodes);
  }

  /**
   * metrics.document.returned of every node (null where serverStatus lacks it), and the nodes'
   * opcounters summed (commands the routers and the workers sent the shards).
   */
  async returned(): Promise<NodeCounters> {
    const out = new Map<string, number | null>();
    const opcounters: Record<string, number> = {};
    for (const { host, client } of this.nodes) {
      const status = await client.db('admin').command({ serverStatus: 1 });
      const value = ((status.metrics as Document | undefined)?.document as Document | undefined)
        ?.returned as unknown;
      out.set(host, value === undefined || value === null ? null : Number(value));
      for (const [k, v] of Object.entries((status.opcounters as Document | undefined) ?? {}))
        opcounters[k] = (opcounters[k] ?? 0) + Number(v);
    }
    return { returned: out, opcounters };
  }

  async close(): Promise<void> {
    await Promise.all(
      [...this.shardClients, ...this.nodes.map((n) => n.client)].map((c) =>
        c.close().catch(() => undefined),
      ),
    );
  }
}

/**
 * Documents the source shards returned during the run; without the counter on some node, the
 * documents the shards hold (each shard's primary, read directly, orphans included).
 */
async function readCount(
  before: Map<string, number | null>,
  after: Map<string, number | null>,
  nodes: ShardNodes,
  spec: DatasetSpec,
): Promise<ReadCount> {
  const missingOn = [...after.keys()].filter(
    (h) => before.get(h) === null || before.get(h) === undefined || after.get(h) === null,
  );
  if (missingOn.length === 0) {
    let documents = 0;
    for (const [host, value] of after) documents += value! - before.get(host)!;
    return { documents, method: 'serverStatus', missingOn };
  }
  let documents = 0;
  for (const shard of nodes.shardClients) documents += await countDataset(shard, spec);
  return { documents, method: 'counted', missingOn };
}

async function countDataset(client: MongoClient, spec: DatasetSpec): Promise<number> {
  let n = 0;
  for (let k = 0; k < spec.collections; k++)
    n += await client.db(spec.database).collection(collectionName(k)).countDocuments({});
  return n;
}

/**
 * Every dataset collection sharded on a hashed `_id` before it is loaded. An empty collection
 * sharded on a hashed key starts with chunks spread over every shard (as MongoDB presplits it);
 * if it starts as one chunk, it is split at hash 0 and the upper half moved to another shard.
 */
async function shardDataset(
  client: MongoClient,
  spec: DatasetSpec,
  shards: string[],
  log: (line: string) => void,
): Promise<void> {
  const admin = client.db('admin');
  const db = client.db(spec.database);
  for (let k = 0; k < spec.collections; k++) {
    const name = collectionName(k);
    const ns = `${spec.database}.${name}`;
    await db.collection(name).createIndex({ _id: 'hashed' }, { name: '_id_hashed' });
    await admin.command({ shardCollection: ns, key: { _id: 'hashed' } });
    const chunks = await chunksOf(client, ns);
    const owners = new Set(chunks.map((c) => c.shard as string));
    if (owners.size === shards.length) continue;
    if (owners.size === 1) {
      await admin.command({ split: ns, middle: { _id: Long.ZERO } });
      const other = shards.find((s) => s !== chunks[0]?.shard)!;
      await admin.command({
        moveChunk: ns,
        bounds: [{ _id: Long.ZERO }, { _id: new MaxKey() }],
        to: other,
      });
    }
    const now = new Set((await chunksOf(client, ns)).map((c) => c.shard as string));
    log(`  note: ${ns} has chunks on ${now.size} of ${shards.length} shards`);
  }
}

async function chunksOf(client: MongoClient, ns: string): Promise<Document[]> {
  const entry = await client
    .db('config')
    .collection('collections')
    .findOne({ _id: ns as never });
  return client.db('config').collection('chunks').find({ uuid: entry?.uuid }).toArray();
}

const round = (v: number): number => Math.round(v * 1000) / 1000;
