import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { freePort, startNodeProcess, type Started } from '../lib/processes';

const DIST = resolve(__dirname, '..', '..');
export const EMULATOR_CLI = resolve(DIST, 'libs/mongo-emulator/src/cli.js');
export const WORKER_MAIN = resolve(DIST, 'apps/worker/src/main.js');

/** Node flags for a child: `--cpu-prof` into `dir` when profiling is on. */
export function nodeFlags(profileDir: string | null, name: string): string[] {
  return profileDir
    ? [
        '--cpu-prof',
        `--cpu-prof-dir=${profileDir}`,
        `--cpu-prof-name=${name}.${Date.now()}.cpuprofile`,
      ]
    : [];
}

/** Every child this run started, so an error or Ctrl-C still stops them all. */
const children = new Set<Started<unknown>>();

export function track<T>(started: Started<T>): Started<T> {
  children.add(started as Started<unknown>);
  started.child.once('exit', () => children.delete(started as Started<unknown>));
  return started;
}

export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((c) => c.stop()));
}

/**
 * Node flags of every emulator process the bench starts: a 64 MiB young generation (Node's
 * default is 16 MiB). An emulator stands in for mongod, which has no garbage collector; with the
 * default, the destination spent a fifth of its time in scavenges while it took the copy's
 * inserts and served the verifier's reads at once (see the README's bench section).
 */
export const EMULATOR_NODE_FLAGS = ['--max-semi-space-size=64'];

export async function startEmulator(
  name: string,
  profileDir: string | null,
  extraArgs: string[] = [],
  /** Node flags (the emulator-memory bench measures the emulator as Node's defaults leave it). */
  nodeArgs: string[] = EMULATOR_NODE_FLAGS,
): Promise<Started<{ uri: string }>> {
  const args = [
    ...nodeFlags(profileDir, `emulator-${name}`),
    ...nodeArgs,
    EMULATOR_CLI,
    '--topology',
    'replset',
    '--name',
    name,
    '--port',
    '0',
    ...extraArgs,
  ];
  return track(await startNodeProcess<{ uri: string }>(args));
}

export interface WorkerProcess {
  started: Started<Record<string, unknown>>;
  api: string;
  /** Wall-clock ms of the first log line whose `msg` is `text` (null until seen). */
  logSeen(text: string): number | null;
  /** The last log line whose `msg` is `text` (its fields), null until seen. */
  logLine(text: string): Record<string, unknown> | null;
  /** Every fatal/error log line, for the report. */
  errors: string[];
  /** Every distinct log message with the wall-clock ms it first appeared, in order. */
  timeline(): Array<[string, number]>;
  /** Every `commit step done` line (step and ms), in order. */
  commitSteps(): Array<{ step: string; ms: number }>;
}

/** The worker's log messages as they first appeared between two instants, timed from the first. */
export function logTimeline(worker: WorkerProcess, from: number, to: number): string {
  return worker
    .timeline()
    .filter(([, at]) => at >= from && at <= to)
    .map(([msg, at]) => `+${((at - from) / 1000).toFixed(1)}s ${msg}`)
    .join(' | ');
}

/**
 * Starts a worker on a free port and waits until its API answers `progress` (it answers 503
 * while INITIALIZING). Log lines are watched so phase ends can be timed from the worker's side.
 */
export async function startWorker(
  sourceUri: string,
  destinationUri: string,
  profileDir: string | null,
  tag: string,
  /** More worker flags (`--id <shard>` for a per-shard worker). */
  extraArgs: string[] = [],
  /** More node flags (`--max-old-space-size=<MiB>`). */
  nodeArgs: string[] = [],
): Promise<WorkerProcess> {
  const port = await freePort();
  const args = [
    ...nodeFlags(profileDir, `worker-${tag}`),
    ...nodeArgs,
    WORKER_MAIN,
    '--cluster0',
    sourceUri,
    '--cluster1',
    destinationUri,
    '--port',
    String(port),
    ...extraArgs,
  ];
  const started = track(await startNodeProcess<Record<string, unknown>>(args));
  const seen = new Map<string, number>();
  const last = new Map<string, Record<string, unknown>>();
  const errors: string[] = [];
  const steps: Array<{ step: string; ms: number }> = [];
  const note = (line: Record<string, unknown>): void => {
    const msg = typeof line.msg === 'string' ? line.msg : '';
    if (msg === 'commit step done' && steps.length < 100)
      steps.push({ step: String(line.step), ms: Number(line.ms) });
    if (!seen.has(msg)) seen.set(msg, Date.now());
    last.set(msg, line);
    if (line.level === 'ERROR' || line.level === 'FATAL') errors.push(msg);
  };
  note(started.firstLine);
  createInterface({ input: started.child.stdout! }).on('line', (text) => {
    try {
      note(JSON.parse(text) as Record<string, unknown>);
    } catch {
      // not a log line
    }
  });
  const api = `http://127.0.0.1:${port}/api/v1`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (started.child.exitCode !== null) {
      throw new Error(`worker exited with ${started.child.exitCode}: ${errors.join('; ')}`);
    }
    try {
      const res = await fetch(`${api}/progress`);
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`worker not ready in 60 s: ${errors.join('; ')}`);
    await sleep(100);
  }
  return {
    started,
    api,
    logSeen: (text) => seen.get(text) ?? null,
    timeline: () => [...seen],
    commitSteps: () => [...steps],
    logLine: (text) => last.get(text) ?? null,
    errors,
  };
}

/** Peak (VmHWM) and current (VmRSS) resident memory of a process, in MB; null once it exited. */
export function memoryOf(child: ChildProcess): { hwmMB: number; rssMB: number } | null {
  try {
    const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
    const kb = (key: string): number =>
      Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return { hwmMB: kb('VmHWM') / 1024, rssMB: kb('VmRSS') / 1024 };
  } catch {
    return null;
  }
}

/** Samples VmRSS every `intervalMs` and keeps the maximum alongside the kernel's VmHWM. */
export class RssSampler {
  private peakRss = 0;
  private peakHwm = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly child: ChildProcess,
    intervalMs = 200,
  ) {
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
    this.sample();
  }

  sample(): void {
    const m = memoryOf(this.child);
    if (!m) return;
    this.peakRss = Math.max(this.peakRss, m.rssMB);
    this.peakHwm = Math.max(this.peakHwm, m.hwmMB);
  }

  /** Peak resident MB: VmHWM when the kernel reports it, else the sampled VmRSS maximum. */
  stop(): number {
    this.sample();
    clearInterval(this.timer);
    return Math.max(this.peakHwm, this.peakRss);
  }
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
    }),
  ]);
}

export const sleep = (ms: number): Promise<void> =>
  new Promise((resolveSleep) => setTimeout(resolveSleep, ms));
