import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';

/** A child process started by a script, with its first JSON line of stdout. */
export interface Started<T> {
  child: ChildProcess;
  firstLine: T;
  stop(): Promise<void>;
}

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
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`process did not start within ${timeoutMs} ms: ${stderr.trim()}`));
    }, timeoutMs);
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
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
      lines.removeAllListeners('line');
      child.stdout?.resume();
      resolve({ child, firstLine: parsed, stop: () => stopProcess(child) });
    });
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
