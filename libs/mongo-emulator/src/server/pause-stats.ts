import {
  monitorEventLoopDelay,
  PerformanceObserver,
  type IntervalHistogram,
} from 'node:perf_hooks';
import { readFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';
import type { Document } from 'bson';

/**
 * Emulator extension (not a mongod feature): main-thread pause figures of this process, for
 * the memory benchmark (`npm run bench:memory`). Off unless `--pause-stats` or
 * `EMULATOR_PAUSE_STATS=1` turns it on: the event-loop delay histogram samples every 10 ms, a
 * PerformanceObserver records every garbage collection, and a 10 ms timer keeps the longest gap
 * between its ticks together with what the main thread did meanwhile (Linux
 * `/proc/self/schedstat`: time on a CPU and time waiting for one), which tells a stall the
 * emulator caused from one where the machine gave it no CPU.
 */
export interface PauseFigures {
  /** Event-loop delay percentiles and maximum, in ms, since the last reset. */
  eventLoopDelayMs: { p50: number; p99: number; max: number; samples: number };
  /** Garbage collections since the last reset: count, longest, total time and long ones. */
  gc: { count: number; maxPauseMs: number; totalMs: number; over200Ms: number };
  /**
   * The longest gap between two ticks of a 10 ms timer: its length, and the main thread's time
   * running and waiting for a CPU during it (null where /proc/self/schedstat is unavailable).
   */
  longestStall: { ms: number; runningMs: number | null; waitingMs: number | null };
  /** Milliseconds covered by the figures. */
  windowMs: number;
}

/** Main-thread time on a CPU and waiting in the run queue, in ns (Linux), or null. */
function schedstat(): [number, number] | null {
  try {
    const [running, waiting] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ');
    return [Number(running), Number(waiting)];
  } catch {
    return null;
  }
}

/** A pause longer than this is the figure the benchmark's target counts. */
export const LONG_PAUSE_MS = 200;

class PauseStats {
  private readonly histogram: IntervalHistogram;
  private readonly observer: PerformanceObserver;
  private gc = { count: 0, maxPauseMs: 0, totalMs: 0, over200Ms: 0 };
  private since = Date.now();
  private readonly ticker: NodeJS.Timeout;
  private lastTick = performance.now();
  private lastSched = schedstat();
  private stall: PauseFigures['longestStall'] = { ms: 0, runningMs: null, waitingMs: null };

  constructor() {
    this.histogram = monitorEventLoopDelay({ resolution: 10 });
    this.histogram.enable();
    this.observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const ms = entry.duration;
        this.gc.count += 1;
        this.gc.totalMs += ms;
        if (ms > this.gc.maxPauseMs) this.gc.maxPauseMs = ms;
        if (ms > LONG_PAUSE_MS) this.gc.over200Ms += 1;
      }
    });
    this.observer.observe({ entryTypes: ['gc'] });
    this.ticker = setInterval(() => this.tick(), 10);
    this.ticker.unref();
  }

  private tick(): void {
    const now = performance.now();
    const sched = schedstat();
    const gap = now - this.lastTick;
    if (gap > this.stall.ms) {
      const before = this.lastSched;
      this.stall = {
        ms: gap,
        runningMs: sched && before ? (sched[0] - before[0]) / 1e6 : null,
        waitingMs: sched && before ? (sched[1] - before[1]) / 1e6 : null,
      };
    }
    this.lastTick = now;
    this.lastSched = sched;
  }

  figures(): PauseFigures {
    const h = this.histogram;
    const ms = (ns: number): number => (Number.isFinite(ns) ? ns / 1e6 : 0);
    return {
      eventLoopDelayMs: {
        p50: ms(h.percentile(50)),
        p99: ms(h.percentile(99)),
        max: ms(h.max),
        samples: h.count,
      },
      gc: { ...this.gc },
      longestStall: { ...this.stall },
      windowMs: Date.now() - this.since,
    };
  }

  reset(): void {
    this.histogram.reset();
    this.gc = { count: 0, maxPauseMs: 0, totalMs: 0, over200Ms: 0 };
    this.stall = { ms: 0, runningMs: null, waitingMs: null };
    this.since = Date.now();
  }

  stop(): void {
    this.histogram.disable();
    this.observer.disconnect();
    clearInterval(this.ticker);
  }
}

let active: PauseStats | undefined;

/** Turns the pause figures on for this process (idempotent). */
export function enablePauseStats(): void {
  active ??= new PauseStats();
}

export function disablePauseStats(): void {
  active?.stop();
  active = undefined;
}

/** True when `EMULATOR_PAUSE_STATS` asks for the figures (`1`, `true`, `yes`). */
export function pauseStatsRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  return /^(1|true|yes)$/i.test(env.EMULATOR_PAUSE_STATS ?? '');
}

/**
 * The `emulatorStats` reply body: this process's memory (`process.memoryUsage()`, in bytes) and,
 * when enabled, the pause figures since the last reset (`reset: true` starts a new window after
 * reporting the current one). `heapSpaces: true` adds V8's per-space sizes; `gc: true` runs a
 * full garbage collection first when node was started with `--expose-gc` (`collected` says
 * whether it could).
 */
export function emulatorStats(reset: boolean, heapSpaces = false, collect = false): Document {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (collect && gc) gc();
  const mem = process.memoryUsage();
  const out: Document = {
    memory: {
      rss: mem.rss,
      heapTotal: mem.heapTotal,
      heapUsed: mem.heapUsed,
      external: mem.external,
      arrayBuffers: mem.arrayBuffers,
    },
    pauseStats: active !== undefined,
  };
  if (collect) out.collected = gc !== undefined;
  if (heapSpaces) {
    out.heapSpaces = Object.fromEntries(
      getHeapSpaceStatistics().map((s) => [
        s.space_name,
        { size: s.space_size, used: s.space_used_size },
      ]),
    );
  }
  if (active) {
    out.pauses = active.figures();
    if (reset) active.reset();
  }
  return out;
}
