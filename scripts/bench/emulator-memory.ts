/**
 * Emulator memory benchmark (issue 9): how much resident memory an emulated replica set needs
 * per stored BSON byte, and how long its main thread pauses while changes are applied.
 *
 *   npm run bench:memory                          200k × ~1 KB documents, 20 s of changes
 *   npm run bench:memory -- --docs 50000 --size 2048 --apply-ops 100000
 *
 * The emulator runs as a child process (`--pause-stats`), so its RSS (VmRSS/VmHWM from /proc)
 * is its own. The script loads the documents through the driver, measures RSS once the load has
 * settled, then runs a change-application phase (unordered bulkWrites of inserts, updates,
 * replacements and deletes) while the emulator records its event-loop delay and GC pauses,
 * fetched with the `emulatorStats` extension command. It prints the figures (no assertion):
 * a table, then one JSON line.
 */
import {
  Double,
  Int32,
  Long,
  MongoClient,
  type AnyBulkWriteOperation,
  type Document,
} from 'mongodb';
import { rng } from '../lib/sample-data';
import {
  collectionName,
  collectionOf,
  insertRange,
  makeDocument,
  secondsSince,
  type DatasetSpec,
} from './dataset';
import { memoryOf, sleep, startEmulator, stopAll } from './processes';

const DATABASE = 'bench_memory';
/** `_id`s of documents the change phase inserts (far above the dataset's). */
const APPLY_ID_BASE = 1_000_000_000_000;
const MIB = 1024 * 1024;
/** The issue's target: RSS ≤ 3 × stored BSON bytes + 150 MB. */
const TARGET_FACTOR = 3;
const TARGET_BASE_MIB = 150;

export interface MemoryBenchOptions {
  documents: number;
  documentBytes: number;
  collections: number;
  /** Length of the change phase in seconds (ignored when `applyOps` > 0). */
  applySeconds: number;
  /** Fixed number of change operations (0: run for `applySeconds`). */
  applyOps: number;
  /** Operations per bulkWrite. */
  batch: number;
  /** bulkWrites in flight during the change phase. */
  concurrency: number;
  /** Seconds to wait after the load before RSS is read. */
  settleSeconds: number;
  /** `--history N` for the emulator (undefined: its default). */
  history?: number;
}

export const USAGE = `usage: npm run bench:memory -- [options]
  --docs N             documents to load (default 200000)
  --size B             approximate BSON size of one document (default 1024)
  --collections N      collections the documents are spread over (default 8)
  --apply-seconds S    length of the change-application phase (default 20)
  --apply-ops N        run a fixed number of change operations instead
  --batch N            operations per bulkWrite (default 200)
  --concurrency N      bulkWrites in flight (default 2)
  --settle S           idle seconds after the load before RSS is read (default 3)
  --history N          the emulator's --history (oplog entries kept; default its own)`;

export class UsageError extends Error {}

export function parseArgs(argv: string[]): MemoryBenchOptions {
  const o: MemoryBenchOptions = {
    documents: 200_000,
    documentBytes: 1024,
    collections: 8,
    applySeconds: 20,
    applyOps: 0,
    batch: 200,
    concurrency: 2,
    settleSeconds: 3,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') throw new UsageError('');
    const next = argv[i + 1];
    if (next === undefined || next.startsWith('--')) throw new UsageError(`${arg} needs a value`);
    i += 1;
    const n = Number(next);
    if (!Number.isFinite(n) || n < 0) throw new UsageError(`${arg}: not a number ≥ 0: ${next}`);
    const int = Math.floor(n);
    switch (arg) {
      case '--docs':
        o.documents = int;
        break;
      case '--size':
        o.documentBytes = Math.max(1, int);
        break;
      case '--collections':
        o.collections = Math.max(1, int);
        break;
      case '--apply-seconds':
        o.applySeconds = n;
        break;
      case '--apply-ops':
        o.applyOps = int;
        break;
      case '--batch':
        o.batch = Math.max(1, int);
        break;
      case '--concurrency':
        o.concurrency = Math.max(1, int);
        break;
      case '--settle':
        o.settleSeconds = n;
        break;
      case '--history':
        o.history = Math.max(1, int);
        break;
      default:
        throw new UsageError(`unknown argument '${arg}'`);
    }
  }
  return o;
}

/** What `emulatorStats` answers (see libs/mongo-emulator/src/server/pause-stats.ts). */
interface EmulatorStats {
  memory: {
    rss: number;
    heapTotal: number;
    heapUsed: number;
    external: number;
    arrayBuffers: number;
  };
  pauseStats: boolean;
  pauses?: {
    eventLoopDelayMs: { p50: number; p99: number; max: number; samples: number };
    gc: { count: number; maxPauseMs: number; totalMs: number; over200Ms: number };
    longestStall: { ms: number; runningMs: number | null; waitingMs: number | null };
    windowMs: number;
  };
}

interface PhaseFigures {
  eventLoopDelayP50Ms: number;
  eventLoopDelayP99Ms: number;
  eventLoopDelayMaxMs: number;
  gcCount: number;
  gcMaxPauseMs: number;
  gcTotalMs: number;
  gcPausesOver200Ms: number;
  /** Longest gap between ticks of a 10 ms timer, and the main thread's running/waiting time. */
  longestStallMs: number;
  longestStallRunningMs: number | null;
  longestStallWaitingMs: number | null;
}

export interface MemoryBenchResult {
  documents: number;
  documentBytes: number;
  collections: number;
  load: { seconds: number; docsPerSec: number; pauses: PhaseFigures };
  storedBytes: number;
  storedMiB: number;
  rssAfterLoadMiB: number;
  heapAfterLoad: {
    heapUsedMiB: number;
    heapTotalMiB: number;
    externalMiB: number;
    arrayBuffersMiB: number;
  };
  targetMiB: number;
  targetMet: boolean;
  apply: {
    seconds: number;
    ops: { inserts: number; updates: number; replaces: number; deletes: number };
    opsPerSec: number;
    storedBytesAfter: number;
    pauses: PhaseFigures;
  };
  rssAfterApplyMiB: number;
  peakRssMiB: number;
  peakWithinTarget: boolean;
  noPauseOver200Ms: boolean;
}

const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

async function emulatorStats(client: MongoClient, reset = false): Promise<EmulatorStats> {
  return (await client
    .db('admin')
    .command({ emulatorStats: 1, reset })) as unknown as EmulatorStats;
}

function phaseFigures(stats: EmulatorStats): PhaseFigures {
  const p = stats.pauses;
  if (!p) throw new Error('the emulator was not started with --pause-stats');
  return {
    eventLoopDelayP50Ms: round(p.eventLoopDelayMs.p50),
    eventLoopDelayP99Ms: round(p.eventLoopDelayMs.p99),
    eventLoopDelayMaxMs: round(p.eventLoopDelayMs.max),
    gcCount: p.gc.count,
    gcMaxPauseMs: round(p.gc.maxPauseMs),
    gcTotalMs: round(p.gc.totalMs),
    gcPausesOver200Ms: p.gc.over200Ms,
    longestStallMs: round(p.longestStall.ms),
    longestStallRunningMs:
      p.longestStall.runningMs === null ? null : round(p.longestStall.runningMs),
    longestStallWaitingMs:
      p.longestStall.waitingMs === null ? null : round(p.longestStall.waitingMs),
  };
}

async function storedBytesOf(client: MongoClient): Promise<number> {
  const stats = await client.db(DATABASE).command({ dbStats: 1, scale: 1 });
  return Number(stats.dataSize);
}

export async function main(o: MemoryBenchOptions): Promise<MemoryBenchResult> {
  const spec: DatasetSpec = {
    database: DATABASE,
    collections: o.collections,
    documents: o.documents,
    documentBytes: o.documentBytes,
  };
  const extra = ['--pause-stats', ...(o.history ? ['--history', String(o.history)] : [])];
  const emulator = await startEmulator('bench-memory', null, extra, []);
  const child = emulator.child;
  const client = await MongoClient.connect(emulator.firstLine.uri);
  try {
    log(
      `bench:memory: ${o.documents} documents of ~${o.documentBytes} B over ${o.collections} collections (emulator pid ${child.pid})`,
    );
    await emulatorStats(client, true);
    const loaded = await insertRange(client, DATABASE, spec, 0, o.documents, {
      batchSize: 1_000,
      concurrency: 4,
    });
    const loadPauses = phaseFigures(await emulatorStats(client));
    log(`  loaded in ${loaded.seconds.toFixed(1)} s; settling ${o.settleSeconds} s…`);
    await sleep(o.settleSeconds * 1000);
    const storedBytes = await storedBytesOf(client);
    const afterLoad = memoryOf(child);
    if (!afterLoad) throw new Error('the emulator exited');
    const heap = (await emulatorStats(client)).memory;
    const storedMiB = storedBytes / MIB;
    const targetMiB = TARGET_FACTOR * storedMiB + TARGET_BASE_MIB;
    log(
      `  stored ${storedMiB.toFixed(1)} MiB, RSS ${afterLoad.rssMB.toFixed(0)} MiB (target ${targetMiB.toFixed(0)} MiB)`,
    );

    log(
      o.applyOps > 0
        ? `  change phase: ${o.applyOps} operations…`
        : `  change phase: ${o.applySeconds} s…`,
    );
    await emulatorStats(client, true);
    const applied = await applyChanges(client, spec, o);
    const applyPauses = phaseFigures(await emulatorStats(client));
    const storedBytesAfter = await storedBytesOf(client);
    const afterApply = memoryOf(child);
    if (!afterApply) throw new Error('the emulator exited');
    const total =
      applied.ops.inserts + applied.ops.updates + applied.ops.replaces + applied.ops.deletes;
    const peakRssMiB = Math.max(afterApply.hwmMB, afterLoad.hwmMB);
    return {
      documents: o.documents,
      documentBytes: o.documentBytes,
      collections: o.collections,
      load: {
        seconds: round(loaded.seconds),
        docsPerSec: Math.round(loaded.documents / loaded.seconds),
        pauses: loadPauses,
      },
      storedBytes,
      storedMiB: round(storedMiB),
      rssAfterLoadMiB: round(afterLoad.rssMB),
      heapAfterLoad: {
        heapUsedMiB: round(heap.heapUsed / MIB),
        heapTotalMiB: round(heap.heapTotal / MIB),
        externalMiB: round(heap.external / MIB),
        arrayBuffersMiB: round(heap.arrayBuffers / MIB),
      },
      targetMiB: round(targetMiB),
      targetMet: afterLoad.rssMB <= targetMiB,
      apply: {
        seconds: round(applied.seconds),
        ops: applied.ops,
        opsPerSec: Math.round(total / applied.seconds),
        storedBytesAfter,
        pauses: applyPauses,
      },
      rssAfterApplyMiB: round(afterApply.rssMB),
      peakRssMiB: round(peakRssMiB),
      peakWithinTarget: peakRssMiB <= targetMiB,
      noPauseOver200Ms:
        applyPauses.eventLoopDelayMaxMs <= 200 && applyPauses.gcPausesOver200Ms === 0,
    };
  } finally {
    await client.close();
    await stopAll();
  }
}

/**
 * The change-application phase: unordered bulkWrites of `batch` operations, `concurrency` in
 * flight, mixing inserts of new documents (25%), deletes of those once acknowledged (25%),
 * `$set`/`$inc` updates of random dataset documents (35%) and whole-document replacements
 * (15%), like the sync service's apply phase writes to a destination.
 */
async function applyChanges(
  client: MongoClient,
  spec: DatasetSpec,
  o: MemoryBenchOptions,
): Promise<{ seconds: number; ops: MemoryBenchResult['apply']['ops'] }> {
  const random = rng(4242);
  const ops = { inserts: 0, updates: 0, replaces: 0, deletes: 0 };
  const inserted: number[] = [];
  let insertedHead = 0;
  let nextId = APPLY_ID_BASE;
  let issued = 0;
  const started = process.hrtime.bigint();
  const deadline = Date.now() + o.applySeconds * 1000;
  const more = (): boolean => (o.applyOps > 0 ? issued < o.applyOps : Date.now() < deadline);
  const db = client.db(spec.database);

  const lane = async (): Promise<void> => {
    while (more()) {
      const count = o.applyOps > 0 ? Math.min(o.batch, o.applyOps - issued) : o.batch;
      issued += count;
      const perCollection = new Map<number, AnyBulkWriteOperation<Document>[]>();
      const add = (k: number, op: AnyBulkWriteOperation<Document>): void => {
        const list = perCollection.get(k);
        if (list) list.push(op);
        else perCollection.set(k, [op]);
      };
      const added: number[] = [];
      const tally = { inserts: 0, updates: 0, replaces: 0, deletes: 0 };
      for (let n = 0; n < count; n++) {
        const r = random();
        if (r < 0.25) {
          const id = nextId++;
          added.push(id);
          add(collectionOf(spec, id), {
            insertOne: { document: makeDocument(id, spec.documentBytes) },
          });
          tally.inserts++;
        } else if (r < 0.5 && insertedHead < inserted.length) {
          const id = inserted[insertedHead++]!;
          add(collectionOf(spec, id), { deleteOne: { filter: { _id: Long.fromNumber(id) } } });
          tally.deletes++;
        } else if (r < 0.85 || spec.documents === 0) {
          const i = Math.floor(random() * Math.max(1, spec.documents));
          add(collectionOf(spec, i), {
            updateOne: {
              filter: { _id: Long.fromNumber(i) },
              update: {
                $set: { ratio: new Double(random()), 'flags.level': new Int32(n % 10) },
                $inc: { seq: new Int32(1) },
              },
            },
          });
          tally.updates++;
        } else {
          const i = Math.floor(random() * spec.documents);
          const replacement = makeDocument(i, spec.documentBytes);
          delete replacement._id;
          replacement.replacedAt = new Date();
          add(collectionOf(spec, i), {
            replaceOne: { filter: { _id: Long.fromNumber(i) }, replacement },
          });
          tally.replaces++;
        }
      }
      if (insertedHead > 100_000) {
        inserted.splice(0, insertedHead);
        insertedHead = 0;
      }
      await Promise.all(
        [...perCollection].map(([k, list]) =>
          db.collection(collectionName(k)).bulkWrite(list, { ordered: false }),
        ),
      );
      inserted.push(...added); // deletable once acknowledged
      ops.inserts += tally.inserts;
      ops.updates += tally.updates;
      ops.replaces += tally.replaces;
      ops.deletes += tally.deletes;
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, lane));
  return { seconds: secondsSince(started), ops };
}

export function renderTable(r: MemoryBenchResult): string[] {
  const mib = (v: number): string => `${v.toFixed(1)} MiB`;
  const ms = (v: number): string => `${v.toFixed(1)} ms`;
  const yes = (b: boolean): string => (b ? 'yes' : 'NO');
  const opt = (v: number | null): string => (v === null ? '-' : ms(v));
  const a = r.apply;
  const rows: Array<[string, string]> = [
    ['documents', `${r.documents} × ~${r.documentBytes} B over ${r.collections} collections`],
    ['load', `${r.load.seconds.toFixed(1)} s (${r.load.docsPerSec} docs/s)`],
    ['stored BSON bytes (dbStats dataSize)', `${r.storedBytes} (${mib(r.storedMiB)})`],
    ['RSS after load', mib(r.rssAfterLoadMiB)],
    [
      '  heap used / total, external (arrayBuffers)',
      `${mib(r.heapAfterLoad.heapUsedMiB)} / ${mib(r.heapAfterLoad.heapTotalMiB)}, ${mib(r.heapAfterLoad.externalMiB)} (${mib(r.heapAfterLoad.arrayBuffersMiB)})`,
    ],
    ['target (3 × stored + 150 MiB)', mib(r.targetMiB)],
    ['RSS after load within target', yes(r.targetMet)],
    [
      'change phase',
      `${a.seconds.toFixed(1)} s, ${a.opsPerSec} ops/s (${a.ops.inserts} ins, ${a.ops.updates} upd, ${a.ops.replaces} repl, ${a.ops.deletes} del)`,
    ],
    ['RSS after change phase', mib(r.rssAfterApplyMiB)],
    ['peak RSS (VmHWM)', mib(r.peakRssMiB)],
    ['peak RSS within target', yes(r.peakWithinTarget)],
    [
      'event-loop delay p50 / p99 / max (change phase)',
      `${ms(a.pauses.eventLoopDelayP50Ms)} / ${ms(a.pauses.eventLoopDelayP99Ms)} / ${ms(a.pauses.eventLoopDelayMaxMs)}`,
    ],
    [
      'GC pauses (change phase): count, max, total, > 200 ms',
      `${a.pauses.gcCount}, ${ms(a.pauses.gcMaxPauseMs)}, ${ms(a.pauses.gcTotalMs)}, ${a.pauses.gcPausesOver200Ms}`,
    ],
    [
      'longest stall (change phase): running / waiting for CPU',
      `${ms(a.pauses.longestStallMs)}: ${opt(a.pauses.longestStallRunningMs)} / ${opt(a.pauses.longestStallWaitingMs)}`,
    ],
    ['no main-thread pause over 200 ms (change phase)', yes(r.noPauseOver200Ms)],
    [
      'event-loop delay p99 / max, max GC pause (load)',
      `${ms(r.load.pauses.eventLoopDelayP99Ms)} / ${ms(r.load.pauses.eventLoopDelayMaxMs)}, ${ms(r.load.pauses.gcMaxPauseMs)}`,
    ],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`);
}

const round = (v: number): number => Math.round(v * 100) / 100;

if (require.main === module) {
  let options: MemoryBenchOptions;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`${error.message ? `bench:memory: ${error.message}\n` : ''}${USAGE}\n`);
    process.exit(error.message ? 2 : 0);
  }
  const interrupt = (): void => {
    void stopAll().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  main(options).then(
    (result) => {
      for (const line of renderTable(result)) process.stdout.write(`${line}\n`);
      process.stdout.write(`${JSON.stringify(result)}\n`);
    },
    (error: unknown) => {
      log(
        `bench:memory failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
      void stopAll().finally(() => process.exit(1));
    },
  );
}
