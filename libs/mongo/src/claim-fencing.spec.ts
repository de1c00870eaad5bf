import { startReplicaSet } from '@sync/mongo-emulator';
import {
  ClaimFence,
  newPartition,
  type ClaimGuard,
  type JobRecord,
  type PartitionRecord,
} from '@sync/engine';
import { Timestamp } from 'bson';
import { MongoClient } from 'mongodb';
import { MongoCheckpointStore } from './change-checkpoint-store';
import { MongoChangeWriter } from './change-writer';
import { MongoCoordinationStore } from './mongo-coordination-store';
import { MongoDestinationCluster } from './mongo-destination-cluster';
import { MongoJobStore } from './mongo-job-store';

type Cluster = Awaited<ReturnType<typeof startReplicaSet>>;

/** A holder that still believes its claim held (a write in flight, a drifting clock). */
const believes = (epoch: number): ClaimGuard => ({
  worker: 'shardA',
  epoch: () => epoch,
  assertHeld: () => undefined,
  lost: null,
  lose: () => undefined,
});

const job = (note: string): JobRecord =>
  ({
    _id: 'shardA',
    state: 'RUNNING',
    phase: 'copied',
    note,
    namespaces: [],
    request: { source: 'cluster0', destination: 'cluster1' },
    estimatedTotalBytes: 0,
    nextPartitionSet: 1,
    reversals: 0,
  }) as unknown as JobRecord;

const partition: PartitionRecord = newPartition({ syncID: 'shardA', key: 'k', set: 1 }, 0);

const checkpoint = (i: number) => ({
  resumeToken: { _data: `token${i}` },
  clusterTime: new Timestamp({ t: 100, i }),
  savedAt: new Date(),
});

describe('claim fencing on the destination (emulator, real driver)', () => {
  let cluster: Cluster;
  let client: MongoClient;
  const internal = () => client.db('sync_reserved_for_internal_use');

  beforeAll(async () => {
    cluster = await startReplicaSet();
    client = await new MongoClient(cluster.uri, {
      writeConcern: { w: 'majority', j: true },
    }).connect();
  });
  beforeEach(() => client.db('sync_reserved_for_internal_use').dropDatabase());
  afterAll(async () => {
    await client.close();
    await cluster.stop();
  });

  it("claims by the destination's clock: renewal keeps the epoch, a takeover increments it", async () => {
    const store = new MongoCoordinationStore(client);
    const first = await store.claim('shardA', 'one', 300);
    expect(first).toMatchObject({ instance: 'one', epoch: 1 });
    const renewed = await store.claim('shardA', 'one', 300);
    expect(renewed.epoch).toBe(1);
    expect(renewed.heartbeatAt.getTime()).toBeGreaterThanOrEqual(first.heartbeatAt.getTime());
    // The heartbeat is the destination's $$NOW, whatever this host's clock says.
    const { localTime } = (await client.db('admin').command({ hello: 1 })) as { localTime: Date };
    expect(Math.abs(localTime.getTime() - renewed.heartbeatAt.getTime())).toBeLessThan(5_000);

    expect(await store.claim('shardA', 'two', 300)).toMatchObject({ instance: 'one', epoch: 1 });
    await new Promise((r) => setTimeout(r, 450));
    expect(await store.claim('shardA', 'two', 300)).toMatchObject({ instance: 'two', epoch: 2 });
    expect(await store.claim('shardA', 'one', 300)).toMatchObject({ instance: 'two', epoch: 2 });
  });

  it('a holder launched with a longer stale limit keeps its claim until that limit', async () => {
    const store = new MongoCoordinationStore(client);
    expect(await store.claim('shardL', 'long', 1_000)).toMatchObject({ instance: 'long' });
    await new Promise((r) => setTimeout(r, 400));
    // Stale by the claimant's 300 ms, not by the holder's 1 s: still the holder's.
    expect(await store.claim('shardL', 'short', 300)).toMatchObject({ instance: 'long' });
    await new Promise((r) => setTimeout(r, 750));
    expect(await store.claim('shardL', 'short', 300)).toMatchObject({
      instance: 'short',
      epoch: 2,
    });
  });

  it('refuses every job, checkpoint, barrier and commit write of the old epoch once the successor fenced', async () => {
    const coordination = new MongoCoordinationStore(client);
    // The old holder (epoch 1) wrote its state.
    const oldJobs = new MongoJobStore(client, 'shardA', believes(1));
    const oldCheckpoints = new MongoCheckpointStore(client, 'changeEvents:shardA|r0', believes(1));
    const oldShared = new MongoCoordinationStore(client, believes(1));
    await oldShared.create({
      _id: 'sync',
      coordinatorID: 'shardA',
      members: ['shardA', 'shardB'],
      commitSteps: {},
    } as never);
    await oldJobs.saveJob(job('old'));
    await oldJobs.addPartitions([partition]);
    await oldCheckpoints.save(checkpoint(1));
    await oldShared.arrive('ddl1', 'shardA');
    await oldShared.markStep('requested', 'shardA');

    // The successor took the claim over (epoch 2) and fenced before writing anything.
    await coordination.fence('shardA', 2);

    const lost = { error: 'ShardClaimLost' };
    await expect(oldJobs.saveJob(job('late'))).rejects.toMatchObject(lost);
    await expect(oldJobs.markPartitionDone(partition._id, 1, 1)).rejects.toMatchObject(lost);
    await expect(oldJobs.addPartitions([partition])).rejects.toMatchObject(lost);
    await expect(oldCheckpoints.save(checkpoint(2))).rejects.toMatchObject(lost);
    await expect(oldShared.set({ ready: true })).rejects.toMatchObject(lost);
    await expect(oldShared.markStep('drained', 'shardA')).rejects.toMatchObject(lost);
    await expect(oldShared.arrive('ddl1', 'shardA')).rejects.toMatchObject(lost);
    await expect(oldShared.release('ddl1')).rejects.toMatchObject(lost);
    await expect(oldJobs.deleteJob()).rejects.toMatchObject(lost);

    // Nothing changed.
    const stored = await internal()
      .collection('jobs')
      .findOne({ _id: 'shardA' as never });
    expect(stored).toMatchObject({ note: 'old', claimEpoch: 2 });
    expect(
      await internal()
        .collection('partitions')
        .findOne({ _id: partition._id as never }),
    ).toMatchObject({ status: 'pending' });
    expect(
      await internal()
        .collection('resumeData')
        .findOne({ _id: 'changeEvents:shardA|r0' as never }),
    ).toMatchObject({ resumeToken: { _data: 'token1' } });
    const record = await internal().collection('coordination').findOne({});
    expect(record).toMatchObject({ commitSteps: { requested: ['shardA'] } });
    expect(record?.ready).toBeUndefined();
    expect(await internal().collection('barriers').findOne({})).toMatchObject({ released: false });

    // The successor's writes pass; another shard's worker is not fenced by shardA's epoch.
    const newJobs = new MongoJobStore(client, 'shardA', believes(2));
    await newJobs.saveJob(job('new'));
    await new MongoCheckpointStore(client, 'changeEvents:shardA|r0', believes(2)).save(
      checkpoint(3),
    );
    await new MongoCoordinationStore(client, believes(2)).markStep('drained', 'shardA');
    const other: ClaimGuard = { ...believes(1), worker: 'shardB' };
    await new MongoCoordinationStore(client, other).markStep('drained', 'shardB');
    expect(
      await internal()
        .collection('jobs')
        .findOne({ _id: 'shardA' as never }),
    ).toMatchObject({ note: 'new', claimEpoch: 2 });
    // A loaded job does not show the fencing field.
    expect((await newJobs.load())?.job).not.toHaveProperty('claimEpoch');
  });

  it('a worker whose lease ran out writes no data, no change and no metadata', async () => {
    let now = 0;
    const fence = new ClaimFence('shardA', () => now);
    fence.hold(1, 8_000);
    const destination = new MongoDestinationCluster(client, cluster.host, fence);
    const writer = new MongoChangeWriter(client, fence);
    const jobs = new MongoJobStore(client, 'shardA', fence);
    await destination.insertUnordered('app', 'docs', [{ _id: 1 }]);
    await jobs.saveJob(job('held'));

    now = 8_000; // paused, or renewals failing: the lease is over
    const lost = { error: 'ShardClaimLost' };
    await expect(destination.insertUnordered('app', 'docs', [{ _id: 2 }])).rejects.toMatchObject(
      lost,
    );
    await expect(
      writer.bulkWrite({ db: 'app', coll: 'docs' }, [
        { kind: 'replace', filter: { _id: 3 }, replacement: { _id: 3 } } as never,
      ]),
    ).rejects.toMatchObject(lost);
    await expect(destination.createIndexes('app', 'docs', [])).rejects.toMatchObject(lost);
    await expect(jobs.saveJob(job('after'))).rejects.toMatchObject(lost);
    expect(await client.db('app').collection('docs').find().toArray()).toEqual([{ _id: 1 }]);
    expect(
      await internal()
        .collection('jobs')
        .findOne({ _id: 'shardA' as never }),
    ).toMatchObject({ note: 'held' });
    await client.db('app').dropDatabase();
  });

  it('a lone worker (no claim) writes as before, without any fencing field', async () => {
    const jobs = new MongoJobStore(client, 'worker');
    await jobs.saveJob({ ...job('lone'), _id: 'worker' });
    await new MongoCheckpointStore(client, 'changeEvents:worker|r0').save(checkpoint(1));
    expect(
      await internal()
        .collection('jobs')
        .findOne({ _id: 'worker' as never }),
    ).not.toHaveProperty('claimEpoch');
    expect(
      await internal()
        .collection('resumeData')
        .findOne({ _id: 'changeEvents:worker|r0' as never }),
    ).not.toHaveProperty('claimEpoch');
  });
});
