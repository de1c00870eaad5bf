import { fork, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { Long, type MongoClient } from 'mongodb';
import { LOAD_ID_BASE, MixPlanner } from './change-mix';
import type { WriterDone, WriterInit, WriterIssue } from './load-writer';
import { collectionName, type DatasetSpec } from './dataset';
import { cpuSince, type CpuMark, type CpuParts } from './cpu-budget';
import { sleep } from './processes';
import { progress } from './worker-copy';

export { LOAD_ID_BASE };
/** The lag probe's database (a peer under test must sync it too). */
export const PROBE_DB = 'bench_probe';
const TICK_MS = 100;
const PROBE_MS = 100;
const MAX_TICKS_IN_FLIGHT = 4;
const LOAD_WRITER = resolve(__dirname, 'load-writer.js');
/** `_id` range of each writer process's inserts (its load's base + k × this). */
const WRITER_ID_SPAN = 10_000_000_000;
/**
 * `_id` range of each load this process runs ((d), (d'), the peer's): a load leaves documents it
 * inserted and has not deleted yet, so the next load must not plan the same `_id`s (they were
 * duplicate keys, failing a quick bench whenever (d') reached (d)'s leftovers). The mix of (h)
 * plans from LOAD_ID_BASE itself, below every load's range.
 */
const LOAD_REGION_SPAN = 200_000_000_000;
let loadsStarted = 0;

export interface StepResult {
  targetOpsPerSec: number;
  achievedOpsPerSec: number;
  inserts: number;
  updates: number;
  deletes: number;
  probes: number;
  lagP50: number | null;
  lagP99: number | null;
  lagMax: number | null;
  /** Highest `lagTimeSeconds` the worker itself reported during the window. */
  workerLagMax: number | null;
  drained: boolean;
  /**
   * Seconds from the last probe seen until the worker said `canCommit` again (its embedded
   * verifier caught up with the step's writes; null: no worker API, or not within the drain
   * time). The step's CPU counts until then.
   */
  settleSeconds: number | null;
  /** The load generator (or the source) could not produce 90% of the target rate. */
  loadLimited: boolean;
  /** Lag p99 stayed within the limit for the achieved rate (which is the step's figure). */
  held: boolean;
  /**
   * CPU per change from the window's start until the last probe was seen: each accounted
   * process (`ChangeOptions.cpuParts`, the load writers) and the bench process (its load and
   * lag probe).
   */
  cpuMicrosPerOp: CpuMark;
  /**
   * Write and read commands the destination ran per 100 changes of the window (its
   * `metrics.commands`, the lag probe's reads included): how the tool under test batches.
   */
  destinationCommandsPer100: Record<string, number> | null;
}

/** Commands whose counts `destinationCommandsPer100` reports. */
const COUNTED_COMMANDS = ['insert', 'update', 'delete', 'find'] as const;

/** `; canCommit again after N s` (or that it did not come), for a worker's step. */
function settled(step: StepResult, api: string | null): string {
  if (api === null) return '';
  return step.settleSeconds === null
    ? '; no canCommit within the drain time'
    : `; canCommit again after ${step.settleSeconds} s`;
}

/** `destinationCommandsPer100` as one line's text: `insert 0.1, update 1.5, …`. */
export function formatCommands(commands: Record<string, number>): string {
  return Object.entries(commands)
    .map(([command, per100]) => `${command} ${per100}`)
    .join(', ');
}

async function commandCounts(client: MongoClient): Promise<Record<string, number> | null> {
  try {
    const status = await client.db('admin').command({ serverStatus: 1 });
    const commands = (status.metrics as { commands?: Record<string, { total?: unknown }> })
      ?.commands;
    if (!commands) return null;
    return Object.fromEntries(COUNTED_COMMANDS.map((c) => [c, Number(commands[c]?.total ?? 0)]));
  } catch {
    return null; // a server that does not report them (or refuses serverStatus)
  }
}

export interface ChangeResult {
  /** Highest achieved ops/s of a step whose lag p99 stayed ≤ the limit (null: none held). */
  sustainedOpsPerSec: number | null;
  /**
   * True when rising stopped because the load generator/source could not produce the target
   * while the worker kept up: the sustained figure is then a lower bound.
   */
  sourceLimited: boolean;
  steps: StepResult[];
}

export interface ChangeOptions {
  /** Each tick's writes as one multi-document transaction (the transactional mix). */
  transactional?: boolean;
  rates: number[];
  windowSeconds: number;
  drainSeconds: number;
  lagLimitSeconds: number;
  log: (line: string) => void;
  /**
   * Writer processes of the load (each its own connection and share of the mix; default 1:
   * the bench process writes it itself). Needs `sourceUri`; the transactional mix always
   * writes from the bench process (one transaction per tick over every collection).
   */
  loadWriters?: number;
  sourceUri?: string;
  /** Processes whose CPU each step is split over (emulators, the tool under load). */
  cpuParts?: CpuParts;
}

/**
 * (d) Change application: a load generator applies a mix of inserts (30%), updates (40%) and
 * deletes (30% — of documents it inserted itself) to the dataset's collections at rising rates,
 * in unordered bulk writes every 100 ms. Lag is measured end to end: every 100 ms a probe
 * document on the source gets the next sequence number, and a poller on the destination sees
 * when each number arrives; a step holds when lag p99 ≤ the limit (its figure is the rate the
 * load achieved; if that is < 90% of the target the load, not the worker, is the limit and rising
 * stops with a lower bound). Rising stops at the first step that does not hold, after one more step
 * halfway between it and the highest that held (if the first step fails, its rate is halved, at
 * most 3 times, so a sustained figure is still found). After each step of a worker the next waits
 * for its `canCommit` (changes applied and its verifier caught up), counted in the step's CPU.
 */
export async function measureChangeApplication(
  source: MongoClient,
  destination: MongoClient,
  /** The worker's API (its own lag is sampled); null for a peer without one. */
  api: string | null,
  spec: DatasetSpec,
  options: ChangeOptions,
): Promise<ChangeResult> {
  const writers =
    options.transactional !== true && options.sourceUri !== undefined
      ? Math.max(1, options.loadWriters ?? 1)
      : 1;
  const idBase = LOAD_ID_BASE + ++loadsStarted * LOAD_REGION_SPAN;
  const load =
    writers > 1
      ? await WriterPool.start(options.sourceUri!, spec, writers, idBase)
      : new LoadGenerator(source, spec, idBase, options.transactional === true);
  const probe = new LagProbe(source, destination);
  await probe.init();
  const steps: StepResult[] = [];
  let sourceLimited = false;
  try {
    // Rising rates; if even the first one fails, halve it (up to 3 times) so a figure exists.
    const queue = [...options.rates];
    let halvings = 0;
    let refined = false;
    while (queue.length > 0) {
      const target = queue.shift()!;
      const before = await commandCounts(destination);
      const step = await runStep(load, probe, api, target, options);
      const after = before && (await commandCounts(destination));
      const changes = step.inserts + step.updates + step.deletes;
      step.destinationCommandsPer100 =
        before && after && changes > 0
          ? Object.fromEntries(
              Object.keys(before).map((c) => [
                c,
                Math.round((10_000 * (after[c]! - before[c]!)) / changes) / 100,
              ]),
            )
          : null;
      steps.push(step);
      const commands = step.destinationCommandsPer100;
      options.log(
        `  change load ${Math.round(target)} ops/s → achieved ${Math.round(step.achievedOpsPerSec)}, lag p99 ${fmt(step.lagP99)} s, worker lag ≤ ${step.workerLagMax ?? '-'} s${step.held ? '' : '  (not held)'}${settled(step, api)}${
          commands ? `; destination commands per 100 changes: ${formatCommands(commands)}` : ''
        }`,
      );
      if (step.held && step.loadLimited) {
        sourceLimited = true; // the worker kept up with all the load could produce: a lower bound
        break;
      }
      if (step.held) continue;
      // The steps are coarse (4,000 → 6,000 ops/s): one more step halfway between the highest
      // that held and the first that did not narrows the figure to within a quarter of the gap.
      const best = steps.filter((s) => s.held).at(-1);
      if (best && !refined && target > best.targetOpsPerSec * 1.2) {
        refined = true;
        queue.length = 0;
        queue.push((best.targetOpsPerSec + target) / 2);
        continue;
      }
      if (steps.some((s) => s.held) || halvings >= 3 || target / 2 < 10) break;
      halvings += 1;
      queue.length = 0;
      queue.push(target / 2);
    }
  } finally {
    probe.close();
    load.close();
  }
  const held = steps.filter((s) => s.held).map((s) => s.achievedOpsPerSec);
  return {
    sustainedOpsPerSec: held.length ? Math.max(...held) : null,
    sourceLimited,
    steps,
  };
}

/** Seconds until the worker reports `canCommit`, or null after `limitSeconds`. */
async function untilCanCommit(api: string, limitSeconds: number): Promise<number | null> {
  const began = Date.now();
  for (;;) {
    const p = await progress(api).catch(() => null);
    if (p?.canCommit) return Math.round((Date.now() - began) / 100) / 10;
    if (Date.now() - began > limitSeconds * 1000) return null;
    await sleep(250);
  }
}

/** Deletes what the load inserted, so the source holds exactly the 1× dataset again. */
export async function removeLoadDocuments(source: MongoClient, spec: DatasetSpec): Promise<void> {
  const db = source.db(spec.database);
  for (let k = 0; k < spec.collections; k++) {
    await db
      .collection<{ _id: Long }>(collectionName(k))
      .deleteMany({ _id: { $gte: Long.fromNumber(LOAD_ID_BASE) } });
  }
  await source.db(PROBE_DB).dropDatabase();
}

/** Writes `count` operations of the mix and resolves when they are acknowledged. */
interface Load {
  readonly counts: { inserts: number; updates: number; deletes: number };
  /** Writer processes of the load, if it is not written by this process. */
  readonly processes: ChildProcess[];
  issue(count: number): Promise<void>;
  close(): void;
}

async function runStep(
  load: Load,
  probe: LagProbe,
  api: string | null,
  target: number,
  options: ChangeOptions,
): Promise<StepResult> {
  const before = { ...load.counts };
  const parts: CpuParts = { ...options.cpuParts };
  load.processes.forEach((child, k) => (parts[`writer${k + 1}`] = child));
  const cpu = cpuSince(parts);
  const firstProbe = probe.nextSeq;
  let workerLagMax: number | null = null;
  const watchWorker = async (): Promise<void> => {
    if (api === null) return;
    const p = await progress(api).catch(() => null);
    if (p?.lagTimeSeconds != null) workerLagMax = Math.max(workerLagMax ?? 0, p.lagTimeSeconds);
  };
  probe.start();
  const started = Date.now();
  const end = started + options.windowSeconds * 1000;
  let issued = 0;
  let inFlight = 0;
  const pending = new Set<Promise<void>>();
  let nextWatch = started;
  let failure: unknown = null;
  while (Date.now() < end && failure === null) {
    const due = Math.floor((target * (Date.now() - started)) / 1000) - issued;
    if (due > 0 && inFlight < MAX_TICKS_IN_FLIGHT) {
      const count = Math.min(due, Math.ceil((target * TICK_MS * 2) / 1000));
      issued += count;
      inFlight += 1;
      const write = load
        .issue(count)
        .catch((error: unknown) => {
          failure ??= error; // surfaced after the window (never an unhandled rejection)
        })
        .finally(() => {
          inFlight -= 1;
          pending.delete(write);
        });
      pending.add(write);
    }
    if (Date.now() >= nextWatch) {
      nextWatch += 1000;
      void watchWorker();
    }
    await sleep(Math.min(TICK_MS / 2, Math.max(1, end - Date.now())));
  }
  await Promise.all(pending);
  const elapsed = (Date.now() - started) / 1000;
  probe.stop();
  if (failure !== null) throw failure instanceof Error ? failure : new Error(String(failure));
  const lastProbe = probe.nextSeq - 1;
  const drained = await probe.waitSeen(lastProbe, options.drainSeconds * 1000);
  // The embedded verifier gives way to change application while it keeps up, and reads what it
  // deferred afterwards: the next step starts once it caught up, so it never pays for this one's
  // reads; the wait is counted in this step's CPU.
  const settleSeconds = api === null ? null : await untilCanCommit(api, options.drainSeconds);
  const done = {
    inserts: load.counts.inserts - before.inserts,
    updates: load.counts.updates - before.updates,
    deletes: load.counts.deletes - before.deletes,
  };
  const cpuMicrosPerOp = cpu(done.inserts + done.updates + done.deletes);
  const lags = probe.lagsOf(firstProbe, lastProbe);
  const achieved = (done.inserts + done.updates + done.deletes) / elapsed;
  const p99 = drained ? quantile(lags, 0.99) : null;
  return {
    targetOpsPerSec: target,
    achievedOpsPerSec: achieved,
    ...done,
    probes: lags.length,
    lagP50: quantile(lags, 0.5),
    lagP99: p99,
    lagMax: lags.length ? Math.max(...lags) : null,
    workerLagMax,
    drained,
    settleSeconds,
    loadLimited: achieved < 0.9 * target,
    held: drained && p99 !== null && p99 <= options.lagLimitSeconds,
    cpuMicrosPerOp,
    destinationCommandsPer100: null,
  };
}

/**
 * The mix at a given rate: one unordered bulkWrite per collection per call — or, for the
 * transactional mix, all of a call's writes (every 100 ms: tens to hundreds of operations over
 * every collection) in one multi-document transaction.
 */
class LoadGenerator implements Load {
  readonly counts = { inserts: 0, updates: 0, deletes: 0 };
  readonly processes: ChildProcess[] = [];
  private readonly planner: MixPlanner;

  constructor(
    private readonly client: MongoClient,
    private readonly spec: DatasetSpec,
    idBase: number,
    /** Each call's writes in one transaction (all collections), instead of parallel bulks. */
    private readonly transactional = false,
  ) {
    this.planner = new MixPlanner(spec, undefined, idBase);
  }

  async issue(count: number): Promise<void> {
    const batches = this.planner.plan(count);
    const db = this.client.db(this.spec.database);
    if (this.transactional) {
      const session = this.client.startSession();
      try {
        await session.withTransaction(async () => {
          for (const b of batches)
            await db.collection(b.collection).bulkWrite(b.ops, { ordered: false, session });
        });
      } finally {
        await session.endSession();
      }
    } else {
      await Promise.all(
        batches.map((b) => db.collection(b.collection).bulkWrite(b.ops, { ordered: false })),
      );
    }
    for (const b of batches) {
      this.planner.acknowledge(b); // deletable only once acknowledged: every delete hits a document
      this.counts.inserts += b.inserts;
      this.counts.updates += b.updates;
      this.counts.deletes += b.deletes;
    }
  }

  close(): void {}
}

/**
 * The mix written by several processes (load-writer.ts), each with its own connection, its own
 * planner (seed and `_id` range) and its share of every call: the load's ceiling is then no
 * longer one process's CPU and one client's pool (on a machine with spare cores).
 */
class WriterPool implements Load {
  readonly counts = { inserts: 0, updates: 0, deletes: 0 };
  private nextTag = 0;
  private readonly waiting = new Map<number, { resolve(): void; reject(e: Error): void }>();

  get processes(): ChildProcess[] {
    return this.writers;
  }

  private constructor(private readonly writers: ChildProcess[]) {
    for (const w of writers) {
      w.on('message', (message: WriterDone | { ready: true }) => {
        if (!('tag' in message)) return;
        const waiter = this.waiting.get(message.tag);
        this.waiting.delete(message.tag);
        if (message.error !== undefined) {
          waiter?.reject(new Error(`load writer: ${message.error}`));
          return;
        }
        this.counts.inserts += message.inserts ?? 0;
        this.counts.updates += message.updates ?? 0;
        this.counts.deletes += message.deletes ?? 0;
        waiter?.resolve();
      });
    }
  }

  static async start(
    uri: string,
    spec: DatasetSpec,
    n: number,
    idBase: number,
  ): Promise<WriterPool> {
    if (n * WRITER_ID_SPAN > LOAD_REGION_SPAN)
      throw new Error(`at most ${LOAD_REGION_SPAN / WRITER_ID_SPAN} load writers`);
    const writers = Array.from({ length: n }, () =>
      fork(LOAD_WRITER, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
    );
    await Promise.all(
      writers.map(
        (w, k) =>
          new Promise<void>((ready, fail) => {
            w.once('error', fail);
            w.once('exit', (code) => fail(new Error(`load writer exited with ${code}`)));
            w.on('message', (m: { ready?: boolean }) => {
              if (m.ready) ready();
            });
            const init: WriterInit = {
              init: { uri, spec, seed: 1_000 + k, idBase: idBase + k * WRITER_ID_SPAN },
            };
            w.send(init);
          }),
      ),
    );
    return new WriterPool(writers);
  }

  async issue(count: number): Promise<void> {
    const n = this.writers.length;
    const parts: Array<Promise<void>> = [];
    for (let k = 0; k < n; k++) {
      const share = Math.floor(count / n) + (k < count % n ? 1 : 0);
      if (share === 0) continue;
      const tag = this.nextTag++;
      parts.push(
        new Promise<void>((resolve, reject) => {
          this.waiting.set(tag, { resolve, reject });
          const message: WriterIssue = { issue: share, tag };
          this.writers[k].send(message);
        }),
      );
    }
    await Promise.all(parts);
  }

  close(): void {
    for (const w of this.writers) {
      w.removeAllListeners('exit');
      w.disconnect();
    }
  }
}

/**
 * End-to-end lag: sequence numbers written to one source document every 100 ms (time taken at
 * the acknowledgement) and polled on the destination every 50 ms.
 */
class LagProbe {
  nextSeq = 1;
  private readonly writtenAt = new Map<number, number>();
  private readonly seenAt = new Map<number, number>();
  private highestSeen = 0;
  private writer: NodeJS.Timeout | null = null;
  private poller: NodeJS.Timeout | null = null;
  private polling = false;

  constructor(
    private readonly source: MongoClient,
    private readonly destination: MongoClient,
  ) {}

  async init(): Promise<void> {
    await this.source
      .db(PROBE_DB)
      .collection('lag')
      .updateOne({ _id: 0 as never }, { $set: { seq: 0 } }, { upsert: true });
    this.poller = setInterval(() => void this.poll(), 50);
  }

  start(): void {
    this.writer = setInterval(() => {
      const seq = this.nextSeq++;
      void this.source
        .db(PROBE_DB)
        .collection('lag')
        .updateOne({ _id: 0 as never }, { $set: { seq } })
        .then(() => this.writtenAt.set(seq, Date.now()));
    }, PROBE_MS);
  }

  stop(): void {
    if (this.writer) clearInterval(this.writer);
    this.writer = null;
  }

  close(): void {
    this.stop();
    if (this.poller) clearInterval(this.poller);
  }

  async waitSeen(seq: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.highestSeen < seq || !this.writtenAt.has(seq)) {
      if (Date.now() > deadline) return false;
      await sleep(50);
    }
    return true;
  }

  /** Lags (s) of probes `from..to`; a probe overtaken before it was polled counts from then. */
  lagsOf(from: number, to: number): number[] {
    const out: number[] = [];
    for (let seq = from; seq <= to; seq++) {
      const written = this.writtenAt.get(seq);
      const seen = this.seenAt.get(seq);
      if (written !== undefined && seen !== undefined) out.push(Math.max(0, seen - written) / 1000);
    }
    return out;
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const doc = await this.destination
        .db(PROBE_DB)
        .collection('lag')
        .findOne({ _id: 0 as never }, { promoteValues: true });
      const seq = typeof doc?.seq === 'number' ? doc.seq : 0;
      const now = Date.now();
      for (let s = this.highestSeen + 1; s <= seq; s++) this.seenAt.set(s, now);
      this.highestSeen = Math.max(this.highestSeen, seq);
    } catch {
      // the destination may not have the probe collection yet
    } finally {
      this.polling = false;
    }
  }
}

function quantile(values: number[], q: number): number | null {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

const fmt = (v: number | null): string => (v === null ? '-' : v.toFixed(2));
