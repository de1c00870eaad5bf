/**
 * The replica-set demo: a complete replica set → replica set migration between two emulated
 * clusters, while an application keeps writing to the source.
 *
 *   npm run demo -- --replica-set
 *
 * Exit code 0 only when the destination equals the source after commit.
 */
import { resolve } from 'node:path';
import { MongoClient } from 'mongodb';
import { startNodeProcess, type Started } from './lib/processes';
import { loadSampleStore } from './lib/sample-data';
import { BackgroundWriter } from './lib/background-writer';
import { compareClusters } from './lib/compare-clusters';
import {
  call,
  commitWhenReady,
  runDemo,
  saySummary,
  getProgress,
  say,
  sleep,
  waitFor,
  waitUntilReady,
  withUser,
} from './lib/demo-api';

const DIST = resolve(__dirname, '..');
const EMULATOR = resolve(DIST, 'libs/mongo-emulator/src/cli.js');
const WORKER = resolve(DIST, 'apps/worker/src/main.js');
const SYNC_USER = { name: 'syncer', password: 'demo-sync-pw' };
const APP_USER = { name: 'app', password: 'demo-app-pw' };
const SIZE = { customers: 5_000, orders: 20_000, products: 1_000 };

const started: Array<Started<unknown>> = [];

async function main(): Promise<void> {
  const t0 = Date.now();
  say('Starting two emulated replica sets (authentication on)…');
  const users = [
    `--user`,
    `${SYNC_USER.name}:${SYNC_USER.password}:root`,
    `--user`,
    `${APP_USER.name}:${APP_USER.password}:readWriteAnyDatabase`,
  ];
  const source = await startNodeProcess<{ uri: string }>([
    EMULATOR,
    '--topology',
    'replset',
    '--name',
    'source',
    '--port',
    '0',
    ...users,
  ]);
  const destination = await startNodeProcess<{ uri: string }>([
    EMULATOR,
    '--topology',
    'replset',
    '--name',
    'dest',
    '--port',
    '0',
    ...users,
  ]);
  started.push(source, destination);

  const appClient = await MongoClient.connect(withUser(source.firstLine.uri, APP_USER));
  const verifySource = await MongoClient.connect(withUser(source.firstLine.uri, SYNC_USER));
  const verifyDestination = await MongoClient.connect(
    withUser(destination.firstLine.uri, SYNC_USER),
  );
  const writer = new BackgroundWriter(appClient, SIZE.customers);
  try {
    say(
      `Loading the sample store (${SIZE.customers} customers, ${SIZE.orders} orders, ${SIZE.products} products, a capped log, a view)…`,
    );
    const loaded = await loadSampleStore(appClient, SIZE);
    say(`Loaded ${loaded} documents.`);

    const port = 27182 + Math.floor(Math.random() * 1000);
    const worker = await startNodeProcess<Record<string, unknown>>([
      WORKER,
      '--cluster0',
      withUser(source.firstLine.uri, SYNC_USER),
      '--cluster1',
      withUser(destination.firstLine.uri, SYNC_USER),
      '--port',
      String(port),
    ]);
    worker.label = 'worker';
    started.push(worker);
    const api = `http://127.0.0.1:${port}/api/v1`;
    say(`Worker listening on ${api}`);
    say(`Dashboard: http://127.0.0.1:${port}/ (live until the summary)`);
    await waitUntilReady(api);

    writer.start();
    say('Application writer started on the source.');

    await call(api, 'start', {
      source: 'cluster0',
      destination: 'cluster1',
      enableUserWriteBlocking: true,
    });
    say('POST /start → RUNNING');

    let progress = await waitFor(api, (p) => p.canCommit, 120_000);
    await sleep(1500); // let a few more change events flow, as an operator would watch the lag settle
    progress = await getProgress(api);
    say(
      `\ncanCommit is true (lag ${progress.lagTimeSeconds}s, ${progress.totalEventsApplied} events applied). Committing…`,
    );
    await commitWhenReady(api);
    progress = await waitFor(api, (p) => p.state === 'COMMITTED', 60_000);
    await writer.stop();
    say(
      `\nCOMMITTED: canWrite=${progress.canWrite}, info="${progress.info}", lag ${progress.lagTimeSeconds}s.`,
    );
    const downtime = (progress.commit as { cutoverSeconds?: number } | undefined)?.cutoverSeconds;
    if (downtime !== undefined) {
      say(
        `Measured downtime: ${downtime.toFixed(2)} s from the source refusing writes to the destination accepting them.`,
      );
    }
    say(
      `The source now refuses the application's writes (${writer.stats.lastError ?? 'no write was attempted after commit'}).`,
    );

    say('Verifying: every namespace, document (as BSON bytes) and index…');
    const report = await compareClusters(verifySource, verifyDestination, { compareUnique: true });
    const ok = report.differences.length === 0;
    saySummary({
      report,
      writer: writer.stats,
      eventsApplied: progress.totalEventsApplied,
      startedAt: t0,
      ok,
    });
  } finally {
    await writer.stop();
    await Promise.all([appClient.close(), verifySource.close(), verifyDestination.close()]);
  }
}

export function runReplicaSetDemo(): Promise<void> {
  return runDemo(main, started);
}
