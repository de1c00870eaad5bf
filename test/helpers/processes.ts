import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, rmdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import * as ts from 'typescript';
import { parseJsonLine, stopProcess, waitForExit } from '../../scripts/lib/processes';
import { recordOutput } from './leak-ledger';

/** Repository root (this file lives in test/helpers). */
export const REPO_ROOT = join(__dirname, '..', '..');

/**
 * A child process whose stdout is read as lines, so tests can wait for a JSON line ("worker
 * listening", the emulator's {"uri": ...}) instead of sleeping.
 */
export interface ManagedProcess {
  child: ChildProcess;
  stdoutLines: string[];
  stderr: () => string;
  stdout: () => string;
  waitForJsonLine(
    match: (record: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  waitForExit(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

const running = new Set<ManagedProcess>();

export function spawnProcess(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  options: { processGroup?: boolean } = {},
): ManagedProcess {
  const child = spawn(command, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so killGroup() also reaches the processes it started.
    detached: options.processGroup === true,
  });
  let out = '';
  let err = '';
  const stdoutLines: string[] = [];
  const waiters = new Set<() => void>();
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    const lines = out.split('\n');
    stdoutLines.splice(0, stdoutLines.length, ...lines.filter((line) => line.trim() !== ''));
    for (const wake of waiters) wake();
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  // Everything it printed goes to the run's leak check (labelled without its arguments, which
  // may carry credentials on purpose).
  child.once('close', () =>
    recordOutput(`${command} ${args[0] ?? ''}`.trim(), `${out}${err ? `\n${err}` : ''}`),
  );

  const managed: ManagedProcess = {
    child,
    stdoutLines,
    stderr: () => err,
    stdout: () => out,
    waitForJsonLine(match, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          for (const line of stdoutLines) {
            const record = parseJsonLine(line);
            if (record && match(record)) {
              cleanup();
              resolve(record);
              return true;
            }
          }
          return false;
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new Error(
              `timed out after ${timeoutMs} ms waiting for a JSON line; stdout:\n${out}\nstderr:\n${err}`,
            ),
          );
        }, timeoutMs);
        const onExit = (): void => {
          if (check()) return;
          cleanup();
          reject(
            new Error(`process exited before the expected line; stdout:\n${out}\nstderr:\n${err}`),
          );
        };
        const cleanup = (): void => {
          clearTimeout(timer);
          waiters.delete(wake);
          child.off('exit', onExit);
        };
        const wake = (): void => void check();
        if (check()) return;
        waiters.add(wake);
        child.once('exit', onExit);
      });
    },
    waitForExit: (timeoutMs = 30_000) => waitForExit(child, timeoutMs),
    async stop(signal = 'SIGTERM') {
      running.delete(managed);
      await stopProcess(child, signal);
    },
  };
  running.add(managed);
  return managed;
}

/**
 * SIGKILLs the process group of a child spawned with `processGroup: true`: whatever it started
 * and left behind (a script that crashed before stopping its own children) goes too.
 */
export function killGroup(managed: ManagedProcess): void {
  if (managed.child.pid === undefined) return;
  try {
    process.kill(-managed.child.pid, 'SIGKILL');
  } catch {
    // the group is already gone
  }
}

const teardowns: Array<() => Promise<void>> = [];

/**
 * Work for stopAllProcesses() to do once every process is stopped: resetting a real cluster
 * (its scenario's databases dropped) must wait until no worker can write to it any more.
 */
export function afterProcessesStop(teardown: () => Promise<void>): void {
  teardowns.push(teardown);
}

/**
 * Teardown: stops every process a test started and did not stop itself, then runs the work
 * registered with afterProcessesStop().
 */
export async function stopAllProcesses(): Promise<void> {
  await Promise.all([...running].map((managed) => managed.stop()));
  for (const teardown of teardowns.splice(0)) await teardown();
}

/**
 * Builds when a needed dist file is missing or dist is older than the sources it is compiled
 * from (tsconfig.build.json's file list), never otherwise. Never removes dist (other processes
 * may be running from it): `tsc` overwrites in place, then `tsc-alias` rewrites the paths. A lock
 * directory keeps two test files (jest workers) from compiling at once.
 */
export function ensureBuilt(files: readonly string[]): void {
  if (!needsBuild(files)) return;
  const lock = join(
    tmpdir(),
    `cluster-sync-build-${createHash('sha1').update(REPO_ROOT).digest('hex').slice(0, 12)}.lock`,
  );
  const deadline = Date.now() + 600_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (isStaleLock(lock)) {
        rmdirSync(lock);
        continue;
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for the build lock ${lock}`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    }
  }
  try {
    // Another test file may have built while this one waited for the lock.
    if (!needsBuild(files)) return;
    const output: string[] = [];
    for (const tool of ['tsc', 'tsc-alias']) {
      const result = spawnSync('npx', ['--no-install', tool, '-p', 'tsconfig.build.json'], {
        cwd: REPO_ROOT,
        stdio: 'pipe',
        encoding: 'utf8',
        timeout: 300_000,
      });
      output.push(`${tool} exit ${result.status}:\n${result.stdout}${result.stderr}`);
    }
    const missing = files.filter((file) => !existsSync(join(REPO_ROOT, file)));
    if (missing.length > 0) {
      throw new Error(`the build did not produce ${missing.join(', ')}:\n${output.join('\n')}`);
    }
  } finally {
    rmdirSync(lock);
  }
}

function isStaleLock(lock: string): boolean {
  try {
    return Date.now() - statSync(lock).mtimeMs > 600_000;
  } catch {
    return false; // released meanwhile: retry mkdir
  }
}

function needsBuild(files: readonly string[]): boolean {
  if (!files.every((file) => existsSync(join(REPO_ROOT, file)))) return true;
  for (const source of buildSources()) {
    const output = join(REPO_ROOT, 'dist', relative(REPO_ROOT, source).replace(/\.ts$/, '.js'));
    if (!existsSync(output) || statSync(output).mtimeMs < statSync(source).mtimeMs) return true;
  }
  return false;
}

/** The .ts files tsconfig.build.json compiles (declaration files emit nothing). */
function buildSources(): string[] {
  const configPath = join(REPO_ROOT, 'tsconfig.build.json');
  const { config } = ts.readConfigFile(configPath, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, REPO_ROOT, undefined, configPath);
  return parsed.fileNames.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'));
}

export interface EmulatorOptions {
  /** Replica-set name (hello setName); default rs0. */
  name?: string;
  /** `name:password:role[,role...]` entries; any user turns authentication on. */
  users?: readonly string[];
  /** Oplog entries kept (the change-stream window). */
  history?: number;
}

/** Starts an emulated replica set with the built CLI and returns its connection string. */
export async function startEmulatorReplicaSet(
  options: EmulatorOptions = {},
): Promise<{ uri: string; process: ManagedProcess }> {
  const args = ['dist/libs/mongo-emulator/src/cli.js', '--topology', 'replset', '--port', '0'];
  if (options.name) args.push('--name', options.name);
  if (options.history !== undefined) args.push('--history', String(options.history));
  for (const user of options.users ?? []) args.push('--user', user);
  const emulator = spawnProcess('node', args);
  const line = await emulator.waitForJsonLine((record) => typeof record.uri === 'string');
  return { uri: line.uri as string, process: emulator };
}

/** Polls until `probe` returns a value, for endpoints that answer 503 while initializing. */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(
    `condition not met within ${timeoutMs} ms${lastError ? `: ${String(lastError)}` : ''}`,
  );
}
