/**
 * CPU accounting for the bench: how much CPU each process of a measurement (the emulators, the
 * worker or the peer, the bench process itself) spent per document or per change, read from
 * /proc (utime + stime) around the measured window. From those figures follow the ceilings a
 * ratio cannot pass on the machine the bench ran on: with N cores, a rate R needs
 * R × (sum of every process's CPU per unit) ≤ N seconds per second, and a process's main thread
 * (where Node runs JavaScript) can use at most one core (R × its CPU per unit ≤ 1); the process
 * as a whole may use more (the garbage collector's and libuv's threads).
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

const CLOCK_TICKS = 100; // USER_HZ on Linux

/** utime + stime from a stat(5) file (a process's or a thread's), in seconds (0: gone). */
function statCpuSeconds(path: string): number {
  try {
    const stat = readFileSync(path, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS; // fields 14, 15 of stat(5)
  } catch {
    return 0;
  }
}

/** utime + stime of a process, in seconds (0 once it exited). */
export function cpuSecondsOf(child: ChildProcess): number {
  return statCpuSeconds(`/proc/${child.pid}/stat`);
}

/**
 * utime + stime of a process's main thread, in seconds (0 once it exited). A Node process runs
 * JavaScript on its main thread only, but V8's garbage collector and libuv's pool also work on
 * threads of their own: the process as a whole can take more than one core, its main thread not.
 */
function mainThreadSecondsOf(pid: number | undefined): number {
  return pid === undefined ? 0 : statCpuSeconds(`/proc/${pid}/task/${pid}/stat`);
}

/**
 * Suffix of a part's main-thread figure in a CpuMark (`destination:main`), beside the whole
 * process's (`destination`). Ceilings cap a part at one core by its main thread's CPU only.
 */
export const MAIN_THREAD = ':main';

/** The processes a measurement splits its CPU over, by name; `bench` is added for this process. */
export type CpuParts = Record<string, ChildProcess>;

/** CPU seconds of every part (and of this process, as `bench`) at one instant. */
export type CpuMark = Record<string, number>;

function cpuMark(parts: CpuParts): CpuMark {
  const mark: CpuMark = {};
  for (const [name, child] of Object.entries(parts)) {
    mark[name] = cpuSecondsOf(child);
    mark[name + MAIN_THREAD] = mainThreadSecondsOf(child.pid);
  }
  const self = process.cpuUsage();
  mark.bench = (self.user + self.system) / 1e6;
  mark['bench' + MAIN_THREAD] = mainThreadSecondsOf(process.pid);
  return mark;
}

/** CPU seconds each part spent between two marks, added to `into` (a new mark by default). */
function cpuDelta(before: CpuMark, after: CpuMark, into: CpuMark = {}): CpuMark {
  for (const name of Object.keys(after))
    into[name] = (into[name] ?? 0) + Math.max(0, after[name]! - (before[name] ?? 0));
  return into;
}

/** Microseconds of CPU per unit (document, change) in CPU seconds per part. */
function perUnitOf(seconds: CpuMark, units: number): CpuMark {
  const per: CpuMark = {};
  for (const [name, s] of Object.entries(seconds))
    per[name] = units > 0 ? Math.round((s * 1e6) / units) : 0;
  return per;
}

/**
 * Marks every part's CPU now; the function returned gives each part's CPU per unit spent since
 * (a part added to `parts` afterwards counts from 0: it did not exist at the mark).
 */
export function cpuSince(parts: CpuParts): (units: number) => CpuMark {
  const before = cpuMark(parts);
  return (units) => perUnitOf(cpuDelta(before, cpuMark(parts)), units);
}

/**
 * CPU over several windows (a measurement that pauses between them, as the raw write does while
 * it encodes its next documents): `open` and `close` bracket each window; `perUnit` gives each
 * part's CPU per unit over all closed windows.
 */
export function cpuWindows(parts: CpuParts): {
  open(): void;
  close(): void;
  perUnit(units: number): CpuMark;
} {
  const total: CpuMark = {};
  let start: CpuMark | null = null;
  return {
    open: () => void (start = cpuMark(parts)),
    close: () => {
      if (start) cpuDelta(start, cpuMark(parts), total);
      start = null;
    },
    perUnit: (units) => perUnitOf(total, units),
  };
}

/**
 * The highest rate (units/s) the named parts' work alone allows on `cores` cores: the whole
 * machine's CPU shared by all of them, and no part's main thread above one core. The parts
 * left out are counted as free — a ceiling, never an estimate of what they would reach.
 */
export function rateCeiling(
  perUnit: CpuMark,
  names: string[],
  cores: number = cpus().length,
): number | null {
  const parts = names.filter((n) => !n.endsWith(MAIN_THREAD) && (perUnit[n] ?? 0) > 0);
  if (parts.length === 0) return null;
  const total = parts.reduce((s, n) => s + perUnit[n]!, 0);
  // One core per part's main thread (its whole CPU when the main thread was not measured).
  const busiest = Math.max(...parts.map((n) => perUnit[n + MAIN_THREAD] || perUnit[n]!));
  return Math.round(Math.min((cores * 1e6) / total, 1e6 / busiest));
}

/** `name`'s figures in `mark` (the process's and its main thread's), under `as`. */
export function partOf(mark: CpuMark, name: string, as = name): CpuMark {
  const out: CpuMark = { [as]: mark[name] ?? 0 };
  const main = mark[name + MAIN_THREAD];
  if (main !== undefined) out[as + MAIN_THREAD] = main;
  return out;
}

/** `12 source, 30 destination, …` (µs per unit), for the log. */
export function describeCpu(perUnit: CpuMark): string {
  return Object.entries(perUnit)
    .filter(([name]) => !name.endsWith(MAIN_THREAD))
    .map(([name, us]) => {
      const main = perUnit[name + MAIN_THREAD];
      return main !== undefined && main !== us
        ? `${name} ${us} (main thread ${main})`
        : `${name} ${us}`;
    })
    .join(', ');
}
