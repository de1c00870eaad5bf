/** What both demos share: the worker/coordinator HTTP API as an operator drives it. */
import type { ChildProcess } from 'node:child_process';

export interface DemoProgress {
  state: string;
  canCommit: boolean;
  canWrite: boolean | null;
  info: string | null;
  lagTimeSeconds: number | null;
  totalEventsApplied: number | null;
  collectionCopy: { estimatedTotalBytes: number; estimatedCopiedBytes: number } | null;
  [extra: string]: unknown;
}

interface ProgressBody {
  success: boolean;
  progress?: DemoProgress;
  error?: string;
  errorDescription?: string;
}

export function withUser(uri: string, user: { name: string; password: string }): string {
  const url = new URL(uri);
  url.username = user.name;
  url.password = user.password;
  url.searchParams.set('authSource', 'admin');
  return url.toString();
}

/** POSTs a command; 503 answers (not ready, no leader yet) are retried for up to 60 s. */
export async function call(api: string, op: string, body: object): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await fetch(`${api}/${op}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as {
      success: boolean;
      error?: string;
      errorDescription?: string;
    };
    if (json.success) return;
    if (res.status !== 503 || Date.now() > deadline) {
      throw new Error(`${op} failed: ${json.error}: ${json.errorDescription}`);
    }
    await sleep(500);
  }
}

/**
 * commit, as an operator does it: canCommit can drop again between reading it and sending the
 * command (lag rose with the writer's load) — then wait for it once more and resend.
 */
export async function commitWhenReady(
  api: string,
  show: (p: DemoProgress) => string = render,
): Promise<void> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      await call(api, 'commit', {});
      return;
    } catch (error) {
      if (!/CommitNotReady/.test(String(error)) || Date.now() > deadline) throw error;
      say('\ncanCommit dropped before the commit arrived (lag rose); waiting for it again…');
      await waitFor(api, (p) => p.canCommit, 120_000, show);
    }
  }
}

export async function getProgress(api: string): Promise<DemoProgress> {
  const res = await fetch(`${api}/progress`);
  const json = (await res.json()) as ProgressBody;
  if (!json.success || !json.progress)
    throw new Error(`progress failed: ${json.error}: ${json.errorDescription}`);
  return json.progress;
}

/** A freshly started worker answers NotReady (503) while it restores state; retrying is safe. */
export async function waitUntilReady(api: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await fetch(`${api}/progress`);
    if (res.ok) return;
    if (Date.now() > deadline) throw new Error(`worker not ready: ${await res.text()}`);
    await sleep(200);
  }
}

export async function waitFor(
  api: string,
  done: (p: DemoProgress) => boolean,
  timeoutMs: number,
  show: (p: DemoProgress) => string = render,
): Promise<DemoProgress> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    const p = await getProgress(api);
    last = show(p);
    if (process.stdout.isTTY) process.stdout.write(`\r${last}`);
    else if (Math.random() < 0.25) say(last);
    if (done(p)) {
      if (!process.stdout.isTTY) say(last);
      return p;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting; last progress: ${last}`);
    await sleep(250);
  }
}

/** One progress line: a copy bar, state, info, lag and events. */
export function render(p: DemoProgress): string {
  const copy = p.collectionCopy;
  const pct =
    copy && copy.estimatedTotalBytes > 0
      ? Math.min(100, (100 * copy.estimatedCopiedBytes) / copy.estimatedTotalBytes)
      : 0;
  const width = 30;
  const filled = Math.round((pct / 100) * width);
  const bar = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
  const lag = p.lagTimeSeconds === null ? '-' : `${p.lagTimeSeconds}s`;
  return `${bar} ${pct.toFixed(1).padStart(5)}%  ${p.state.padEnd(10)} ${String(p.info ?? '').padEnd(26)} lag ${lag.padEnd(4)} events ${p.totalEventsApplied ?? 0}`;
}

export function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** The closing summary both demos print; sets the exit code (0 only when `ok`). */
export function saySummary(summary: {
  report: {
    namespaces: number;
    documents: number;
    indexes: number;
    differences: Array<{ namespace: string; problem: string }>;
  };
  writer: { inserts: number; updates: number; deletes: number };
  eventsApplied: number | null;
  startedAt: number;
  ok: boolean;
  /** Extra lines (`label : value`) before and after the comparison figures. */
  before?: Array<[string, string]>;
  after?: Array<[string, string]>;
}): void {
  const line = (label: string, value: string) => say(`  ${label.padEnd(20)}: ${value}`);
  const { report, writer } = summary;
  say('');
  say('Summary');
  for (const [label, value] of summary.before ?? []) line(label, value);
  line('namespaces compared', String(report.namespaces));
  line('documents compared', String(report.documents));
  line('indexes compared', String(report.indexes));
  for (const [label, value] of summary.after ?? []) line(label, value);
  line(
    'writer during sync',
    `${writer.inserts} inserts, ${writer.updates} updates, ${writer.deletes} deletes`,
  );
  line('events applied', String(summary.eventsApplied));
  line('elapsed', `${((Date.now() - summary.startedAt) / 1000).toFixed(1)} s`);
  line('result', summary.ok ? 'destination equals source' : 'DIFFERENCES FOUND');
  for (const d of report.differences) say(`    - ${d.namespace}: ${d.problem}`);
  process.exitCode = summary.ok ? 0 : 1;
}

/**
 * Runs a demo: a failure is one line on stderr and exit code 1, then the last lines each labelled
 * process (workers, coordinator) printed, so the failure explains itself; started processes stop.
 */
export function runDemo(
  main: () => Promise<void>,
  started: Array<{
    stop(): Promise<void>;
    label?: string;
    recentOutput?(): string[];
    child?: ChildProcess;
  }>,
): Promise<void> {
  // A worker, coordinator or emulator that dies mid-demo fails it at once, not at a timeout.
  let watch: NodeJS.Timeout | undefined;
  const died = new Promise<never>((_, reject) => {
    watch = setInterval(() => {
      const dead = started.find(
        (p) => p.child && (p.child.exitCode !== null || p.child.signalCode !== null),
      );
      if (!dead) return;
      const how = dead.child!.signalCode ?? `code ${String(dead.child!.exitCode)}`;
      reject(new Error(`${dead.label ?? 'a started process'} exited (${how}) while the demo ran`));
    }, 500);
  });
  return Promise.race([main(), died])
    .catch((err: unknown) => {
      process.stderr.write(`demo failed: ${err instanceof Error ? err.message : String(err)}\n`);
      for (const p of started) {
        if (!p.label || !p.recentOutput) continue;
        const lines = p.recentOutput();
        process.stderr.write(`--- last ${lines.length} lines of ${p.label} ---\n`);
        for (const line of lines) process.stderr.write(`${line}\n`);
      }
      process.exitCode = 1;
    })
    .finally(async () => {
      clearInterval(watch);
      for (const p of started.reverse()) await p.stop();
    });
}
