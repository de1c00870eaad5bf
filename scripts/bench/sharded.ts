/**
 * `--sharded`: sharded scale. The same dataset is copied twice on fresh emulators:
 *   1. from a replica-set source by one worker (the baseline), and
 *   2. from a 2-shard emulated source (every collection sharded on a hashed `_id`, one chunk on
 *      each shard) by two per-shard workers (`--id <shard>`, driven directly with identical
 *      commands, as the README's "A sharded source: one worker per shard" shows),
 * into a replica-set destination and into a 2-shard destination respectively (a sharded source
 * is only synced into a sharded cluster). Throughput is the dataset over the time until the last
 * worker logged `collection copy done`; the CPU each process used in that time (utime + stime
 * from /proc) is reported as CPU-seconds per document, because on 2 cores the emulators
 * compete with the workers and wall-clock scaling alone cannot be judged.
 */
import { readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { Long, MaxKey, MongoClient } from 'mongodb';
import { startNodeProcess, type Started } from '../lib/processes';
import { collectionName, insertRange, type DatasetSpec, type LoadResult } from './dataset';
import {
  EMULATOR_CLI,
  nodeFlags,
  RssSampler,
  sleep,
  startEmulator,
  startWorker,
  track,
} from './processes';
import type { WorkerProcess } from './processes';
import { post, progress } from './worker-copy';

interface ShardedLine {
  uri: string;
  shards: Array<{ _id: string; uri: string }>;
}

export interface ProcessCpu {
  name: string;
  cpuSeconds: number;
  cpuMicrosPerDocument: number;
  peakRssMB?: number;
}

export interface ShardedRun {
  workers: number;
  documents: number;
  seconds: number;
  docsPerSec: number;
  processes: ProcessCpu[];
  /** Sum of every process's CPU-seconds over the documents, in µs per document. */
  totalCpuMicrosPerDocument: number;
}

export interface ShardedResult {
  replicaSet: ShardedRun;
  sharded: ShardedRun;
  /** Two workers on 2 shards ÷ one worker on a replica set (throughput). */
  throughputRatio: number;
  /** CPU per document, 2 shards ÷ replica set (all processes). */
  cpuPerDocumentRatio: number;
}

const CLOCK_TICKS = 100; // USER_HZ on Linux

/** utime + stime of a process, in seconds (0 once it exited). */
export function cpuSecondsOf(child: ChildProcess): number {
  try {
    const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS; // fields 14, 15 of stat(5)
  } catch {
    return 0;
  }
}

export async function runShardedScale(
  spec: DatasetSpec,
  options: { profileDir: string | null; timeoutMs: number; log: (line: string) => void },
): Promise<ShardedResult> {
  const { log } = options;
  log('(s1) one worker, replica-set source…');
  const replicaSet = await onFreshClusters(spec, options, null);
  log(`  ${Math.round(replicaSet.docsPerSec)} docs/s in ${replicaSet.seconds.toFixed(1)} s`);
  log('(s2) two per-shard workers, 2-shard source…');
  const sharded = await onFreshClusters(spec, options, 2);
  log(`  ${Math.round(sharded.docsPerSec)} docs/s in ${sharded.seconds.toFixed(1)} s`);
  return {
    replicaSet,
    sharded,
    throughputRatio: round(sharded.docsPerSec / replicaSet.docsPerSec),
    cpuPerDocumentRatio: round(
      sharded.totalCpuMicrosPerDocument / replicaSet.totalCpuMicrosPerDocument,
    ),
  };
}

/** Loads the dataset into a fresh source (a replica set, or `shards` shards) and copies it. */
async function onFreshClusters(
  spec: DatasetSpec,
  options: { profileDir: string | null; timeoutMs: number; log: (line: string) => void },
  shards: number | null,
): Promise<ShardedRun> {
  const tag = shards ? `sharded${shards}` : 'rs';
  let source: Started<{ uri: string; shards?: ShardedLine['shards'] }>;
  if (shards) {
    source = track(
      await startNodeProcess<ShardedLine>([
        ...nodeFlags(options.profileDir, `emulator-source-${tag}`),
        EMULATOR_CLI,
        ...['--topology', 'sharded', '--shards', String(shards), '--name', 'bsrc', '--port', '0'],
      ]),
    );
  } else {
    source = await startEmulator(`bench-source-${tag}`, options.profileDir);
  }
  // A sharded source syncs only into a sharded destination (UnsupportedTopology otherwise).
  const destination = shards
    ? track(
        await startNodeProcess<ShardedLine>([
          ...nodeFlags(options.profileDir, `emulator-destination-${tag}`),
          EMULATOR_CLI,
          ...['--topology', 'sharded', '--shards', String(shards), '--name', 'bdst', '--port', '0'],
        ]),
      )
    : await startEmulator(`bench-destination-${tag}`, options.profileDir);
  const workers: WorkerProcess[] = [];
  const client = await MongoClient.connect(source.firstLine.uri);
  try {
    if (shards)
      await shardDataset(
        client,
        spec,
        source.firstLine.shards!.map((s) => s._id),
      );
    const loaded: LoadResult = await insertRange(client, spec.database, spec, 0, spec.documents, {
      batchSize: 1_000,
      concurrency: 4,
    });
    options.log(`  loaded ${loaded.documents} documents in ${loaded.seconds.toFixed(1)} s`);
    const ids = shards ? source.firstLine.shards!.map((s) => s._id) : [null];
    for (const id of ids) {
      workers.push(
        await startWorker(
          source.firstLine.uri,
          destination.firstLine.uri,
          options.profileDir,
          `${tag}-${id ?? 'one'}`,
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
    const before = measured.map((p) => cpuSecondsOf(p.child));
    const startedAt = Date.now();
    await Promise.all(
      workers.map((w) => post(w.api, 'start', { source: 'cluster0', destination: 'cluster1' })),
    );
    const ends = await Promise.all(workers.map((w) => copyEnd(w, startedAt, options.timeoutMs)));
    const seconds = Math.max(1e-3, (Math.max(...ends) - startedAt) / 1000);
    const processes = measured.map((p, i) => {
      const cpuSeconds = round(cpuSecondsOf(p.child) - before[i]!);
      return {
        name: p.name,
        cpuSeconds,
        cpuMicrosPerDocument: round((1e6 * cpuSeconds) / spec.documents),
        ...(i < samplers.length ? { peakRssMB: round(samplers[i]!.stop()) } : {}),
      };
    });
    const total = processes.reduce((sum, p) => sum + p.cpuSeconds, 0);
    for (const p of processes)
      options.log(
        `    ${p.name}: ${p.cpuSeconds.toFixed(1)} CPU-s, ${p.cpuMicrosPerDocument.toFixed(0)} µs/doc`,
      );
    return {
      workers: workers.length,
      documents: spec.documents,
      seconds: round(seconds),
      docsPerSec: round(spec.documents / seconds),
      processes,
      totalCpuMicrosPerDocument: round((1e6 * total) / spec.documents),
    };
  } finally {
    await client.close();
    for (const w of workers) await w.started.stop();
    await Promise.all([source.stop(), destination.stop()]);
  }
}

/** When the worker's copy ended: its `collection copy done` log line. */
async function copyEnd(
  worker: WorkerProcess,
  startedAt: number,
  timeoutMs: number,
): Promise<number> {
  for (;;) {
    if (worker.started.child.exitCode !== null)
      throw new Error(`worker exited during the copy: ${worker.errors.join('; ')}`);
    const logged = worker.logSeen('collection copy done');
    if (logged !== null) return logged;
    if (Date.now() - startedAt > timeoutMs) {
      const p = await progress(worker.api).catch(() => null);
      throw new Error(`copy not done after ${timeoutMs / 1000} s (${p?.state} ${p?.info})`);
    }
    await sleep(50);
  }
}

/**
 * Every dataset collection sharded on a hashed `_id` before it is loaded. An empty collection
 * sharded on a hashed key starts with chunks spread over every shard (as MongoDB presplits it);
 * if it starts as one chunk, it is split at hash 0 and the upper half moved to the other shard.
 */
async function shardDataset(
  client: MongoClient,
  spec: DatasetSpec,
  shards: string[],
): Promise<void> {
  const admin = client.db('admin');
  const db = client.db(spec.database);
  for (let k = 0; k < spec.collections; k++) {
    const name = collectionName(k);
    const ns = `${spec.database}.${name}`;
    await db.collection(name).createIndex({ _id: 'hashed' }, { name: '_id_hashed' });
    await admin.command({ shardCollection: ns, key: { _id: 'hashed' } });
    const entry = await client
      .db('config')
      .collection('collections')
      .findOne({ _id: ns as never });
    const chunks = await client
      .db('config')
      .collection('chunks')
      .find({ uuid: entry?.uuid })
      .toArray();
    if (new Set(chunks.map((c) => c.shard as string)).size > 1) continue;
    await admin.command({ split: ns, middle: { _id: Long.ZERO } });
    const other = shards.find((s) => s !== chunks[0]?.shard)!;
    await admin.command({
      moveChunk: ns,
      bounds: [{ _id: Long.ZERO }, { _id: new MaxKey() }],
      to: other,
    });
  }
}

const round = (v: number): number => Math.round(v * 1000) / 1000;
