/**
 * Throughput benchmark (issue 5): the worker's copy and change application against the
 * physical limit of the same emulated clusters, measured side by side in one run.
 *
 *   npm run bench                 full run (200k × ~1 KB documents over 8 collections)
 *   npm run bench -- --quick      ~2-minute smoke run (CI runs it without asserting speed)
 *   npm run bench -- --cpu-prof   also CPU-profile the worker and both emulators
 *   npm run bench -- --sharded    4-shard source: one worker via the routers vs 4 per-shard workers
 *   npm run bench -- --cutover    only the cutover runs (j)
 *   npm run bench -- --namespaces 100000   only (k): many small collections (the full run
 *                                          includes (k) at 2,000; --skip-namespaces leaves it out)
 *
 * Progress and a readable table go to stderr; the last line of stdout is one JSON object.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { MongoClient } from 'mongodb';
import { measureChangeApplication, removeLoadDocuments, type ChangeResult } from './change-load';
import {
  applyMix,
  measureStreamRead,
  planMix,
  type MixRate,
  type StreamReadRate,
} from './change-mix';
import { insertRange, type DatasetSpec } from './dataset';
import { BenchUsageError, parseBenchArgs, USAGE, type BenchOptions } from './options';
import { memoryOf, RssSampler, sleep, startEmulator, stopAll } from './processes';
import { runPeer, type PeerResult } from './peer';
import {
  DESTINATION_SHARDS,
  runShardedScale,
  SHARDED_TARGETS,
  SOURCE_SHARDS,
  type ShardedResult,
  type ShardedRun,
} from './sharded';
import { summariseProfiles } from './profile-summary';
import { physicalLimits, type PhysicalLimits } from './limits';
import { cpuSince, describeCpu, type CpuMark, type CpuParts } from './cpu-budget';
import { CUTOVER_TARGETS, runCutoverPhase, type CutoverResult } from './cutover';
import { measureNamespaces, renderNamespaces, type NamespacesResult } from './namespaces';
import {
  measureBareCopy,
  measureScan,
  measureWrite,
  writeRangeRaw,
  type Rate,
  type BareCopyResult,
  type ScanResult,
  type WriteResult,
} from './raw-rates';
import { copyFinished, post, progress, runWorkerCopy, type CopyRun } from './worker-copy';
import { renderCutover, renderTable } from './report';

/** The targets the table checks each figure against (issue 24's, for the copy and change ones). */
export const TARGETS = {
  copyRatio: 0.9,
  changeRatio: 0.6,
  scaling4x: 4.4,
  scaling4xVsRaw: 1.1,
  peakRssMB4x: 250,
  verifyRatio: 0.5,
  verifyRssDeltaMB: 50,
  peerCopyRatio: 3,
  peerChangeRatio: 2,
};
/** Operations per collection in one bulk write of the (g)/(h) mix (8 collections: 2,000 a tick). */
const MIX_BATCH_OPS = 250;
const DATABASE = 'bench';
const SCRATCH = 'bench_raw_write';
const BARE_COPY_SCRATCH = 'bench_bare_copy';

const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

export interface BenchResult {
  copyRatio: number | null;
  /** Sustained change rate ÷ min(g, h): the honest limit for the same mix. */
  changeRatio: number | null;
  /** Sustained change rate ÷ the destination's raw insert rate (b), round 1's figure. */
  changeRatioVsInsert: number | null;
  scaling4x: number | null;
  /** The destination's raw write (b) at the scaling run's size: its time ÷ its time at 1×. */
  rawWriteGrowth4x: number | null;
  /** scaling4x ÷ rawWriteGrowth4x: the worker's growth beyond the destination's own. */
  scaling4xVsRaw: number | null;
  peakRssMB4x: number | null;
  scale: number;
  quick: boolean;
  /** The embedded verifier ran in the worker runs (c)–(f). */
  embeddedVerifier: boolean;
  lagLimitSeconds: number;
  dataset: DatasetSpec & { bytes: number };
  scan: Omit<ScanResult, 'attempts'> & { attempts: ScanResult['attempts'] };
  write: WriteResult;
  /** (a+b) the raw read and raw write the worker's copy uses, with no engine in between. */
  bareCopy: BareCopyResult;
  /**
   * The honest limit of change application for the load's mix: (g) the destination applying
   * it directly as unordered bulk writes, (h) the source's change-stream read of it; `opsPerSec`
   * is the lower of the two.
   */
  changeLimit:
    | {
        /** `cpuMicrosPerOp`: the destination emulator's and the bench's CPU per operation. */
        directApply: MixRate & { cpuMicrosPerOp: CpuMark };
        /** `cpuMicrosPerEvent`: the source's (taking the writes and serving the stream). */
        streamRead: StreamReadRate & { cpuMicrosPerEvent: CpuMark };
        opsPerSec: number;
      }
    | { skipped: string };
  copy1x: Rate & { peakRssMB: number; cpuMicrosPerDoc: CpuMark };
  change: (ChangeResult & { peakRssMB: number }) | { skipped: string };
  /** (d') the same load written in transactions (one per 100 ms tick, every collection). */
  changeTransactional: ChangeResult | { skipped: string };
  /** (v) the embedded verifier's final pass at commit, against the 1× copy. */
  verification:
    | { seconds: number; ratioToCopy: number; peakRssMB: number; rssDeltaMB: number }
    | { skipped: string };
  copy4x: (Rate & { peakRssMB: number; documentsTotal: number }) | { skipped: string };
  /** (i) mongochangestream on the same clusters and dataset. */
  peer: PeerResult | { skipped: string };
  /** Our copy rate ÷ the peer's. */
  peerCopyRatio: number | null;
  /** Our sustained change rate ÷ the peer's. */
  peerChangeRatio: number | null;
  time1xSeconds: number;
  time4xSeconds: number | null;
  peakRssMB1x: number;
  /** (j) the cutover with an application writing every 20 ms, verification on. */
  cutover: CutoverResult | { skipped: string };
  /**
   * (k) a sync of many small collections (DEFAULT_NAMESPACES; `--namespaces N` runs it alone
   * at any count): start → canCommit against the destination's own create rate, commit →
   * COMMITTED, the worker's peak RSS.
   */
  namespaces: NamespacesResult | { skipped: string };
  /** First refused application write → first progress with canWrite: true, at 1× (s). */
  cutoverSeconds: number | null;
  /** The same at the scaling run's size ÷ at 1×. */
  cutoverGrowth4x: number | null;
  targets: typeof TARGETS & { cutover: typeof CUTOVER_TARGETS };
  machine: { cpus: number; loadAvgStart: number[]; loadAvgEnd: number[] };
  profileDir: string | null;
  workerErrors: string[];
  /** Where this machine's CPU caps each ratio: see `physicalLimits`. */
  limits: PhysicalLimits;
}

async function main(options: BenchOptions): Promise<BenchResult> {
  const loadAvgStart = loadavg();
  const profileDir = options.profileDir
    ? resolve(options.profileDir, new Date().toISOString().replace(/[:.]/g, '-'))
    : null;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const spec: DatasetSpec = {
    database: DATABASE,
    collections: options.collections,
    documents: options.documents,
    documentBytes: options.documentBytes,
  };
  const workerErrors: string[] = [];

  log(
    `bench: ${spec.documents} documents of ~${spec.documentBytes} B over ${spec.collections} collections${options.quick ? ' (quick)' : ''}; ${cpus().length} CPUs, load ${loadAvgStart.map((l) => l.toFixed(1)).join(' ')}`,
  );
  const source = await startEmulator('bench-source', profileDir);
  let destination = await startEmulator('bench-destination', profileDir);
  const sourceClient = await MongoClient.connect(source.firstLine.uri);
  let destinationClient = await MongoClient.connect(destination.firstLine.uri);
  try {
    log('loading the dataset into the source…');
    const loaded = await insertRange(sourceClient, DATABASE, spec, 0, spec.documents, {
      batchSize: 1_000,
      concurrency: 4,
      exactSizes: true,
    });
    const dataset = { ...spec, bytes: loaded.bytes };
    log(
      `  ${loaded.documents} documents, ${(loaded.bytes / 1e6).toFixed(1)} MB in ${loaded.seconds.toFixed(1)} s`,
    );

    log('(b) destination raw write (BSON sent as is, unordered)…');
    const write = await measureWrite(
      destinationClient,
      SCRATCH,
      spec,
      loaded.bytes,
      {
        concurrencies: options.quick ? [2, 4] : [1, 2, 4, 8],
        batchSizes: options.quick ? [1_000] : [1_000, 5_000],
        probeDocuments: options.quick ? 5_000 : 20_000,
      },
      !options.skipChanges,
      { destination: destination.child },
    );
    log(
      `  ${Math.round(write.docsPerSec)} docs/s, ${write.mbPerSec.toFixed(1)} MB/s (concurrency ${write.concurrency}, batch ${write.batchSize})`,
    );
    const changeLimit = options.skipChanges
      ? { skipped: '--skip-changes' }
      : await limitPhase(options, spec, sourceClient, destinationClient, write.concurrency, {
          source: source.child,
          destination: destination.child,
        });

    // The scan is measured after (h), on the source as the copies below find it: (h) wrote and
    // removed the mix there, and the emulator's per-document cost grows with what it has held
    // (a full run measured (c)'s source at 56 µs per document against 50 in a scan before (h)).
    log('(a) source raw scan…');
    const scan = await measureScan(sourceClient, spec, options.quick ? [1, 4] : [1, 2, 4], {
      source: source.child,
    });
    log(
      `  ${Math.round(scan.docsPerSec)} docs/s, ${scan.mbPerSec.toFixed(1)} MB/s (concurrency ${scan.concurrency})`,
    );

    log('(a+b) bare copy: raw read and raw write as the worker does them, no engine…');
    const bareCopy = await measureBareCopy(
      sourceClient,
      destinationClient,
      BARE_COPY_SCRATCH,
      spec,
      options.quick ? 20_000 : 100_000,
      { source: source.child, destination: destination.child },
    );
    log(
      `  ${Math.round(bareCopy.docsPerSec)} docs/s (${bareCopy.documents} documents); CPU µs per document: ${describeCpu(bareCopy.cpuMicrosPerDoc)}`,
    );

    log('(c) worker copy at 1×…');
    // On a fresh destination, as the peer (i) and the scaled copy (f) get one: the emulator that
    // took (b) and (g) carries their garbage (its own heap), which cost the copy's writes up to
    // twice the raw write's CPU per document there.
    await destinationClient.close();
    await destination.stop();
    destination = await startEmulator('bench-destination-copy', profileDir);
    destinationClient = await MongoClient.connect(destination.firstLine.uri);
    const copy1 = await runWorkerCopy(source.firstLine.uri, destination.firstLine.uri, loaded, {
      profileDir,
      tag: '1x',
      timeoutMs: 30 * 60_000,
      onTick: (p) => log(`  ${describe(p)}`),
      verification: options.verification,
      cpuParts: { source: source.child, destination: destination.child },
    });
    log(
      `  ${Math.round(copy1.docsPerSec)} docs/s, ${copy1.mbPerSec.toFixed(1)} MB/s in ${copy1.seconds.toFixed(1)} s, peak RSS ${copy1.peakRssMB.toFixed(0)} MB`,
    );
    log(`  CPU µs per document: ${describeCpu(copy1.cpuMicrosPerDoc)}`);
    log(`  worker log, start → copy done: ${copy1.timeline}`);

    let change: BenchResult['change'];
    if (options.skipChanges) change = { skipped: '--skip-changes' };
    else {
      const base = 'skipped' in changeLimit ? write.docsPerSec : changeLimit.opsPerSec;
      change = await changePhase(
        options,
        spec,
        sourceClient,
        destinationClient,
        copy1,
        base,
        source.firstLine.uri,
        { source: source.child, destination: destination.child },
      );
    }
    let changeTransactional: BenchResult['changeTransactional'] = {
      skipped: options.skipChanges ? '--skip-changes' : '--skip-transactions',
    };
    if (!options.skipChanges && !options.skipTransactions) {
      const base = 'skipped' in changeLimit ? write.docsPerSec : changeLimit.opsPerSec;
      log("(d') the same change load, each 100 ms tick written as one transaction…");
      changeTransactional = await measureChangeApplication(
        sourceClient,
        destinationClient,
        copy1.worker.api,
        spec,
        {
          ...changeOptions(options, base, false, source.firstLine.uri, {
            source: source.child,
            destination: destination.child,
            worker: copy1.worker.started.child,
          }),
          transactional: true,
        },
      ).catch((error: unknown) => ({
        skipped: `failed: ${error instanceof Error ? error.message : String(error)}`,
      }));
    }
    const peakRssMB1x = memoryOf(copy1.worker.started.child)?.hwmMB ?? copy1.peakRssMB;
    const verification = await verificationPhase(copy1, options);
    workerErrors.push(...copy1.worker.errors);
    await copy1.worker.started.stop();

    let peer: BenchResult['peer'] = { skipped: '--skip-peer' };
    if (!options.skipPeer) {
      log('(i) the peer, mongochangestream, on the same clusters and dataset…');
      if (!('skipped' in change)) await removeLoadDocuments(sourceClient, spec);
      await destinationClient.close();
      await destination.stop();
      destination = await startEmulator('bench-destination-peer', profileDir);
      destinationClient = await MongoClient.connect(destination.firstLine.uri);
      const base = 'skipped' in changeLimit ? write.docsPerSec : changeLimit.opsPerSec;
      peer = await runPeer(
        source.firstLine.uri,
        sourceClient,
        destination.firstLine.uri,
        destinationClient,
        spec,
        loaded,
        {
          profileDir,
          timeoutMs: options.quick ? 5 * 60_000 : 60 * 60_000,
          change: changeOptions(options, base, options.skipChanges, source.firstLine.uri, {
            source: source.child,
            destination: destination.child,
          }),
          log,
        },
      ).catch((error: unknown) => ({
        skipped: `peer failed: ${error instanceof Error ? error.message : String(error)}`,
      }));
      if ('skipped' in peer) log(`  skipped: ${peer.skipped}`);
    }

    let copy4: BenchResult['copy4x'] = { skipped: '--skip-scaling' };
    let rawWrite4: { seconds: number; growth: number } | null = null;
    if (!options.skipScaling) {
      const total = Math.round(spec.documents * options.scale);
      log(`(f) worker copy at ${options.scale}× (${total} documents)…`);
      if (!('skipped' in change) || !options.skipPeer)
        await removeLoadDocuments(sourceClient, spec);
      await destinationClient.close();
      await destination.stop();
      destination = await startEmulator('bench-destination-scaled', profileDir);
      destinationClient = await MongoClient.connect(destination.firstLine.uri);
      const more = await insertRange(sourceClient, DATABASE, spec, spec.documents, total, {
        batchSize: 1_000,
        concurrency: 4,
        exactSizes: true,
      });
      log(`  loaded ${more.documents} more documents in ${more.seconds.toFixed(1)} s`);
      const scaledBytes = loaded.bytes + more.bytes;
      // The destination's own growth, beside the worker's: the raw write (b)'s best setting at
      // this size, into a fresh emulator of its own (an emulator may slow as it fills).
      const rawDestination = await startEmulator('bench-destination-raw-scaled', profileDir);
      const rawClient = await MongoClient.connect(rawDestination.firstLine.uri);
      const raw = await writeRangeRaw(rawClient, SCRATCH, spec, 0, total, {
        batchSize: write.batchSize,
        concurrency: write.concurrency,
      });
      await rawClient.close();
      await rawDestination.stop();
      rawWrite4 = { seconds: round(raw.seconds), growth: round(raw.seconds / write.seconds) };
      log(
        `  raw write of ${total} documents on a fresh destination: ${raw.seconds.toFixed(1)} s (${rawWrite4.growth}× the 1× raw write's time)`,
      );
      const copy = await runWorkerCopy(
        source.firstLine.uri,
        destination.firstLine.uri,
        { documents: total, bytes: scaledBytes },
        {
          profileDir,
          tag: `${options.scale}x`,
          timeoutMs: 60 * 60_000,
          onTick: (p) => log(`  ${describe(p)}`),
          verification: options.verification,
          cpuParts: { source: source.child, destination: destination.child },
        },
      );
      const peakRssMB = memoryOf(copy.worker.started.child)?.hwmMB ?? copy.peakRssMB;
      workerErrors.push(...copy.worker.errors);
      await copy.worker.started.stop();
      copy4 = { ...withoutProcess(copy), peakRssMB: round(peakRssMB), documentsTotal: total };
      log(
        `  ${Math.round(copy.docsPerSec)} docs/s in ${copy.seconds.toFixed(1)} s, peak RSS ${peakRssMB.toFixed(0)} MB`,
      );
    }

    const cutover = options.skipCutover
      ? { skipped: '--skip-cutover' }
      : await cutoverPhase(spec, options, profileDir);

    const namespaces = options.skipNamespaces
      ? { skipped: '--skip-namespaces' }
      : await namespacesPhase(options.quick ? QUICK_NAMESPACES : DEFAULT_NAMESPACES, profileDir);

    const minRaw = Math.min(scan.docsPerSec, write.docsPerSec);
    const sustained = 'skipped' in change ? null : change.sustainedOpsPerSec;
    const time4 = 'skipped' in copy4 ? null : copy4.seconds;
    const limit = 'skipped' in changeLimit ? null : changeLimit.opsPerSec;
    const peerChange =
      'skipped' in peer || 'skipped' in peer.change ? null : peer.change.sustainedOpsPerSec;
    return {
      copyRatio: round(copy1.docsPerSec / minRaw),
      changeRatio: sustained === null || limit === null ? null : round(sustained / limit),
      changeRatioVsInsert: sustained === null ? null : round(sustained / write.docsPerSec),
      scaling4x: time4 === null ? null : round(time4 / copy1.seconds),
      rawWriteGrowth4x: rawWrite4?.growth ?? null,
      scaling4xVsRaw:
        time4 === null || rawWrite4 === null
          ? null
          : round(time4 / copy1.seconds / rawWrite4.growth),
      peakRssMB4x: 'skipped' in copy4 ? null : round(copy4.peakRssMB),
      scale: options.scale,
      quick: options.quick,
      embeddedVerifier: options.verification,
      lagLimitSeconds: options.lagLimitSeconds,
      dataset,
      scan,
      write,
      bareCopy,
      changeLimit,
      copy1x: { ...withoutProcess(copy1), peakRssMB: round(copy1.peakRssMB) },
      change,
      changeTransactional,
      verification,
      copy4x: copy4,
      peer,
      peerCopyRatio: 'skipped' in peer ? null : round(copy1.docsPerSec / peer.copy.docsPerSec),
      peerChangeRatio:
        sustained === null || peerChange === null || peerChange === 0
          ? null
          : round(sustained / peerChange),
      time1xSeconds: round(copy1.seconds),
      time4xSeconds: time4 === null ? null : round(time4),
      peakRssMB1x: round(peakRssMB1x),
      cutover,
      namespaces,
      cutoverSeconds: 'skipped' in cutover ? null : cutover.cutoverSeconds,
      cutoverGrowth4x: 'skipped' in cutover ? null : cutover.cutoverGrowth4x,
      targets: { ...TARGETS, cutover: CUTOVER_TARGETS },
      machine: { cpus: cpus().length, loadAvgStart, loadAvgEnd: loadavg() },
      profileDir,
      workerErrors,
      limits: physicalLimits({
        cores: cpus().length,
        scan,
        write,
        bareCopy,
        copy: copy1,
        peerCopyDocsPerSec: 'skipped' in peer ? null : peer.copy.docsPerSec,
        changeLimit: 'skipped' in changeLimit ? null : changeLimit,
        change: 'skipped' in change ? undefined : change,
        peerChange: 'skipped' in peer ? undefined : peer.change,
      }),
    };
  } finally {
    await Promise.all([sourceClient.close(), destinationClient.close()]);
    await stopAll();
  }
}

/** (j) on fresh authenticated clusters (see cutover.ts); a failure is reported, not thrown. */
async function cutoverPhase(
  spec: DatasetSpec,
  options: BenchOptions,
  profileDir: string | null,
): Promise<CutoverResult | { skipped: string }> {
  return runCutoverPhase(spec, {
    scale: options.scale,
    skipScaling: options.skipScaling,
    profileDir,
    timeoutMs: options.quick ? 5 * 60_000 : 60 * 60_000,
    log,
  }).catch((error: unknown) => {
    const skipped = `cutover failed: ${error instanceof Error ? error.message : String(error)}`;
    log(`  ${skipped}`);
    return { skipped };
  });
}

/** (k) in the full run, at a count that keeps it to a minute or so. */
const DEFAULT_NAMESPACES = 2_000;
const QUICK_NAMESPACES = 200;

/** (k) on fresh clusters (see namespaces.ts); a failure is reported, not thrown. */
async function namespacesPhase(
  n: number,
  profileDir: string | null,
): Promise<NamespacesResult | { skipped: string }> {
  log(`(k) ${n} small collections, synced and committed…`);
  return measureNamespaces(n, { profileDir, log }).catch((error: unknown) => {
    const skipped = `namespaces failed: ${error instanceof Error ? error.message : String(error)}`;
    log(`  ${skipped}`);
    return { skipped };
  });
}

/** `--cutover`: only (j). */
async function mainCutover(options: BenchOptions): Promise<CutoverOnlyResult> {
  const loadAvgStart = loadavg();
  const spec: DatasetSpec = {
    database: DATABASE,
    collections: options.collections,
    documents: options.documents,
    documentBytes: options.documentBytes,
  };
  log(
    `bench --cutover: ${spec.documents} documents of ~${spec.documentBytes} B over ${spec.collections} collections (and ${options.scale}×)${options.quick ? ' (quick)' : ''}; ${cpus().length} CPUs, load ${loadAvgStart.map((l) => l.toFixed(1)).join(' ')}`,
  );
  try {
    const cutover = await cutoverPhase(spec, options, null);
    return {
      cutover,
      cutoverSeconds: 'skipped' in cutover ? null : cutover.cutoverSeconds,
      cutoverGrowth4x: 'skipped' in cutover ? null : cutover.cutoverGrowth4x,
      dataset: spec,
      scale: options.scale,
      quick: options.quick,
      targets: CUTOVER_TARGETS,
      machine: { cpus: cpus().length, loadAvgStart, loadAvgEnd: loadavg() },
      profileDir: null,
    };
  } finally {
    await stopAll();
  }
}

async function mainNamespaces(options: BenchOptions): Promise<NamespacesOnlyResult> {
  const loadAvgStart = loadavg();
  const n = options.namespaces!;
  log(
    `bench --namespaces: ${n} collections; ${cpus().length} CPUs, load ${loadAvgStart.map((l) => l.toFixed(1)).join(' ')}`,
  );
  const profileDir = options.profileDir
    ? resolve(options.profileDir, new Date().toISOString().replace(/[:.]/g, '-'))
    : null;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  try {
    const namespaces = await measureNamespaces(n, {
      profileDir,
      kills: options.kills,
      workerHeapMB: options.workerHeapMB,
      heapSnapshotDir: options.heapSnapshotDir ? resolve(options.heapSnapshotDir) : null,
      verification: options.verification,
      ...(options.perDatabase !== null ? { perDatabase: options.perDatabase } : {}),
      log,
    });
    return {
      namespaces,
      machine: { cpus: cpus().length, loadAvgStart, loadAvgEnd: loadavg() },
      profileDir,
    };
  } finally {
    await stopAll();
  }
}

export interface NamespacesOnlyResult {
  namespaces: NamespacesResult;
  machine: { cpus: number; loadAvgStart: number[]; loadAvgEnd: number[] };
  profileDir: string | null;
}

export interface CutoverOnlyResult {
  cutover: CutoverResult | { skipped: string };
  cutoverSeconds: number | null;
  cutoverGrowth4x: number | null;
  dataset: DatasetSpec;
  scale: number;
  quick: boolean;
  targets: typeof CUTOVER_TARGETS;
  machine: { cpus: number; loadAvgStart: number[]; loadAvgEnd: number[] };
  profileDir: null;
}

/**
 * (v) Commit the 1× worker and time the embedded verifier's final pass (its log line carries
 * the duration): every document of every collection hashed on both sides. Compared with the
 * copy's time; the worker's resident memory during it against its level before.
 */
async function verificationPhase(
  copy: CopyRun,
  options: BenchOptions,
): Promise<BenchResult['verification']> {
  log("(v) commit: the verifier's final pass…");
  const api = copy.worker.api;
  const ready = Date.now() + (options.quick ? 60_000 : 300_000);
  while (!(await progress(api)).canCommit) {
    if (Date.now() > ready) return { skipped: 'the worker never reached canCommit' };
    await sleep(250);
  }
  const before = memoryOf(copy.worker.started.child)?.rssMB ?? 0;
  const sampler = new RssSampler(copy.worker.started.child, 100);
  await post(api, 'commit', {});
  const deadline = Date.now() + (options.quick ? 120_000 : 30 * 60_000);
  for (;;) {
    const p = await progress(api);
    if (p.state === 'COMMITTED') break;
    if (Date.now() > deadline) return { skipped: `commit not done (state ${p.state}, ${p.info})` };
    await sleep(250);
  }
  const peak = sampler.stop();
  const line = copy.worker.logLine('verification: final pass done');
  if (!line || typeof line.ms !== 'number') return { skipped: 'no verification log line' };
  const seconds = line.ms / 1000;
  log(`  final pass ${seconds.toFixed(1)} s (copy took ${copy.seconds.toFixed(1)} s)`);
  return {
    seconds: round(seconds),
    ratioToCopy: round(seconds / copy.seconds),
    peakRssMB: round(peak),
    rssDeltaMB: round(Math.max(0, peak - before)),
  };
}

async function changePhase(
  options: BenchOptions,
  spec: DatasetSpec,
  source: MongoClient,
  destination: MongoClient,
  copy: CopyRun,
  /** The rate the load's steps are fractions of (the honest limit, else the raw insert rate). */
  base: number,
  sourceUri: string,
  cpuParts: CpuParts,
): Promise<BenchResult['change']> {
  log('(d) change application at rising rates…');
  const api = copy.worker.api;
  const deadline = Date.now() + (options.quick ? 15_000 : 60_000);
  for (;;) {
    const p = await progress(api);
    if (p.info === 'change event application' || (copyFinished(p) && p.lagTimeSeconds !== null))
      break;
    if (Date.now() > deadline) {
      const reason = `the worker never reached change event application (info: ${p.info})`;
      log(`  skipped: ${reason}`);
      return { skipped: reason };
    }
    await sleep(250);
  }
  // Start from a caught-up worker: its lag still counts from T0 right after the copy.
  const settle = Date.now() + (options.quick ? 10_000 : 60_000);
  for (;;) {
    const p = await progress(api);
    if (p.canCommit || (p.lagTimeSeconds !== null && p.lagTimeSeconds <= options.lagLimitSeconds))
      break;
    if (Date.now() > settle) {
      log(`  note: worker lag still ${p.lagTimeSeconds} s; starting the load anyway`);
      break;
    }
    await sleep(250);
  }
  const result = await measureChangeApplication(
    source,
    destination,
    api,
    spec,
    changeOptions(options, base, false, sourceUri, {
      ...cpuParts,
      worker: copy.worker.started.child,
    }),
  );
  return { ...result, peakRssMB: round(memoryOf(copy.worker.started.child)?.hwmMB ?? 0) };
}

function changeOptions(
  options: BenchOptions,
  base: number,
  skip: boolean,
  sourceUri: string,
  cpuParts: CpuParts,
) {
  return {
    cpuParts,
    loadWriters: options.loadWriters,
    sourceUri,
    rates: skip ? [] : options.rateFactors.map((f) => Math.max(20, Math.round(f * base))),
    windowSeconds: options.windowSeconds,
    drainSeconds: options.drainSeconds,
    lagLimitSeconds: options.lagLimitSeconds,
    log,
  };
}

/**
 * (g) and (h): the honest limit of change application for the load's mix. (g) applies a
 * planned mix to the destination's scratch copy of the dataset (left there by (b)) as
 * unordered bulk writes; (h) writes the same mix to the source and times a change stream
 * reading it back. The source is then cleaned of the mix's inserts (its updates only changed
 * values, never sizes or types), and the scratch database is dropped.
 */
async function limitPhase(
  options: BenchOptions,
  spec: DatasetSpec,
  source: MongoClient,
  destination: MongoClient,
  concurrency: number,
  parts: { source: ChildProcess; destination: ChildProcess },
): Promise<BenchResult['changeLimit']> {
  const total = options.quick ? 10_000 : Math.min(100_000, Math.max(10_000, spec.documents / 2));
  const batches = planMix(spec, total, MIX_BATCH_OPS, 1);
  log(`(g) destination: the change mix (${total} ops) applied directly as unordered bulk writes…`);
  const applyCpu = cpuSince({ destination: parts.destination });
  const directApply = await applyMix(destination, SCRATCH, batches, concurrency);
  const directApplyCpu = applyCpu(directApply.ops);
  await destination.db(SCRATCH).dropDatabase();
  log(`  ${Math.round(directApply.opsPerSec)} ops/s`);
  log('(h) source: a change stream reading the same mix…');
  const readCpu = cpuSince({ source: parts.source });
  const streamRead = await measureStreamRead(source, DATABASE, batches, concurrency, 120_000);
  // the source both takes the mix's writes and serves the stream here, as during a sync
  const streamReadCpu = readCpu(streamRead.events);
  await removeLoadDocuments(source, spec);
  log(
    `  ${Math.round(streamRead.eventsPerSec)} events/s (${streamRead.events} events; the source wrote the mix at ${Math.round(streamRead.sourceWrite.opsPerSec)} ops/s)`,
  );
  return {
    directApply: {
      ...directApply,
      seconds: round(directApply.seconds),
      opsPerSec: round(directApply.opsPerSec),
      cpuMicrosPerOp: directApplyCpu,
    },
    streamRead: {
      ...streamRead,
      seconds: round(streamRead.seconds),
      eventsPerSec: round(streamRead.eventsPerSec),
      cpuMicrosPerEvent: streamReadCpu,
    },
    opsPerSec: round(Math.min(directApply.opsPerSec, streamRead.eventsPerSec)),
  };
}

export interface ShardedBenchResult extends ShardedResult {
  /** Same as throughputRatio4: the headline of a `--sharded` run. */
  shardedScaling: number;
  /** os.cpus().length, also in `machine`. */
  cores: number;
  dataset: DatasetSpec;
  quick: boolean;
  targets: typeof SHARDED_TARGETS;
  machine: { cpus: number; loadAvgStart: number[]; loadAvgEnd: number[] };
  profileDir: string | null;
}

/**
 * `--sharded`: a 4-shard source into a 2-shard destination, synced by one worker through the
 * routers and by four per-shard workers (`--id`), side by side in one run.
 */
async function mainSharded(options: BenchOptions): Promise<ShardedBenchResult> {
  const loadAvgStart = loadavg();
  const profileDir = options.profileDir
    ? resolve(options.profileDir, new Date().toISOString().replace(/[:.]/g, '-'))
    : null;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const spec: DatasetSpec = {
    database: DATABASE,
    collections: options.collections,
    documents: options.documents,
    documentBytes: options.documentBytes,
  };
  log(
    `bench --sharded: ${spec.documents} documents of ~${spec.documentBytes} B over ${spec.collections} collection(s), hashed _id, ${SOURCE_SHARDS}-shard source → ${DESTINATION_SHARDS}-shard destination${options.quick ? ' (quick)' : ''}; ${cpus().length} CPU cores, load ${loadAvgStart.map((l) => l.toFixed(2)).join(' ')}`,
  );
  try {
    const result = await runShardedScale(spec, {
      profileDir,
      timeoutMs: options.quick ? 5 * 60_000 : 60 * 60_000,
      log,
      verification: options.verificationGiven && options.verification,
    });
    return {
      ...result,
      shardedScaling: result.throughputRatio4,
      cores: cpus().length,
      dataset: spec,
      quick: options.quick,
      targets: SHARDED_TARGETS,
      machine: { cpus: cpus().length, loadAvgStart, loadAvgEnd: loadavg() },
      profileDir,
    };
  } finally {
    await stopAll();
  }
}

function renderSharded(r: ShardedBenchResult): string[] {
  const t = r.targets;
  const run = (label: string, x: ShardedRun): string[] => [
    `${label.padEnd(48)}${Math.round(x.docsPerSec).toString().padStart(8)} docs/s  ${x.seconds.toFixed(1)} s to canCommit`,
    `      workers ${x.workerCpuSeconds.toFixed(1)} CPU-s, ${x.workerCpuMicrosPerDocument.toFixed(0)} CPU-µs/doc (all processes ${x.totalCpuMicrosPerDocument.toFixed(0)}); read amplification ${x.readAmplification.toFixed(3)} (${x.read.documents} ${x.read.method === 'serverStatus' ? 'returned by' : 'counted on'} the source shards ÷ ${x.documents} synced)`,
    ...x.processes.map(
      (p) =>
        `      ${p.name.padEnd(24)} ${p.cpuSeconds.toFixed(1).padStart(7)} CPU-s ${p.cpuMicrosPerDocument.toFixed(0).padStart(7)} µs/doc${p.peakRssMB !== undefined ? `  peak RSS ${p.peakRssMB.toFixed(0)} MB` : ''}`,
    ),
  ];
  const mark = (ok: boolean): string => (ok ? 'met' : 'NOT MET');
  const counted = r.readAmplificationMethod === 'counted';
  const amplification = (v: number): string =>
    counted
      ? `${v.toFixed(3)}  (COUNTED: serverStatus().metrics.document.returned missing; documents the shards hold, not documents returned — target not judged)`
      : `${v.toFixed(3)}  target ≤ ${t.readAmplificationMax}: ${mark(v <= t.readAmplificationMax)}`;
  const freeCores = r.cores - Math.max(r.machine.loadAvgStart[0]!, r.machine.loadAvgEnd[0]!);
  const throughputJudged =
    r.cores >= t.freeCoresForThroughput && freeCores >= t.freeCoresForThroughput;
  return [
    `Sharded scale — ${r.dataset.documents} docs × ~${r.dataset.documentBytes} B over ${r.dataset.collections} collection(s), ${r.sourceShards}-shard source → ${r.destinationShards}-shard destination${r.quick ? ', quick' : ''}`,
    `machine: ${r.cores} CPU cores, load average ${r.machine.loadAvgStart.map((l) => l.toFixed(2)).join('/')} → ${r.machine.loadAvgEnd.map((l) => l.toFixed(2)).join('/')} (~${Math.max(0, freeCores).toFixed(1)} cores free)`,
    '',
    ...run('(a) one worker, through the routers', r.oneWorker),
    ...run(
      `(b) ${r.perShardWorkers.workers} per-shard workers (--id), own shard each`,
      r.perShardWorkers,
    ),
    '',
    `${'read amplification, one worker'.padEnd(40)}${amplification(r.readAmplification1)}`,
    `${`read amplification, ${r.perShardWorkers.workers} workers`.padEnd(40)}${amplification(r.readAmplification4)}`,
    `${'worker CPU per document, 4 ÷ 1'.padEnd(40)}${r.cpuPerDocRatio4.toFixed(2)}  target ≤ ${t.cpuPerDocRatio4Max}: ${mark(r.cpuPerDocRatio4 <= t.cpuPerDocRatio4Max)}`,
    `${'throughput, 4 workers ÷ 1'.padEnd(40)}${r.throughputRatio4.toFixed(2)}  ${
      throughputJudged
        ? `target ≥ ${t.throughputRatio4Min}: ${mark(r.throughputRatio4 >= t.throughputRatio4Min)}`
        : `(target ≥ ${t.throughputRatio4Min} with ≥ ${t.freeCoresForThroughput} free cores; not judged on ${r.cores} cores — the workers and both emulators share them)`
    }`,
  ];
}

function describe(p: Awaited<ReturnType<typeof progress>>): string {
  const c = p.collectionCopy;
  const pct =
    c && c.estimatedTotalBytes > 1 ? (100 * c.estimatedCopiedBytes) / c.estimatedTotalBytes : 0;
  return `${p.state} ${p.info ?? ''} ${pct.toFixed(0)}%`;
}

function withoutProcess(run: CopyRun): Rate & { cpuMicrosPerDoc: CpuMark } {
  const { documents, bytes, seconds, docsPerSec, mbPerSec, cpuMicrosPerDoc } = run;
  return {
    cpuMicrosPerDoc,
    documents,
    bytes,
    seconds: round(seconds),
    docsPerSec: round(docsPerSec),
    mbPerSec: round(mbPerSec),
  };
}

const round = (v: number): number => Math.round(v * 1000) / 1000;

if (require.main === module) {
  let options: BenchOptions;
  try {
    options = parseBenchArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof BenchUsageError)) throw error;
    process.stderr.write(`${error.message ? `bench: ${error.message}\n` : ''}${USAGE}\n`);
    process.exit(error.message ? 2 : 0);
  }
  const interrupt = (): void => {
    void stopAll().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const run: Promise<BenchResult | ShardedBenchResult | CutoverOnlyResult | NamespacesOnlyResult> =
    options.namespaces !== null
      ? mainNamespaces(options)
      : options.sharded
        ? mainSharded(options)
        : options.cutoverOnly
          ? mainCutover(options)
          : main(options);
  run.then(
    (result) => {
      log('');
      const lines =
        'perShardWorkers' in result
          ? renderSharded(result)
          : 'copy1x' in result
            ? renderTable(result)
            : 'cutover' in result
              ? renderCutover(result.cutover, result.targets)
              : renderNamespaces(result.namespaces);
      for (const line of lines) log(line);
      if (result.profileDir) {
        log('');
        log(`CPU profiles in ${result.profileDir}:`);
        for (const line of summariseProfiles(result.profileDir)) log(line);
      }
      process.stdout.write(`${JSON.stringify(result)}\n`);
    },
    (error: unknown) => {
      log(
        `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
      void stopAll().finally(() => process.exit(1));
    },
  );
}
