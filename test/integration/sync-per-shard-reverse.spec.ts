import { Int32, type Document } from 'bson';
import type { SyncJob } from '@sync/engine';
import { describeOn, testDb, testNs } from '../helpers/real-clusters';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { describeProgress, waitFor } from './copy-helpers';
import { PER_SHARD_START, useShardedClusters } from './sync-helpers';

type AnyDoc = { _id: unknown } & Document;

const START = { ...PER_SHARD_START, reversible: true };

/**
 * Reverse of a per-shard sync (2 → 2 shards, shard ids differ between the clusters): after the
 * commit the destination's balancer stays stopped (a reverse reads it shard by shard with the
 * commit's chunk map), a chunk moved on it refuses the reverse by name and changes nothing, each
 * worker then reads one destination shard, the application's writes there (both shards, a
 * shard-key change across them, a delete) come back to the old source, a worker restarted
 * mid-way resumes the reversed sync, and a second commit hands the application back.
 */
describeOn('shardedClusters')('reverse of a per-shard sync (2 → 2 shards)', () => {
  const fixture = useShardedClusters({
    source: 'rvs',
    destination: 'rvd',
    sourceShards: 2,
    destinationShards: 2,
    ...(process.env.SYNC_TEST_LOG
      ? {
          logger: {
            debug: () => undefined,
            info: (m: string, f?: object) => console.log('INFO', m, JSON.stringify(f ?? {})),
            warn: (m: string, f?: object) => console.log('WARN', m, JSON.stringify(f ?? {})),
            error: (m: string, f?: object) => console.log('ERROR', m, JSON.stringify(f ?? {})),
          },
        }
      : {}),
  });
  const worker = fixture.worker;

  it('reverses, carries the writes back, and commits back', async () => {
    const { source, destination, src, dst } = fixture;
    const [shard0, shard1] = source.shards.map((s) => s._id).sort() as [string, string];
    const admin = src.db('admin');
    const ns = testNs('app.orders');
    const app = src.db(testDb('app'));
    await admin.command({ shardCollection: ns, key: { region: 1, _id: 1 } });
    await admin.command({ split: ns, middle: { region: 'm', _id: 0 } });
    await admin.command({ shardCollection: testNs('app.users'), key: { uid: 'hashed' } });
    await app.collection<AnyDoc>('orders').insertMany(
      Array.from({ length: 300 }, (_, i) => ({
        _id: new Int32(i),
        region: ['eu', 'us', 'ap'][i % 3],
        total: i,
      })),
    );
    await app
      .collection<AnyDoc>('users')
      .insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: new Int32(i), uid: `u${i}` })));
    await app.collection<AnyDoc>('settings').insertOne({ _id: 'theme', v: 'dark' });
    const primary = (await src
      .db('config')
      .collection('databases')
      .findOne({ _id: testDb('app') as never }))!.primary as string;
    await admin.command({
      moveChunk: ns,
      find: { region: 'us', _id: 0 },
      to: primary === shard0 ? shard1 : shard0,
    });

    const lead: SyncJob = await worker(shard0);
    let follower: SyncJob = await worker(shard1);
    await lead.start(START);
    await follower.start(START);
    const both = () => [lead, follower];
    const show = () => describeProgress(both().map((w) => w.progress()));
    const allCanCommit = () => both().every((w) => w.progress().canCommit === true);
    const allIn = (state: string) => () => both().every((w) => w.progress().state === state);
    /**
     * Both workers commit once both can. canCommit is a moment's state (lag is polled each
     * second): the lead's commit may find it gone since the poll, refused with CommitNotReady
     * and changing nothing; it is sent again once canCommit holds again, as a user would.
     */
    const commitBoth = async (what: string) => {
      for (let attempt = 1; ; attempt++) {
        await waitFor(allCanCommit, 90_000, what, show);
        try {
          await lead.commit();
          break;
        } catch (error) {
          if ((error as { error?: string }).error !== 'CommitNotReady' || attempt >= 5) throw error;
        }
      }
      await follower.commit();
    };
    await waitFor(allCanCommit, 90_000, 'canCommit', show);
    await app.collection<AnyDoc>('orders').updateMany({ region: 'eu' }, { $inc: { total: 1 } });
    await commitBoth('canCommit again');
    await waitFor(allIn('COMMITTED'), 90_000, 'COMMITTED', show);
    expect((await compareClusters(src, dst, { databases: [testDb('app')] })).differences).toEqual(
      [],
    );
    // The source's balancer is back; the destination's stays stopped for a reverse.
    expect((await admin.command({ balancerStatus: 1 })).mode).toBe('full');
    expect((await dst.db('admin').command({ balancerStatus: 1 })).mode).toBe('off');

    // The application now writes on the destination (both of its shards).
    const [dshard0, dshard1] = destination.shards.map((s) => s._id).sort() as [string, string];
    const target = dst.db(testDb('app'));
    await target
      .collection<AnyDoc>('settings')
      .updateOne({ _id: 'theme' as never }, { $set: { v: 'x' } });

    // A chunk moved on the destination since the commit: refused by name, nothing changed.
    const coll = (await dst
      .db('config')
      .collection('collections')
      .findOne({ _id: ns as never })) as Document;
    const chunk = (await dst
      .db('config')
      .collection('chunks')
      .findOne({ uuid: coll.uuid })) as Document;
    const away = chunk.shard === dshard0 ? dshard1 : dshard0;
    const bounds = [chunk.min, chunk.max];
    await dst.db('admin').command({ moveChunk: ns, bounds, to: away });
    await expect(lead.reverse()).rejects.toMatchObject({ error: 'ChunkMigrationSinceCommit' });
    await expect(follower.reverse()).rejects.toMatchObject({ error: 'ChunkMigrationSinceCommit' });
    expect(both().map((w) => w.progress().state)).toEqual(['COMMITTED', 'COMMITTED']);
    // Moved back: the map is the commit's again.
    await dst.db('admin').command({ moveChunk: ns, bounds, to: chunk.shard });

    // The follower first: it waits for the lead worker's plan.
    const followerReversed = follower.reverse();
    await new Promise((r) => setTimeout(r, 300));
    await lead.reverse();
    await followerReversed;
    await waitFor(allIn('RUNNING'), 30_000, 'RUNNING after reverse', show);
    // Each worker now reads one destination shard and writes to the old source.
    expect(lead.job?.source.name).toBe('cluster1');
    expect(lead.job?.shard?.sources).toEqual({ [shard0]: dshard0, [shard1]: dshard1 });

    // Writes on the new source: inserts, updates, a shard-key change across shards, deletes.
    const orders = target.collection<AnyDoc>('orders');
    await orders.insertMany([
      { _id: new Int32(1000), region: 'us', total: 1 },
      { _id: new Int32(1001), region: 'eu', total: 2 },
    ]);
    await orders.updateMany({ region: 'ap' }, { $set: { tagged: true } });
    await orders.updateOne({ region: 'eu', _id: new Int32(0) }, { $set: { region: 'zz' } });
    await orders.deleteMany({ region: 'us', total: { $lt: 50 } });
    await target.collection<AnyDoc>('users').updateMany({}, { $set: { back: true } });

    // A worker restarted mid-way resumes the reversed sync from the old source.
    await follower.close();
    follower = await worker(shard1);
    await waitFor(() => follower.progress().state === 'RUNNING', 30_000, 'follower resumed');
    expect(follower.job?.destination.name).toBe('cluster0');
    await target.collection<AnyDoc>('users').insertOne({ _id: new Int32(5000), uid: 'late' });

    await commitBoth('canCommit after reverse');
    await waitFor(allIn('COMMITTED'), 90_000, 'COMMITTED back', show);
    const report = await compareClusters(dst, src, { databases: [testDb('app')] });
    expect(report.differences).toEqual([]);
    expect(await app.collection('orders').findOne({ _id: new Int32(0) } as Document)).toMatchObject(
      { region: 'zz' },
    );
    expect(await app.collection('users').countDocuments({ back: true })).toBe(200);
    expect(await app.collection('settings').findOne({ _id: 'theme' } as Document)).toMatchObject({
      v: 'x',
    });
    // Both ends as they were: the old destination's balancer restored, the old source's kept
    // stopped for another reverse.
    expect((await dst.db('admin').command({ balancerStatus: 1 })).mode).toBe('full');
    expect((await admin.command({ balancerStatus: 1 })).mode).toBe('off');

    // Reversed once more (the original direction): each worker reads its own shard again — the
    // first reverse's pairing does not carry over.
    await Promise.all([lead.reverse(), follower.reverse()]);
    await waitFor(allIn('RUNNING'), 30_000, 'RUNNING after the second reverse', show);
    expect(lead.job?.source.name).toBe('cluster0');
    expect(both().map((w) => w.job?.shard?.sources)).toEqual([undefined, undefined]);
    await app.collection<AnyDoc>('orders').insertOne({ _id: new Int32(2000), region: 'eu' });
    await app.collection<AnyDoc>('users').updateMany({}, { $set: { third: true } });
    await commitBoth('canCommit after the second reverse');
    await waitFor(allIn('COMMITTED'), 90_000, 'COMMITTED a third time', show);
    expect((await compareClusters(src, dst, { databases: [testDb('app')] })).differences).toEqual(
      [],
    );
    expect(await dst.db(testDb('app')).collection('users').countDocuments({ third: true })).toBe(
      201,
    );
  }, 240_000);
});
