import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';

/** A child process started by a script, with its first JSON line of stdout. */
export interface Started<T> {
  child: ChildProcess;
  firstLine: T;
  stop(): Promise<void>;
  /** The last lines the process printed (stdout and stderr), for a failure report. */
  recentOutput(): string[];
  /** What the process is, in a failure report ("worker src-shard0"). */
  label?: string;
}

/** How many of a process's last output lines are kept for a failure report. */
const KEPT_LINES = 40;

/**
 * Spawns `node <args>` and resolves with the first stdout line that parses as JSON.
 * stderr is collected so a failure to start explains itself.
 */
export function startNodeProcess<T>(args: string[], timeoutMs = 30_000): Promise<Started<T>> {
  return startProcess<T>(process.execPath, args, undefined, timeoutMs);
}

/**
 * Spawns `command <args>` and resolves once a stdout line matches `ready` (that line is
 * `firstLine`), or — without `ready` — with the first line that parses as JSON.
 */
export function startProcess<T = string>(
  command: string,
  args: string[],
  ready?: RegExp,
  timeoutMs = 30_000,
): Promise<Started<T>> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  const recent: string[] = [];
  const keep = (line: string): void => {
    recent.push(line.length > 2_000 ? `${line.slice(0, 2_000)}…` : line);
    if (recent.length > KEPT_LINES) recent.shift();
  };
  child.stderr?.on('data', (chunk: Buffer) => {
    if (stderr.length < 64 * 1024) stderr += chunk.toString();
  });
  createInterface({ input: child.stderr! }).on('line', keep);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`process did not start within ${timeoutMs} ms: ${stderr.trim()}`));
    }, timeoutMs);
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', keep);
    const onLine = (line: string): void => {
      let parsed: T;
      if (ready) {
        if (!ready.test(line)) return;
        parsed = line as T;
      } else {
        try {
          parsed = JSON.parse(line) as T;
        } catch {
          return;
        }
      }
      clearTimeout(timer);
      lines.off('line', onLine);
      resolve({
        child,
        firstLine: parsed,
        stop: () => stopProcess(child),
        recentOutput: () => [...recent],
      });
    };
    lines.on('line', onLine);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`process exited with ${code} before starting: ${stderr.trim()}`));
    });
  });
}

export function stopProcess(
  child: ChildProcess,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill(signal);
  });
}

/** Resolves with how `child` ended; rejects when it is still running after `timeoutMs`. */
export function waitForExit(
  child: ChildProcess,
  timeoutMs = 30_000,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      reject(new Error(`process did not exit within ${timeoutMs} ms`));
    }, timeoutMs);
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      clearTimeout(timer);
      resolve({ code, signal });
    };
    child.once('exit', onExit);
  });
}

/** A stdout line as a JSON object (a log record, the emulator's `{"uri": ...}`), else null. */
export function parseJsonLine(line: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** A connection string with `user:password` and authSource=admin (the emulator keeps users on admin). */
export function withCredentials(uri: string, user: string, password: string): string {
  const url = new URL(uri);
  url.username = encodeURIComponent(user);
  url.password = encodeURIComponent(password);
  url.searchParams.set('authSource', 'admin');
  return url.toString();
}

/** A TCP port free on the loopback interface right now. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as AddressInfo).port;
      server.close(() => resolvePort(port));
    });
  });
}
