import { setFlagsFromString } from 'node:v8';

/**
 * Caps how far V8 grows the heap past the data a full collection left alive (V8's
 * `--heap-growing-percent`, read by its heap controller at every full collection, so setting it
 * once at start-up governs the process's life). 0 leaves V8's adaptive factor. A flag given to
 * node itself wins: an operator's explicit `node --heap-growing-percent=…` is not overridden.
 */
export function applyHeapGrowth(
  percent: number,
  execArgv: readonly string[] = process.execArgv,
  setFlags: (flags: string) => void = setFlagsFromString,
): boolean {
  if (percent <= 0) return false;
  if (execArgv.some((arg) => /^--heap[-_]growing[-_]percent\b/.test(arg))) return false;
  setFlags(`--heap-growing-percent=${Math.trunc(percent)}`);
  return true;
}
