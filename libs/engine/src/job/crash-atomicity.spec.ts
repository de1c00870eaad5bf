import { BSON, Int32 } from 'bson';
import type { StartRequest } from '@sync/contracts';
import { silentLogger } from '../ports/engine-logger';
import { FakeCluster, FakeDirectory, replicaSet } from '../testing/in-memory-clusters';
import { SyncJob } from './sync-job';

/**
 * Every multi-document change to job state must be atomic across a crash: a job store that
 * "crashes" between ANY two metadata writes (every later write fails, as if the process died)
 * must leave a job that a fresh instance finishes exactly.
 */
const request: StartRequest = {
  source: 'cluster0',
  destination: 'cluster1',
  buildIndexes: 'beforeDataCopy',
  enableUserWriteBlocking: false,
  reversible: false,
};

function world() {
  const src = new FakeCluster('cluster0', replicaSet('rsA', 'a:1'));
  const dst = new FakeCluster('cluster1', replicaSet('rsB', 'b:1'));
  for (let c = 0; c < 3; c++) {
    src.seed(
      'shop',
      `c${c}`,
      Array.from({ length: 120 }, (_, i) => ({ _id: i, v: new Int32(i), pad: 'p'.repeat(40) })),
    );
  }
  // Small ones too: their one partition each is planned by the start and named by its job
  // write (planReadless), the others' when the copy begins, by sampling.
  for (const t of ['t0', 't1']) src.seed('shop', t, [{ _id: 1, v: new Int32(1) }, { _id: 2 }]);
  src.collection('shop', 'c0')!.indexes.push({ v: 2, key: { e: 1 }, name: 'e_1', unique: true });
  return { src, dst, directory: new FakeDirectory(src, dst) };
}

const boot = async (directory: FakeDirectory) => {
  const job = new SyncJob({
    clusters: directory,
    logger: silentLogger,
    copier: {
      concurrency: 2,
      readBatchSize: 25,
      writeBatchDocuments: 20,
      writeBatchBytes: 1 << 20,
    },
    partitioning: { targetBytes: 1500, maxPartitions: 6, oversampling: 4 },
    restoreRetryMs: 1,
    retryBaseMs: 1,
  });
  await job.initialize();
  return job;
};

const dump = (cluster: FakeCluster, coll: string) =>
  (cluster.collection('shop', coll, false)?.documents ?? [])
    .map((d) => Buffer.from(BSON.serialize(d)).toString('hex'))
    .sort();

class Crash extends Error {}

describe('job metadata across a crash between any two writes', () => {
  it('counts the writes of an uninterrupted sync', async () => {
    const { dst, directory } = world();
    const job = await boot(directory);
    await job.start(request);
    await job.idle();
    expect(dst.store.job!.phase).toBe('copied');
    expect(dst.store.writes).toBeGreaterThan(10);
    // The small collections' sets were planned ahead, with the preparation: numbered first.
    const setOf = (c: string) =>
      dst.store.job!.namespaces.find((ns) => ns.collection === c)!.partitionSet!;
    expect(Math.max(setOf('t0'), setOf('t1'))).toBeLessThan(
      Math.min(setOf('c0'), setOf('c1'), setOf('c2')),
    );
    writesOfFullRun = dst.store.writes;
  });

  let writesOfFullRun = 0;

  it('finishes exactly after a crash before write k, for every k', async () => {
    expect(writesOfFullRun).toBeGreaterThan(10);
    for (let k = 1; k <= writesOfFullRun; k++) {
      const { src, dst, directory } = world();
      let n = 0;
      let crashed = false;
      dst.store.beforeWrite = () => {
        if (crashed || ++n === k) {
          crashed = true;
          throw new Crash(`crash before write ${k}`);
        }
      };
      const first = await boot(directory);
      await first.start(request).catch((e: unknown) => {
        if (!(e instanceof Crash)) throw e;
      });
      const deadline = Date.now() + 5000;
      while (!crashed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
      await first.close();
      dst.store.beforeWrite = null;

      const second = await boot(directory);
      if (second.state === 'IDLE') await second.start(request);
      await second.idle();
      const context = `crash before write ${k}`;
      expect([context, dst.store.job!.phase]).toEqual([context, 'copied']);
      for (const c of ['c0', 'c1', 'c2', 't0', 't1'])
        expect([context, dump(dst, c)]).toEqual([context, dump(src, c)]);
      expect([...dst.store.partitions.values()].every((p) => p.status === 'done')).toBe(true);
      const copy = second.progress().collectionCopy!;
      expect([context, copy.estimatedCopiedBytes]).toEqual([context, copy.estimatedTotalBytes]);
      const relaxed = dst.store.job!.namespaces.find(
        (ns) => ns.collection === 'c0',
      )!.relaxedIndexes;
      expect([context, relaxed.map((r) => r.name)]).toEqual([context, ['e_1']]);
      await second.close();
    }
  }, 120_000);
});
