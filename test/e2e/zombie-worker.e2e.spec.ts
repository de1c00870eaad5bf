import { Int32, Timestamp, type Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { stopAllProcesses } from '../helpers/processes';
import { describeOn, onRealClusters } from '../helpers/real-clusters';
import {
  APP,
  SYNCER,
  buildOnce,
  closeClients,
  connect,
  outputOf,
  sleep,
  startShardedCluster,
  startWorker,
  steps,
  type ShardedCluster,
  type StartedWorker,
} from './support/harness';

const START = {
  source: 'cluster0',
  destination: 'cluster1',
  enableUserWriteBlocking: true,
};

/** Namespaces of the sync's own metadata and the servers' own: not user data. */
const NOT_USER = /^(sync_reserved_for_internal_use|admin|config|local)\.|^$/;

/**
 * A zombie worker (issue: fencing on the destination): the worker of one source shard is paused
 * (SIGSTOP, as a frozen VM) past its claim while the application keeps writing; a second process
 * with the same `--id` takes the shard over and carries the sync on. When the first one is
 * resumed (SIGCONT) it must write nothing more to the destination — it finds its lease gone and
 * stops with ShardClaimLost — and the sync commits byte-equal.
 */
describeOn('shardedClusters')('a worker paused past its claim and resumed (zombie)', () => {
  let source: ShardedCluster;
  let destination: ShardedCluster;
  let src: MongoClient;
  let dst: MongoClient;
  let app: MongoClient;
  const step = steps(180_000);
  const workers = new Map<string, StartedWorker>();
  let ids: [string, string];
  let zombie: StartedWorker;
  let writing = false;
  let written = 0;
  let writer: Promise<void> = Promise.resolve();

  const launch = async (id: string): Promise<StartedWorker> => {
    const worker = await startWorker(source.uriFor(SYNCER), destination.uriFor(SYNCER), { id });
    workers.set(id, worker);
    return worker;
  };

  beforeAll(async () => {
    buildOnce();
    [source, destination] = await Promise.all([
      startShardedCluster('src', 2, true),
      startShardedCluster('dst', 2, true),
    ]);
    [src, dst, app] = await Promise.all([
      connect(source.uriFor(SYNCER)),
      connect(destination.uriFor(SYNCER)),
      connect(source.uriFor(APP)),
    ]);
    ids = source.shards.map((s) => s._id).sort() as [string, string];
  }, 180_000);

  afterAll(async () => {
    writing = false;
    await writer.catch(() => undefined);
    await closeClients();
    await stopAllProcesses();
  }, 60_000);

  step('both shards sync, each with its own worker', async () => {
    await src.db('admin').command({ shardCollection: 'shop.items', key: { _id: 'hashed' } });
    await app
      .db('shop')
      .collection<Document>('items')
      .insertMany(Array.from({ length: 2_000 }, (_, i) => ({ _id: new Int32(i) as never, n: i })));
    for (const id of ids) await launch(id);
    for (const id of ids) await workers.get(id)!.api.expectSuccess('start', START);
    for (const id of ids) {
      await workers.get(id)!.api.waitFor('canCommit', (p) => p.canCommit === true, 90_000);
    }
    // The application writes on both shards from now on.
    writing = true;
    writer = (async () => {
      let i = 10_000;
      while (writing) {
        const items = app.db('shop').collection<Document>('items');
        await items.insertOne({ _id: new Int32(i) as never, n: i });
        await items.updateOne({ _id: new Int32(i % 2_000) as never }, { $inc: { n: 1 } });
        written += 2;
        i += 1;
        await sleep(20);
      }
    })();
  });

  step('the paused worker is replaced by a second process with the same --id', async () => {
    zombie = workers.get(ids[1])!;
    zombie.process.child.kill('SIGSTOP');
    // Past the claim's stale limit (10 s) by the destination's clock.
    await sleep(13_000);
    const successor = await launch(ids[1]);
    await successor.api.waitFor(
      'the successor took the shard over and caught up',
      (p) => p.state === 'RUNNING' && p.canCommit === true,
      90_000,
    );
  });

  step('resumed, the zombie writes nothing more and answers ShardClaimLost', async () => {
    writing = false;
    await writer;
    expect(written).toBeGreaterThan(100);
    // Let both live workers apply everything the application wrote.
    for (const id of ids) {
      await workers
        .get(id)!
        .api.waitFor(
          'caught up',
          (p) => p.canCommit === true && (p.lagTimeSeconds ?? 99) <= 1,
          60_000,
        );
    }
    await sleep(2_000);
    const reply = await dst.db('admin').command({ ping: 1 });
    const before = (reply.$clusterTime as { clusterTime: Timestamp }).clusterTime;

    zombie.process.child.kill('SIGCONT');
    // It finds its lease gone at once and says so: every call answers ShardClaimLost (the
    // process stays up so that an operator can read why; it writes nothing more).
    const deadline = Date.now() + 30_000;
    let answer = await zombie.api.progressResult();
    while (answer.body.error !== 'ShardClaimLost' && Date.now() < deadline) {
      await sleep(200);
      answer = await zombie.api.progressResult();
    }
    expect(answer.body).toMatchObject({ success: false, error: 'ShardClaimLost' });
    expect(outputOf(zombie)).toContain('this worker lost its shard; it stops writing');
    // Give it time to do anything it still would.
    await sleep(3_000);

    // Nothing reached a user collection after it resumed: the live workers had nothing left to
    // write, so any entry there would be the zombie's.
    if (!onRealClusters()) {
      for (const shard of destination.shards) {
        const direct = await connect(destination.shardUri(shard));
        const late = await direct
          .db('local')
          .collection('oplog.rs')
          .find({ ts: { $gt: before }, op: { $in: ['i', 'u', 'd'] } })
          .toArray();
        expect(late.filter((e) => !NOT_USER.test(String(e.ns)))).toEqual([]);
      }
    }
  });

  step('the sync commits byte-equal with the successor', async () => {
    const live = [workers.get(ids[0])!, workers.get(ids[1])!];
    for (const worker of live) await worker.api.expectSuccess('commit', {});
    for (const worker of live) {
      await worker.api.waitFor('COMMITTED', (p) => p.state === 'COMMITTED', 90_000);
    }
    const report = await compareClusters(src, dst, { databases: ['shop'] });
    expect(report.differences).toEqual([]);
    expect(report.documents).toBe(2_000 + written / 2);
  });
});
