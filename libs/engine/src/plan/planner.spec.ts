import { NamespaceFilter } from '../namespaces/namespace-filter';
import { silentLogger } from '../ports/engine-logger';
import { FakeCluster, replicaSet } from '../testing/in-memory-clusters';
import { DEFAULT_PARTITIONING } from '../copy/partition-planner';
import { planSync, smallDatabaseBytes } from './planner';

const SMALL_DATABASE_BYTES = smallDatabaseBytes(DEFAULT_PARTITIONING.targetBytes);

describe('planSync: size estimates', () => {
  const padding = (bytes: number) => 'x'.repeat(bytes);

  it('reads a small database’s totals once instead of each collection’s collStats', async () => {
    const source = new FakeCluster('cluster0', replicaSet('rsA', 'a:1'));
    for (let i = 0; i < 10; i++)
      source.seed(
        'tenants',
        `t${i}`,
        Array.from({ length: i + 1 }, (_, k) => ({ _id: k, pad: padding(100) })),
      );
    const collStats = jest.spyOn(source, 'collectionStats');
    const dbStats = jest.spyOn(source, 'databaseStats');

    const plan = await planSync(source, new NamespaceFilter(), silentLogger);

    expect(collStats).not.toHaveBeenCalled();
    expect(dbStats).toHaveBeenCalledTimes(1);
    const totals = await source.databaseStats('tenants');
    expect(plan.namespaces).toHaveLength(10);
    for (const ns of plan.namespaces) {
      expect(ns.estimatedBytes).toBe(Math.ceil(totals.bytes / 10));
      expect(ns.estimatedCount).toBe(Math.ceil(totals.count / 10));
      expect(ns.indexes).toEqual([{ v: 2, key: { _id: 1 }, name: '_id_' }]);
    }
    expect(plan.estimatedTotalBytes).toBeGreaterThanOrEqual(totals.bytes);
  });

  it('reads each collection’s own figures in a database at or over the limit', async () => {
    const source = new FakeCluster('cluster0', replicaSet('rsA', 'a:1'));
    const perDocument = 64 * 1024;
    const documents = Math.ceil(SMALL_DATABASE_BYTES / perDocument) + 1;
    source.seed(
      'big',
      'large',
      Array.from({ length: documents }, (_, k) => ({ _id: k, pad: padding(perDocument) })),
    );
    source.seed('big', 'tiny', [{ _id: 1 }]);
    const own = {
      large: await source.collectionStats('big', 'large'),
      tiny: await source.collectionStats('big', 'tiny'),
    };
    source.statsReads = 0;

    const plan = await planSync(source, new NamespaceFilter(), silentLogger);

    // Both in one read where the source can (collectionStatsMany), exactly their own figures.
    expect([source.batchedStatsReads, source.statsReads]).toEqual([1, 0]);
    const byName = new Map(plan.namespaces.map((ns) => [ns.collection, ns]));
    expect(byName.get('large')!.estimatedCount).toBe(documents);
    expect(byName.get('large')!.estimatedBytes).toBeGreaterThan(SMALL_DATABASE_BYTES);
    expect(byName.get('tiny')!.estimatedCount).toBe(1);
    for (const name of ['large', 'tiny'] as const)
      expect([byName.get(name)!.estimatedBytes, byName.get(name)!.estimatedCount]).toEqual([
        own[name].bytes,
        own[name].count,
      ]);

    // A source that cannot read them together: each collection's collStats, same figures.
    const alone = new FakeCluster('cluster0', replicaSet('rsA', 'a:1'));
    alone.listsIndexesTogether = false;
    for (const name of ['large', 'tiny'])
      alone.seed('big', name, source.collection('big', name)!.documents);
    const again = await planSync(alone, new NamespaceFilter(), silentLogger);
    expect([alone.batchedStatsReads, alone.statsReads]).toEqual([0, 2]);
    expect(again.namespaces.map((ns) => [ns.estimatedBytes, ns.estimatedCount])).toEqual(
      plan.namespaces.map((ns) => [ns.estimatedBytes, ns.estimatedCount]),
    );
  });

  it('a collection the batched size read could not answer reads its own collStats', async () => {
    const source = new FakeCluster('cluster0', replicaSet('rsA', 'a:1'));
    const big = Array.from({ length: 20 }, (_, k) => ({ _id: k, pad: padding(64 * 1024) }));
    source.seed('big', 'a', big);
    source.seed('big', 'b', [{ _id: 1 }]);
    const batch = source.collectionStatsMany.bind(source);
    source.collectionStatsMany = async (database, collections) =>
      (await batch(database, collections)).map((one, i) => (collections[i] === 'b' ? null : one));
    source.statsReads = 0;
    const plan = await planSync(source, new NamespaceFilter(), silentLogger);
    expect(source.statsReads).toBe(1);
    expect(plan.namespaces.map((ns) => [ns.collection, ns.estimatedCount])).toEqual([
      ['a', 20],
      ['b', 1],
    ]);
  });

  it('a small partition target (a tuning option) makes a small database’s collections read each', async () => {
    const source = new FakeCluster('cluster0', replicaSet('rsA', 'a:1'));
    source.seed('shop', 'a', [{ _id: 1, pad: padding(3000) }]);
    source.seed('shop', 'b', [{ _id: 1 }]);
    const dbStats = jest.spyOn(source, 'databaseStats');
    const plan = await planSync(source, new NamespaceFilter(), silentLogger, {
      partitionTargetBytes: 2000,
    });
    // The totals were read, then each collection's own figures (in one batched read).
    expect(dbStats).toHaveBeenCalledTimes(1);
    expect(source.batchedStatsReads).toBe(1);
    expect(plan.namespaces.map((ns) => ns.estimatedBytes)).toEqual([
      (await source.collectionStats('shop', 'a')).bytes,
      (await source.collectionStats('shop', 'b')).bytes,
    ]);
  });

  it('a database of one collection costs no extra round trip', async () => {
    const source = new FakeCluster('cluster0', replicaSet('rsA', 'a:1'));
    source.seed('solo', 'only', [{ _id: 1 }, { _id: 2 }]);
    const dbStats = jest.spyOn(source, 'databaseStats');
    const plan = await planSync(source, new NamespaceFilter(), silentLogger);
    expect(dbStats).not.toHaveBeenCalled();
    expect(plan.namespaces[0].estimatedCount).toBe(2);
  });
});

describe('planSync: indexes', () => {
  it('reads the indexes of 100 collections a read; those a batch could not answer, alone', async () => {
    const source = new FakeCluster('cluster0', replicaSet('rsA', 'a:1'));
    for (let i = 0; i < 150; i++) source.seed('tenants', `t${String(i).padStart(3, '0')}`, []);
    // One with a secondary index; one without any entry in the batch (read with listIndexes).
    source.collection('tenants', 't007')!.indexes.push({ v: 2, key: { s: 1 }, name: 's_1' });
    source.collection('tenants', 't120')!.indexes.length = 0;

    const plan = await planSync(source, new NamespaceFilter(), silentLogger);

    expect(source.batchedIndexListings).toBe(2); // 100 + 50
    expect(source.indexListings).toBe(1); // t120
    expect(plan.namespaces).toHaveLength(150);
    const byName = new Map(plan.namespaces.map((ns) => [ns.collection, ns.indexes]));
    expect(byName.get('t007')!.map((spec) => spec.name)).toEqual(['_id_', 's_1']);
    expect(byName.get('t120')).toEqual([]);
    expect(byName.get('t149')!.map((spec) => spec.name)).toEqual(['_id_']);
  });
});
