import { ApiError, type StartRequest } from '@sync/contracts';
import { silentLogger } from '../ports/engine-logger';
import { FakeCluster, FakeDirectory, replicaSet } from '../testing/in-memory-clusters';
import { SyncJob, type SyncJobOptions } from './sync-job';

const request = (overrides: Partial<StartRequest> = {}): StartRequest => ({
  source: 'cluster0',
  destination: 'cluster1',
  buildIndexes: 'beforeDataCopy',
  enableUserWriteBlocking: false,
  reversible: false,
  ...overrides,
});

const sharded = (host: string, members: string[]) => ({
  kind: 'sharded' as const,
  shardCount: members.length,
  displayHost: host,
  fingerprint: { kind: 'sharded' as const, setName: null, members },
});

async function boot(directory: FakeDirectory, extra: Partial<SyncJobOptions> = {}) {
  const job = new SyncJob({ clusters: directory, logger: silentLogger, ...extra });
  await job.initialize();
  return job;
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return (error as ApiError).error;
}

describe('SyncJob.validateStart (the dry run of start)', () => {
  it('runs start’s checks and writes nothing: the job stays IDLE, a later start works', async () => {
    const src = new FakeCluster('cluster0', sharded('ma:1', ['a0', 'a1']));
    const dst = new FakeCluster('cluster1', sharded('mb:1', ['b0', 'b1', 'b2']));
    src.seed('shop', 'orders', [{ _id: 1 }]);
    const directory = new FakeDirectory(src, dst);
    const job = await boot(directory);
    // Cluster-dependent: shard counts differ, so a reversible sharded → sharded sync is refused.
    expect(
      await refusal(
        job.validateStart(request({ reversible: true, enableUserWriteBlocking: true })),
      ),
    ).toBe('ReversibleUnsupportedShardCountMismatch');
    await expect(job.validateStart(request())).resolves.toBeUndefined();
    expect(job.state).toBe('IDLE');
    expect(await directory.jobStore('cluster1').load()).toBeNull();
    expect(await directory.coordination('cluster1').load()).toBeNull();
    expect(dst.collection('shop', 'orders', false)).toBeUndefined();
    await job.start(request(), { commandId: 's-1' });
    expect(job.state).toBe('RUNNING');
    // Once started: another start validates as NotIdle; the same start id as accepted.
    expect(await refusal(job.validateStart(request()))).toBe('NotIdle');
    await expect(job.validateStart(request(), { commandId: 's-1' })).resolves.toBeUndefined();
    await job.close();
  });

  it('refuses a per-shard worker whose --id is not a source shard, and bad request rules', async () => {
    const src = new FakeCluster('cluster0', sharded('ma:1', ['a0', 'a1']));
    const dst = new FakeCluster('cluster1', sharded('mb:1', ['b0', 'b1']));
    const job = await boot(new FakeDirectory(src, dst), { shardId: 'zz', syncID: 'zz' });
    expect(await refusal(job.validateStart(request()))).toBe('InvalidShardId');
    expect(await refusal(job.validateStart(request({ source: 'nowhere' })))).not.toBe(
      'InternalError',
    );
    const rs = new FakeDirectory(
      new FakeCluster('cluster0', replicaSet('rsA', 'a:1')),
      new FakeCluster('cluster1', sharded('mb:1', ['b0', 'b1'])),
    );
    const plain = await boot(rs);
    expect(await refusal(plain.validateStart(request()))).toBe(
      'ShardingRequiredForReplicaSetToSharded',
    );
  });
});
