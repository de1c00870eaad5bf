/**
 * The main job on an embedded default: a sharded → sharded migration driven through the
 * coordinator. Two emulated sharded clusters (2 source shards, 3 destination shards), a
 * redis-server, one worker per source shard and a coordinator; sharded (range and hashed) and
 * unsharded collections; an application writing to every shard during the sync; commit;
 * verification through the routers.
 *
 *   npm run demo            (builds, then runs this)
 *
 * Exit code 0 only when the destination equals the source after commit.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { Int32, Long, MaxKey, MongoClient } from 'mongodb';
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
  type DemoProgress,
} from './lib/demo-api';
import { freePort, startNodeProcess, startProcess, type Started } from './lib/processes';
import { loadSampleStore } from './lib/sample-data';

const DIST = resolve(__dirname, '..');
const EMULATOR = resolve(DIST, 'libs/mongo-emulator/src/cli.js');
const WORKER = resolve(DIST, 'apps/worker/src/main.js');
const COORDINATOR = resolve(DIST, 'apps/coordinator/src/main.js');
const SYNC_USER = { name: 'syncer', password: 'demo-sync-pw' };
const APP_USER = { name: 'app', password: 'demo-app-pw' };
const SIZE = { customers: 5_000, orders: 20_000, products: 1_000 };

interface ShardedLine {
  uri: string;
  shards: Array<{ _id: string; uri: string }>;
}

const started: Array<Started<unknown>> = [];

async function main(): Promise<void> {
  const t0 = Date.now();
  const redisServer = findRedis();
  if (!redisServer) {
    process.stderr.write(
      'demo needs redis-server on PATH: install it (Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis), or run `npm run demo -- --replica-set`.\n',
    );
    process.exitCode = 1;
    return;
  }
  say('Starting two emulated sharded clusters (source: 2 shards, destination: 3 shards)…');
  const users = [
    '--user',
    `${SYNC_USER.name}:${SYNC_USER.password}:root`,
    '--user',
    `${APP_USER.name}:${APP_USER.password}:readWriteAnyDatabase`,
  ];
  const source = await startNodeProcess<ShardedLine>([
    EMULATOR,
    ...['--topology', 'sharded', '--shards', '2', '--name', 'src', '--port', '0', ...users],
  ]);
  source.label = 'source emulator';
  started.push(source);
  const destination = await startNodeProcess<ShardedLine>([
    EMULATOR,
    ...['--topology', 'sharded', '--shards', '3', '--name', 'dst', '--port', '0', ...users],
  ]);
  destination.label = 'destination emulator';
  started.push(destination);
  const redisPort = await freePort();
  const redis = await startProcess(
    redisServer,
    ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    /Ready to accept connections/,
  );
  started.push(redis);
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  say(`redis-server on port ${redisPort}.`);

  const sourceUri = withUser(source.firstLine.uri, SYNC_USER);
  const destinationUri = withUser(destination.firstLine.uri, SYNC_USER);
  const appClient = await MongoClient.connect(withUser(source.firstLine.uri, APP_USER));
  const admin = await MongoClient.connect(sourceUri);
  const verifyDestination = await MongoClient.connect(destinationUri);
  const writer = new BackgroundWriter(appClient, SIZE.customers);
  try {
    say(
      `Loading the sample store (${SIZE.customers} customers, ${SIZE.orders} orders, ${SIZE.products} products, a capped log, a view)…`,
    );
    const loaded = await loadSampleStore(appClient, SIZE);
    await shardSampleStore(
      admin,
      source.firstLine.shards.map((s) => s._id),
    );
    say(
      `Loaded ${loaded} documents; shop.customers sharded on {_id: "hashed"}, shop.orders on {customerId: 1}, both spread over both source shards.`,
    );

    const apiPort = await freePort();
    const workers = source.firstLine.shards.map((s) => s._id);
    for (const id of workers) {
      const port = await freePort();
      const worker = await startNodeProcess<Record<string, unknown>>([
        WORKER,
        ...['--cluster0', sourceUri, '--cluster1', destinationUri],
        ...['--id', id, '--redis', redisUrl, '--port', String(port)],
      ]);
      worker.label = `worker ${id}`;
      started.push(worker);
      await waitUntilReady(`http://127.0.0.1:${port}/api/v1`);
      say(`Worker for shard ${id} on port ${port} (joined through Redis).`);
    }
    const coordinator = await startNodeProcess<Record<string, unknown>>([
      COORDINATOR,
      ...['--cluster0', sourceUri, '--cluster1', destinationUri],
      ...['--redis', redisUrl, '--port', String(apiPort)],
    ]);
    coordinator.label = 'coordinator';
    started.push(coordinator);
    const api = `http://127.0.0.1:${apiPort}/api/v1`;
    await waitUntilReady(api);
    say(`Coordinator API on ${api} — every command below goes to it alone.`);
    say(`Dashboard: http://127.0.0.1:${apiPort}/ (the coordinator's, live until the summary)`);
    await waitForWorkers(api, workers.length);

    writer.start();
    say('Application writer started on the source (every shard).');
    await call(api, 'start', {
      source: 'cluster0',
      destination: 'cluster1',
      enableUserWriteBlocking: true,
    });
    say('POST /start → RUNNING on every worker');

    let progress = await waitFor(api, (p) => p.canCommit, 180_000, renderInstances);
    await sleep(1500);
    progress = await getProgress(api);
    say(
      `\ncanCommit is true on every worker (lag ${progress.lagTimeSeconds}s, ${progress.totalEventsApplied} events applied). Committing…`,
    );
    await commitWhenReady(api, renderInstances);
    progress = await waitFor(api, (p) => p.state === 'COMMITTED', 120_000, renderInstances);
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

    say('Verifying through the routers: every namespace, document (as BSON bytes) and index…');
    const report = await compareClusters(admin, verifyDestination, { compareUnique: true });
    const sharding = await verifyDestination
      .db('config')
      .collection('collections')
      .find({ _id: { $in: ['shop.customers', 'shop.orders'] } as never })
      .toArray();
    const ok = report.differences.length === 0 && sharding.length === 2;
    const instances = (progress.instances as Array<{ progress?: DemoProgress }> | undefined) ?? [];
    const coordinating = instances.find((x) => x.progress?.coordinatorID)?.progress?.coordinatorID;
    saySummary({
      report,
      writer: writer.stats,
      eventsApplied: progress.totalEventsApplied,
      startedAt: t0,
      ok,
      before: [
        ['workers', `${workers.join(', ')} (coordinating worker: ${String(coordinating ?? '?')})`],
      ],
      after: [
        [
          'destination sharded',
          sharding.map((c) => `${String(c._id)} ${JSON.stringify(c.key)}`).join(', '),
        ],
      ],
    });
  } finally {
    await writer.stop();
    await Promise.all([appClient.close(), admin.close(), verifyDestination.close()]);
  }
}

/**
 * Shards the store's two big collections and spreads each over both source shards: customers
 * on a hashed _id (split at hash 0), orders on customerId (split in the middle).
 */
async function shardSampleStore(client: MongoClient, shards: string[]): Promise<void> {
  const admin = client.db('admin');
  const shop = client.db('shop');
  await shop.collection('customers').createIndex({ _id: 'hashed' }, { name: '_id_hashed' });
  await admin.command({ shardCollection: 'shop.customers', key: { _id: 'hashed' } });
  await admin.command({ split: 'shop.customers', middle: { _id: Long.ZERO } });
  await admin.command({ shardCollection: 'shop.orders', key: { customerId: 1 } });
  const middle = new Int32(Math.floor(SIZE.customers / 2));
  await admin.command({ split: 'shop.orders', middle: { customerId: middle } });
  const primary = (await client
    .db('config')
    .collection('databases')
    .findOne({ _id: 'shop' as never }))!.primary as string;
  const other = shards.find((s) => s !== primary)!;
  await admin.command({
    moveChunk: 'shop.customers',
    bounds: [{ _id: Long.ZERO }, { _id: new MaxKey() }],
    to: other,
  });
  await admin.command({ moveChunk: 'shop.orders', find: { customerId: middle }, to: other });
}

/** The coordinator refuses commands until every source shard's worker registered. */
async function waitForWorkers(api: string, count: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const p = await getProgress(api).catch(() => null);
    const instances = (p?.instances as unknown[] | undefined) ?? [];
    if (instances.length >= count) return;
    if (Date.now() > deadline)
      throw new Error(`only ${instances.length} of ${count} workers registered`);
    await sleep(200);
  }
}

/** One line: the whole sync, then a small bar per worker. */
function renderInstances(p: DemoProgress): string {
  const pct = (c: DemoProgress['collectionCopy'] | undefined) =>
    c && c.estimatedTotalBytes > 0
      ? Math.min(100, (100 * c.estimatedCopiedBytes) / c.estimatedTotalBytes)
      : 0;
  const bar = (v: number, width: number) => {
    const filled = Math.round((v / 100) * width);
    return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
  };
  const instances = ((p.instances as Array<Record<string, unknown>> | undefined) ?? []).map((i) => {
    const own = (i.progress ?? i) as DemoProgress;
    const id = String(i.id ?? i.syncID ?? own.syncID ?? '?');
    return `${id} ${bar(pct(own.collectionCopy), 10)} ${pct(own.collectionCopy).toFixed(0).padStart(3)}%${i.missing ? ' MISSING' : ''}`;
  });
  const lag = p.lagTimeSeconds === null ? '-' : `${p.lagTimeSeconds}s`;
  return `${bar(pct(p.collectionCopy), 20)} ${pct(p.collectionCopy).toFixed(1).padStart(5)}% ${p.state.padEnd(10)} lag ${lag.padEnd(4)} events ${p.totalEventsApplied ?? 0} | ${instances.join(' | ')}`;
}

function findRedis(): string | null {
  const found = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const path = found.stdout.trim();
  return found.status === 0 && path ? path : null;
}

export function runShardedDemo(): Promise<void> {
  return runDemo(main, started);
}
