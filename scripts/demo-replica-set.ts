/**
 * The main job on an embedded default: a complete replica set → replica set migration between
 * two emulated clusters, while an application keeps writing to the source.
 *
 *   npm run demo            (builds, then runs this file)
 *
 * Exit code 0 only when the destination equals the source after commit.
 */
import { resolve } from 'node:path';
import { MongoClient } from 'mongodb';
import { startNodeProcess, type Started } from './lib/processes';
import { loadSampleStore } from './lib/sample-data';
import { BackgroundWriter } from './lib/background-writer';
import { compareClusters } from './lib/compare-clusters';

const DIST = resolve(__dirname, '..');
const EMULATOR = resolve(DIST, 'libs/mongo-emulator/src/cli.js');
const WORKER = resolve(DIST, 'apps/worker/src/main.js');
const SYNC_USER = { name: 'syncer', password: 'demo-sync-pw' };
const APP_USER = { name: 'app', password: 'demo-app-pw' };
const SIZE = { customers: 5_000, orders: 20_000, products: 1_000 };

interface ProgressBody {
  success: boolean;
  progress?: {
    state: string;
    canCommit: boolean;
    canWrite: boolean | null;
    info: string | null;
    lagTimeSeconds: number | null;
    totalEventsApplied: number | null;
    collectionCopy: { estimatedTotalBytes: number; estimatedCopiedBytes: number } | null;
  };
  error?: string;
  errorDescription?: string;
}

const started: Array<Started<unknown>> = [];

async function main(): Promise<void> {
  const t0 = Date.now();
  say('Starting two emulated replica sets (authentication on)…');
  const users = [`--user`, `${SYNC_USER.name}:${SYNC_USER.password}:root`, `--user`, `${APP_USER.name}:${APP_USER.password}:readWriteAnyDatabase`];
  const source = await startNodeProcess<{ uri: string }>([EMULATOR, '--topology', 'replset', '--name', 'source', '--port', '0', ...users]);
  const destination = await startNodeProcess<{ uri: string }>([EMULATOR, '--topology', 'replset', '--name', 'dest', '--port', '0', ...users]);
  started.push(source, destination);

  const appClient = await MongoClient.connect(withUser(source.firstLine.uri, APP_USER));
  const verifySource = await MongoClient.connect(withUser(source.firstLine.uri, SYNC_USER));
  const verifyDestination = await MongoClient.connect(withUser(destination.firstLine.uri, SYNC_USER));
  const writer = new BackgroundWriter(appClient, SIZE.customers);
  try {
    say(`Loading the sample store (${SIZE.customers} customers, ${SIZE.orders} orders, ${SIZE.products} products, a capped log, a view)…`);
    const loaded = await loadSampleStore(appClient, SIZE);
    say(`Loaded ${loaded} documents.`);

    const port = 27182 + Math.floor(Math.random() * 1000);
    const worker = await startNodeProcess<Record<string, unknown>>([
      WORKER,
      '--cluster0', withUser(source.firstLine.uri, SYNC_USER),
      '--cluster1', withUser(destination.firstLine.uri, SYNC_USER),
      '--port', String(port),
    ]);
    started.push(worker);
    const api = `http://127.0.0.1:${port}/api/v1`;
    say(`Worker listening on ${api}`);
    await waitUntilReady(api);

    writer.start();
    say('Application writer started on the source.');

    await call(api, 'start', { source: 'cluster0', destination: 'cluster1', enableUserWriteBlocking: true });
    say('POST /start → RUNNING');

    let progress = await waitFor(api, (p) => p.canCommit, 120_000);
    await sleep(1500); // let a few more change events flow, as an operator would watch the lag settle
    progress = await getProgress(api);
    say(`\ncanCommit is true (lag ${progress.lagTimeSeconds}s, ${progress.totalEventsApplied} events applied). Committing…`);
    await call(api, 'commit', {});
    progress = await waitFor(api, (p) => p.state === 'COMMITTED', 60_000);
    await writer.stop();
    say(`\nCOMMITTED: canWrite=${progress.canWrite}, info="${progress.info}", lag ${progress.lagTimeSeconds}s.`);
    say(`The source now refuses the application's writes (${writer.stats.lastError ?? 'no write was attempted after commit'}).`);

    say('Verifying: every namespace, document (as BSON bytes) and index…');
    const report = await compareClusters(verifySource, verifyDestination, { compareUnique: true });
    const ok = report.differences.length === 0;
    say('');
    say('Summary');
    say(`  namespaces compared : ${report.namespaces}`);
    say(`  documents compared  : ${report.documents}`);
    say(`  indexes compared    : ${report.indexes}`);
    say(`  writer during sync  : ${writer.stats.inserts} inserts, ${writer.stats.updates} updates, ${writer.stats.deletes} deletes`);
    say(`  events applied      : ${progress.totalEventsApplied}`);
    say(`  elapsed             : ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    say(`  result              : ${ok ? 'destination equals source' : 'DIFFERENCES FOUND'}`);
    for (const d of report.differences) say(`    - ${d.namespace}: ${d.problem}`);
    process.exitCode = ok ? 0 : 1;
  } finally {
    await writer.stop();
    await Promise.all([appClient.close(), verifySource.close(), verifyDestination.close()]);
  }
}

function withUser(uri: string, user: { name: string; password: string }): string {
  const url = new URL(uri);
  url.username = user.name;
  url.password = user.password;
  url.searchParams.set('authSource', 'admin');
  return url.toString();
}

async function call(api: string, op: string, body: object): Promise<void> {
  const res = await fetch(`${api}/${op}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await res.json()) as { success: boolean; error?: string; errorDescription?: string };
  if (!json.success) throw new Error(`${op} failed: ${json.error}: ${json.errorDescription}`);
}

async function getProgress(api: string): Promise<NonNullable<ProgressBody['progress']>> {
  const res = await fetch(`${api}/progress`);
  const json = (await res.json()) as ProgressBody;
  if (!json.success || !json.progress) throw new Error(`progress failed: ${json.error}: ${json.errorDescription}`);
  return json.progress;
}

/** A freshly started worker answers NotReady (503) while it restores state; retrying is safe. */
async function waitUntilReady(api: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await fetch(`${api}/progress`);
    if (res.ok) return;
    if (Date.now() > deadline) throw new Error(`worker not ready: ${await res.text()}`);
    await sleep(200);
  }
}

async function waitFor(
  api: string,
  done: (p: NonNullable<ProgressBody['progress']>) => boolean,
  timeoutMs: number,
): Promise<NonNullable<ProgressBody['progress']>> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    const p = await getProgress(api);
    last = render(p);
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

function render(p: NonNullable<ProgressBody['progress']>): string {
  const copy = p.collectionCopy;
  const pct = copy && copy.estimatedTotalBytes > 0 ? Math.min(100, (100 * copy.estimatedCopiedBytes) / copy.estimatedTotalBytes) : 0;
  const width = 30;
  const filled = Math.round((pct / 100) * width);
  const bar = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
  const lag = p.lagTimeSeconds === null ? '-' : `${p.lagTimeSeconds}s`;
  return `${bar} ${pct.toFixed(1).padStart(5)}%  ${p.state.padEnd(10)} ${String(p.info ?? '').padEnd(26)} lag ${lag.padEnd(4)} events ${p.totalEventsApplied ?? 0}`;
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`demo failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const p of started.reverse()) await p.stop();
  });
