import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

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
): ManagedProcess {
  const child = spawn(command, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const stdoutLines: string[] = [];
  const waiters = new Set<() => void>();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    const lines = out.split('\n');
    stdoutLines.splice(0, stdoutLines.length, ...lines.filter((line) => line.trim() !== ''));
    for (const wake of waiters) wake();
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));

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
    async waitForExit(timeoutMs = 30_000) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`process did not exit within ${timeoutMs} ms`)),
          timeoutMs,
        );
      });
      try {
        return await Promise.race([exited, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    async stop(signal = 'SIGTERM') {
      running.delete(managed);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      try {
        await managed.waitForExit(10_000);
      } catch {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
  running.add(managed);
  return managed;
}

/** Teardown: stops every process a test started and did not stop itself. */
export async function stopAllProcesses(): Promise<void> {
  await Promise.all([...running].map((managed) => managed.stop()));
}

/** Builds once when a needed dist file is missing (a fresh checkout), never otherwise. */
export function ensureBuilt(files: readonly string[]): void {
  if (files.every((file) => existsSync(join(REPO_ROOT, file)))) return;
  const result = spawnSync('npm', ['run', 'build'], {
    cwd: REPO_ROOT,
    stdio: 'pipe',
    encoding: 'utf8',
    timeout: 300_000,
  });
  const missing = files.filter((file) => !existsSync(join(REPO_ROOT, file)));
  if (missing.length > 0) {
    throw new Error(
      `npm run build did not produce ${missing.join(', ')}:\n${result.stdout}\n${result.stderr}`,
    );
  }
}

/** Starts an emulated replica set with the built CLI and returns its connection string. */
export async function startEmulatorReplicaSet(): Promise<{ uri: string; process: ManagedProcess }> {
  const emulator = spawnProcess('node', [
    'dist/libs/mongo-emulator/src/cli.js',
    '--topology',
    'replset',
    '--port',
    '0',
  ]);
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

function parseJsonLine(line: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
