/**
 * (k) Many namespaces (`--namespaces N`): a multi-tenant source of N small collections (two
 * documents each, every third with a secondary index, 500 collections per database unless
 * `--per-database` says otherwise), replica
 * set → replica set with the embedded verifier, as a new user would run it. Printed: start →
 * canCommit, commit → COMMITTED (the application's downtime: the worker's own measure and the
 * API's), the final pass's figures, the worker's peak RSS, and — measured in the same run — the
 * destination's own rate of creating the same collections and indexes directly, the limit the
 * copy of many small collections is compared with.
 */
import { MongoClient, type Document } from 'mongodb';
import { logTimeline, memoryOf, RssSampler, sleep, startEmulator, startWorker } from './processes';
import { compareClusters } from '../lib/compare-clusters';
import { post, progress } from './worker-copy';
import { inLanes } from './dataset';
import {
  cpuSecondsOf,
  cpuSince,
  describeCpu,
  partOf,
  rateCeiling,
  type CpuMark,
} from './cpu-budget';
import { cpus } from 'node:os';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const PER_DATABASE = 500;
/** How long the worker is held at canCommit before the commit, its CPU measured (ms). */
const HOLD_MS = 5_000;

export interface NamespacesResult {
  namespaces: number;
  /** The embedded verifier ran (`--verification off`: it did not). */
  verification: boolean;
  /** Collections per database. */
  perDatabase: number;
  /** The destination creating the same collections and indexes directly, per second. */
  rawCreatePerSec: number;
  startToCanCommitSeconds: number;
  /** Namespaces synced per second, start → canCommit. */
  syncedPerSec: number;
  /** syncedPerSec ÷ rawCreatePerSec (target ≥ 0.5). */
  createRatio: number;
  /**
   * The worker's CPU while it holds at canCommit before the commit (no writes on the source,
   * progress asked once a second, as a dashboard does), % of one core over HOLD_MS: what a
   * catalog of this size costs while a sync waits for its cutover window.
   */
  idleCpuPercent: number;
  /** commit → COMMITTED, by the API (first progress with canWrite: true). */
  commitSeconds: number;
  /** The worker's own measure (progress.commit.cutoverSeconds). */
  reportedCutoverSeconds: number | null;
  finalPass: Document | null;
  peakRssMB: number;
  /** The worker's V8 heap limit when one was set (--worker-heap-mb), MiB. */
  workerHeapMB: number | null;
  /** Peak RSS over 250 MB, per namespace (bytes). */
  rssBytesPerNamespaceOver250: number;
  /**
   * What the worker asked of each cluster per namespace, start → canCommit (the emulators'
   * `serverStatus().metrics.commands` differences, by command name; a command's round trip is the cost that grows with
   * the namespace count). Absent in a crash loop (restarts repeat work).
   */
  opsPerNamespace?: { source: Record<string, number>; destination: Record<string, number> };
  /**
   * Where the machine's cores cap the create ratio (absent in a crash loop): CPU per namespace
   * by process, measured around the raw create, a raw read of the source and the sync itself.
   */
  limits?: NamespacesLimits;
  /** Both clusters compared byte for byte after commit (every namespace, options, indexes). */
  comparison: { documentsCompared: number; differences: number };
  /** With --kills: the SIGKILLs survived (the comparison after commit is `comparison`). */
  crashLoop?: { kills: number; documentsCompared: number; differences: number };
}

/**
 * The create ratio's ceilings on this machine (cpu-budget.ts), each in namespaces/s and ÷ the
 * raw create rate:
 * - tool free: the destination creating the collections and indexes (the raw create, which
 *   writes no documents: a lower bound of what a sync must ask of it) and the source serving a
 *   read of every collection (64 per aggregate, as the copy reads them), the tool costing nothing;
 * - driver floor: the same plus the bench's own client CPU in both (what the official driver
 *   costs a tool that issues those commands);
 * - worker on bare emulators: the tool-free work plus the worker's CPU per namespace as measured;
 * - as run: every process as measured from start to canCommit (the emulators' share includes
 *   the copy's reads and writes, the verifier's reads and the job store's writes).
 */
export interface NamespacesLimits {
  cores: number;
  /** µs of CPU per namespace, by process (`:main` suffix: its main thread). */
  rawCreateCpuMicros: CpuMark;
  rawReadCpuMicros: CpuMark;
  /** The source read alone, 64 collections per aggregate: namespaces/s. */
  rawReadPerSec: number;
  syncCpuMicros: CpuMark;
  toolFree: { perSec: number | null; ratio: number | null };
  driverFloor: { perSec: number | null; ratio: number | null };
  workerBareEmulators: { perSec: number | null; ratio: number | null };
  asRun: { perSec: number | null; ratio: number | null };
}

/** Reads every collection's documents, `group` collections per `$unionWith` aggregate. */
async function readAll(
  client: MongoClient,
  n: number,
  perDatabase: number,
  group = 64,
): Promise<number> {
  const began = Date.now();
  const batches: { db: string; colls: string[] }[] = [];
  for (let i = 0; i < n; i += 1) {
    const { db, coll } = nameOf(i, perDatabase);
    const last = batches[batches.length - 1];
    if (last && last.db === db && last.colls.length < group) last.colls.push(coll);
    else batches.push({ db, colls: [coll] });
  }
  let documents = 0;
  await inLanes(batches.length, 4, async (b) => {
    const { db, colls } = batches[b]!;
    const [first, ...rest] = colls;
    const read = await client
      .db(db)
      .collection(first!)
      .aggregate(
        rest.map((coll) => ({ $unionWith: coll })),
        { raw: true },
      )
      .toArray();
    documents += read.length;
  });
  if (documents !== 2 * n) throw new Error(`raw read: ${documents} documents, not ${2 * n}`);
  return (Date.now() - began) / 1000;
}

const nameOf = (i: number, perDatabase: number) => ({
  db: `tenants_${Math.floor(i / perDatabase)}`,
  coll: `t${i % perDatabase}`,
});

async function createAll(
  client: MongoClient,
  n: number,
  prefix: string,
  withDocuments: boolean,
  perDatabase: number,
): Promise<number> {
  const began = Date.now();
  await inLanes(n, 8, async (i) => {
    const { db, coll } = nameOf(i, perDatabase);
    const c = client.db(`${prefix}${db}`).collection<{ _id: number; v: number }>(coll);
    if (withDocuments)
      await c.insertMany([
        { _id: 1, v: i },
        { _id: 2, v: -i },
      ]);
    else await client.db(`${prefix}${db}`).createCollection(coll);
    if (i % 3 === 0) await c.createIndex({ v: 1 }, { name: 'v_1' });
  });
  return (Date.now() - began) / 1000;
}

export async function measureNamespaces(
  n: number,
  options: {
    profileDir: string | null;
    /** Start → canCommit and the commit together (default: 10 minutes, or 0.1 s per namespace). */
    timeoutMs?: number;
    log: (line: string) => void;
    /** SIGKILL the worker this many times during its copy (restarted each time). */
    kills?: number;
    /** The worker's V8 heap limit, MiB (null or absent: Node's default). */
    workerHeapMB?: number | null;
    /** Collections per database (default PER_DATABASE; one database for all: n). */
    perDatabase?: number;
    /** Write the worker's heap snapshot here once it can commit (absent or null: none). */
    heapSnapshotDir?: string | null;
    /** The embedded verifier (default on, as a new user runs it). */
    verification?: boolean;
  },
): Promise<NamespacesResult> {
  const perDatabase = options.perDatabase ?? PER_DATABASE;
  const source = await startEmulator('namespaces-source', options.profileDir);
  const destination = await startEmulator('namespaces-destination', options.profileDir);
  const src = await MongoClient.connect(source.firstLine.uri);
  const dst = await MongoClient.connect(destination.firstLine.uri);
  try {
    options.log(`  creating ${n} collections on the source...`);
    await createAll(src, n, '', true, perDatabase);
    // The limit: the destination creating the same collections and indexes itself (in other
    // databases, dropped before the sync starts).
    const createCpu = cpuSince({ destination: destination.child });
    const rawSeconds = await createAll(dst, n, 'raw_', false, perDatabase);
    const rawCreateCpuMicros = createCpu(n);
    const rawCreatePerSec = n / rawSeconds;
    const readCpu = cpuSince({ source: source.child });
    const rawReadSeconds = await readAll(src, n, perDatabase);
    const rawReadCpuMicros = readCpu(n);
    for (const name of (await dst.db('admin').admin().listDatabases()).databases.map((d) => d.name))
      if (name.startsWith('raw_')) await dst.db(name).dropDatabase();
    options.log(`  destination creates ${Math.round(rawCreatePerSec)} collections/s directly`);

    if (options.heapSnapshotDir) mkdirSync(options.heapSnapshotDir, { recursive: true });
    const launch = () =>
      startWorker(
        source.firstLine.uri,
        destination.firstLine.uri,
        options.profileDir,
        'namespaces',
        [],
        [
          ...(options.workerHeapMB ? [`--max-old-space-size=${options.workerHeapMB}`] : []),
          ...(options.heapSnapshotDir
            ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${options.heapSnapshotDir}`]
            : []),
        ],
      );
    let worker = await launch();
    let sampler = new RssSampler(worker.started.child, 200);
    let stopping = false;
    let killing = false;
    const watch = (w: typeof worker) =>
      w.started.child.once('exit', (code, signal) =>
        stopping || killing || w !== worker
          ? undefined
          : options.log(
              `  the worker exited (${code ?? signal}); its errors: ${w.errors.slice(-5).join(' | ') || 'none logged'}`,
            ),
      );
    watch(worker);
    let killsLeft = options.kills ?? 0;
    let killed = 0;
    let nextKillAt = Date.now() + 4_000 + Math.random() * 6_000;
    let peakRssMBBeforeKills = 0;
    const countersBefore = await Promise.all([opcounters(src), opcounters(dst)]);
    const syncCpu = cpuSince({
      source: source.child,
      destination: destination.child,
      worker: worker.started.child,
    });
    const startedAt = Date.now();
    await post(worker.api, 'start', {
      source: 'cluster0',
      destination: 'cluster1',
      enableUserWriteBlocking: true,
      ...(options.verification === false ? { verification: { enabled: false } } : {}),
    });
    const timeoutMs = options.timeoutMs ?? Math.max(600_000, n * 100);
    const deadline = startedAt + timeoutMs;
    let ready: number | null = null;
    let shown = 0;
    while (ready === null) {
      if (killsLeft > 0 && Date.now() >= nextKillAt) {
        // A crash loop: SIGKILL mid-copy, restart; the new process resumes the persisted job.
        const before = await progress(worker.api).catch(() => null);
        if (before && before.state === 'RUNNING' && !before.canCommit) {
          peakRssMBBeforeKills = Math.max(
            peakRssMBBeforeKills,
            memoryOf(worker.started.child)?.hwmMB ?? 0,
          );
          sampler.stop();
          const old = worker;
          killing = true;
          old.started.child.kill('SIGKILL');
          await new Promise((resolve) => old.started.child.once('exit', resolve));
          killing = false;
          killed += 1;
          killsLeft -= 1;
          options.log(
            `  SIGKILL ${killed} at ${Math.round((Date.now() - startedAt) / 1000)} s; restarting the worker`,
          );
          worker = await launch();
          sampler = new RssSampler(worker.started.child, 200);
          watch(worker);
        }
        nextKillAt = Date.now() + 4_000 + Math.random() * 6_000;
      }
      const p = await progress(worker.api).catch(() => null);
      if (p === null) {
        await sleep(200); // restoring its job (NotReady)
        continue;
      }
      if (p.canCommit) ready = Date.now();
      else if (Date.now() > deadline) throw new Error(`no canCommit in ${timeoutMs} ms`);
      else {
        if (Date.now() - shown > 5_000) {
          shown = Date.now();
          const copied = (p as unknown as { namespaces?: { copied?: number } }).namespaces?.copied;
          const rss = memoryOf(worker.started.child);
          const heap = await heapOf(worker.api);
          options.log(
            `  ${Math.round((Date.now() - startedAt) / 1000)} s: ${copied ?? '?'} copied; worker RSS ${Math.round(rss?.rssMB ?? 0)} MB (peak ${Math.round(rss?.hwmMB ?? 0)})${heap ? `, V8 heap ${heap.usedMB} MB used of ${heap.totalMB}` : ''}`,
          );
        }
        await sleep(200);
      }
    }
    const syncCpuMicros = syncCpu(n);
    const countersAfter = await Promise.all([opcounters(src), opcounters(dst)]);
    const perNamespace = (side: 0 | 1): Record<string, number> =>
      Object.fromEntries(
        Object.entries(countersAfter[side]).map(([op, count]) => [
          op,
          round((count - (countersBefore[side][op] ?? 0)) / n),
        ]),
      );
    const startToCanCommitSeconds = (ready - startedAt) / 1000;
    // Where start → canCommit went: the worker's log messages as they first appeared.
    options.log(`  worker log, start → canCommit: ${logTimeline(worker, startedAt, ready)}`);
    const holdStart = { cpu: cpuSecondsOf(worker.started.child), at: Date.now() };
    while (Date.now() - holdStart.at < HOLD_MS) {
      await progress(worker.api);
      await sleep(1_000);
    }
    const idleCpuPercent =
      (100 * (cpuSecondsOf(worker.started.child) - holdStart.cpu)) /
      ((Date.now() - holdStart.at) / 1000);
    const peakRssMBNow = () =>
      Math.max(peakRssMBBeforeKills, memoryOf(worker.started.child)?.hwmMB ?? 0);
    // Taking a snapshot costs the worker memory of its own: the peak is read before it.
    const peakRssMBBeforeSnapshot = options.heapSnapshotDir ? peakRssMBNow() : null;
    if (options.heapSnapshotDir) {
      options.log(
        `  heap snapshot: ${await heapSnapshot(worker.started.child, worker.api, options.heapSnapshotDir)}`,
      );
      // The snapshot stopped the worker for seconds: its change stream lags until it catches up.
      while (!(await progress(worker.api)).canCommit) {
        if (Date.now() > deadline) throw new Error(`no canCommit after the heap snapshot`);
        await sleep(200);
      }
    }
    const commitAt = Date.now();
    await post(worker.api, 'commit', {});
    let last: Document = {};
    for (;;) {
      last = (await progress(worker.api)) as unknown as Document;
      if (last.canWrite === true) break;
      if (Date.now() > deadline) throw new Error(`commit not done: ${JSON.stringify(last)}`);
      await sleep(50);
    }
    const commitSeconds = (Date.now() - commitAt) / 1000;
    options.log(
      `  commit steps (ms): ${worker
        .commitSteps()
        .map((s) => `${s.step} ${s.ms}`)
        .join(' | ')}`,
    );
    sampler.stop();
    const peakRssMB = peakRssMBBeforeSnapshot ?? peakRssMBNow();
    stopping = true;
    await worker.started.stop();
    // Every run ends with the check a user would make: both clusters byte for byte.
    options.log('  comparing both clusters byte for byte...');
    const report = await compareClusters(src, dst);
    const comparison = {
      documentsCompared: report.documents,
      differences: report.differences.length,
    };
    if (report.differences.length > 0)
      options.log(`  DIFFERENCES: ${JSON.stringify(report.differences.slice(0, 5))}`);
    const crashLoop: NamespacesResult['crashLoop'] = options.kills
      ? { kills: killed, ...comparison }
      : undefined;
    const syncedPerSec = n / startToCanCommitSeconds;
    const limits =
      killed === 0
        ? namespacesLimits({
            rawCreatePerSec,
            rawCreateCpuMicros,
            rawReadCpuMicros,
            rawReadPerSec: n / rawReadSeconds,
            syncCpuMicros,
          })
        : undefined;
    const result: NamespacesResult = {
      namespaces: n,
      verification: options.verification !== false,
      perDatabase,
      rawCreatePerSec: round(rawCreatePerSec),
      startToCanCommitSeconds: round(startToCanCommitSeconds),
      syncedPerSec: round(syncedPerSec),
      createRatio: round(syncedPerSec / rawCreatePerSec),
      idleCpuPercent: round(idleCpuPercent),
      commitSeconds: round(commitSeconds),
      reportedCutoverSeconds:
        (last.commit as { cutoverSeconds?: number } | undefined)?.cutoverSeconds ?? null,
      finalPass: (last.verification as { finalPass?: Document } | undefined)?.finalPass ?? null,
      peakRssMB: round(peakRssMB),
      workerHeapMB: options.workerHeapMB ?? null,
      rssBytesPerNamespaceOver250: Math.max(0, Math.round(((peakRssMB - 250) * 1024 * 1024) / n)),
      ...(killed === 0
        ? { opsPerNamespace: { source: perNamespace(0), destination: perNamespace(1) } }
        : {}),
      ...(limits ? { limits } : {}),
      comparison,
      ...(crashLoop ? { crashLoop } : {}),
    };
    return result;
  } finally {
    await Promise.all([src.close(), dst.close()]);
    await Promise.all([source.stop(), destination.stop()]);
  }
}

/** The worker's V8 heap as its `/metrics` reports it (prom-client's default metrics), MB. */
async function heapOf(api: string): Promise<{ usedMB: number; totalMB: number } | null> {
  try {
    const text = await (await fetch(api.replace(/\/api\/v1$/, '/metrics'))).text();
    const metric = (name: string): number =>
      Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / 1024 / 1024;
    const usedMB = Math.round(metric('nodejs_heap_size_used_bytes'));
    const totalMB = Math.round(metric('nodejs_heap_size_total_bytes'));
    return Number.isFinite(usedMB) && Number.isFinite(totalMB) ? { usedMB, totalMB } : null;
  } catch {
    return null;
  }
}

/**
 * Signals the worker (started with `--heapsnapshot-signal=SIGUSR2`) and waits for its snapshot:
 * V8 writes it on the main thread, so the API answering again after the file appeared means it
 * is complete. Returns the file's path.
 */
async function heapSnapshot(child: ChildProcess, api: string, dir: string): Promise<string> {
  const before = new Set(existsSync(dir) ? readdirSync(dir) : []);
  child.kill('SIGUSR2');
  const deadline = Date.now() + 600_000;
  for (;;) {
    await sleep(500);
    const written = (existsSync(dir) ? readdirSync(dir) : []).find(
      (f) => f.endsWith('.heapsnapshot') && !before.has(f),
    );
    if (written && (await progress(api).catch(() => null)) !== null) return join(dir, written);
    if (Date.now() > deadline) throw new Error('no heap snapshot in 600 s');
  }
}

function namespacesLimits(m: {
  rawCreatePerSec: number;
  rawCreateCpuMicros: CpuMark;
  rawReadCpuMicros: CpuMark;
  rawReadPerSec: number;
  syncCpuMicros: CpuMark;
}): NamespacesLimits {
  const cores = cpus().length;
  const toolFreeCost: CpuMark = {
    ...partOf(m.rawCreateCpuMicros, 'destination'),
    ...partOf(m.rawReadCpuMicros, 'source'),
  };
  // The bench's client in both raw measurements, as one tool's process.
  const client: CpuMark = {
    tool: (m.rawCreateCpuMicros.bench ?? 0) + (m.rawReadCpuMicros.bench ?? 0),
    ['tool:main']:
      (m.rawCreateCpuMicros['bench:main'] ?? 0) + (m.rawReadCpuMicros['bench:main'] ?? 0),
  };
  const ceiling = (cost: CpuMark) => {
    const perSec = rateCeiling(cost, Object.keys(cost), cores);
    return {
      perSec,
      ratio: perSec === null ? null : Math.round((perSec / m.rawCreatePerSec) * 100) / 100,
    };
  };
  return {
    cores,
    rawCreateCpuMicros: m.rawCreateCpuMicros,
    rawReadCpuMicros: m.rawReadCpuMicros,
    rawReadPerSec: round(m.rawReadPerSec),
    syncCpuMicros: m.syncCpuMicros,
    toolFree: ceiling(toolFreeCost),
    driverFloor: ceiling({ ...toolFreeCost, ...client }),
    workerBareEmulators: ceiling({ ...toolFreeCost, ...partOf(m.syncCpuMicros, 'worker') }),
    asRun: ceiling(m.syncCpuMicros),
  };
}

function renderLimits(l: NamespacesLimits, syncedPerSec: number): string[] {
  const line = (c: { perSec: number | null; ratio: number | null }) =>
    c.perSec === null ? '?' : `${c.perSec}/s (ratio ≤ ${c.ratio})`;
  return [
    `  CPU µs per namespace      sync: ${describeCpu(l.syncCpuMicros)}`,
    `                            raw create: ${describeCpu(l.rawCreateCpuMicros)}; raw read (64 per aggregate, ${l.rawReadPerSec}/s): ${describeCpu(l.rawReadCpuMicros)}`,
    `  ceilings on ${l.cores} cores      tool free ${line(l.toolFree)}; driver floor ${line(l.driverFloor)}; worker on bare emulators ${line(l.workerBareEmulators)}; as run ${line(l.asRun)} against ${syncedPerSec}/s achieved`,
  ];
}

export function renderNamespaces(r: NamespacesResult): string[] {
  return [
    `(k) ${r.namespaces} namespaces (2 documents each, every third indexed, ${r.perDatabase} per database), replica set → replica set${r.verification ? '' : ', verification off'}:`,
    `  start → canCommit         ${r.startToCanCommitSeconds} s (${r.syncedPerSec} namespaces/s; the destination creates ${r.rawCreatePerSec}/s directly: ratio ${r.createRatio}, target ≥ 0.5)`,
    ...(r.limits ? renderLimits(r.limits, r.syncedPerSec) : []),
    `  holding at canCommit      worker CPU ${r.idleCpuPercent} % of a core (${HOLD_MS / 1000} s, no writes, progress asked once a second)`,
    `  commit → COMMITTED        ${r.commitSeconds} s (worker: cutover ${r.reportedCutoverSeconds ?? '?'} s; final pass ${JSON.stringify(r.finalPass)}; target ≤ 3 s)`,
    ...(r.opsPerNamespace
      ? [
          `  operations per namespace  source ${describeOps(r.opsPerNamespace.source)}; destination ${describeOps(r.opsPerNamespace.destination)} (start → canCommit, serverStatus metrics.commands)`,
        ]
      : []),
    `  worker peak RSS           ${r.peakRssMB} MB (${r.rssBytesPerNamespaceOver250} bytes per namespace over 250 MB)${r.workerHeapMB ? `; V8 heap limit ${r.workerHeapMB} MiB (--worker-heap-mb)` : ''}`,
    `  after commit              ${r.comparison.differences === 0 ? 'byte-equal' : `${r.comparison.differences} DIFFERENCES`} (${r.comparison.documentsCompared} documents compared, with every namespace's options and indexes)`,
    ...(r.crashLoop
      ? [
          `  crash loop                ${r.crashLoop.kills} SIGKILLs during the copy, restarted each time`,
        ]
      : []),
  ];
}

const round = (v: number): number => Math.round(v * 1000) / 1000;

/**
 * A cluster's commands run so far, by name (`serverStatus().metrics.commands.<name>.total`), or
 * its `opcounters` (query, insert, ..., command) where the server keeps no per-command counts.
 */
async function opcounters(client: MongoClient): Promise<Record<string, number>> {
  const status = await client.db('admin').command({ serverStatus: 1 });
  const commands = (status.metrics as Document | undefined)?.commands as Document | undefined;
  if (commands && Object.keys(commands).length > 0)
    return Object.fromEntries(
      Object.entries(commands)
        .filter(([, c]) => c !== null && typeof c === 'object' && 'total' in c)
        .map(([name, c]) => [name, Number((c as Document).total)]),
    );
  const counters = (status.opcounters ?? {}) as Record<string, unknown>;
  return Object.fromEntries(Object.entries(counters).map(([op, v]) => [op, Number(v)]));
}

/** `find 1.02, listIndexes 1, ...`: the counts of 0.01 and more, largest first. */
function describeOps(ops: Record<string, number>): string {
  const parts = Object.entries(ops)
    .filter(([, v]) => v >= 0.005)
    .sort((a, b) => b[1] - a[1])
    .map(([op, v]) => `${op} ${Math.round(v * 100) / 100}`);
  return parts.length > 0 ? parts.join(', ') : 'none';
}
