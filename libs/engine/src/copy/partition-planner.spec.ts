import { Timestamp } from 'bson';
import { FakeCluster, replicaSet } from '../testing/in-memory-clusters';
import type { NamespaceRecord } from '../ports/job-store';
import { planPartitions as plan, type PartitioningOptions } from './partition-planner';

const at = { syncID: 'w', set: 1 };
const planPartitions = (
  source: FakeCluster,
  record: NamespaceRecord,
  options?: PartitioningOptions,
) => plan(source, record, at, options);

function ns(overrides: Partial<NamespaceRecord>): NamespaceRecord {
  return {
    key: 'view:db.c',
    database: 'db',
    collection: 'c',
    type: 'collection',
    options: {},
    indexes: [],
    relaxedIndexes: [],
    estimatedBytes: 0,
    estimatedCount: 0,
    capped: false,
    listedAt: new Timestamp({ t: 1, i: 1 }),
    copy: 'pending',
    ...overrides,
  };
}

describe('planPartitions', () => {
  const source = new FakeCluster('src', replicaSet('rs', 'h:1'));
  const ids: unknown[] = [
    ...Array.from({ length: 600 }, (_, i) => i),
    ...Array.from({ length: 400 }, (_, i) => `s${1000 + i}`),
  ];
  source.seed(
    'db',
    'c',
    ids.map((_id) => ({ _id, pad: 'x'.repeat(100) })),
  );

  it('one unbounded partition for a small collection, none for a view', async () => {
    const parts = await planPartitions(source, ns({ estimatedBytes: 10, estimatedCount: 1 }));
    expect(parts).toHaveLength(1);
    expect('min' in parts[0]! || 'max' in parts[0]!).toBe(false);
    expect(await planPartitions(source, ns({ type: 'view' }))).toEqual([]);
  });

  it('capped collections are one natural-order partition', async () => {
    const parts = await planPartitions(
      source,
      ns({ capped: true, estimatedBytes: 1e9, estimatedCount: 1e6 }),
    );
    expect(parts).toEqual([expect.objectContaining({ natural: true, index: 0 })]);
  });

  it('contiguous half-open ranges: first has no min, last has no max, split points shared', async () => {
    const parts = await planPartitions(
      source,
      ns({ estimatedBytes: 130_000, estimatedCount: 1000 }),
      {
        targetBytes: 13_000,
        maxPartitions: 100,
        oversampling: 10,
      },
    );
    expect(parts.length).toBeGreaterThan(5);
    expect('min' in parts[0]!).toBe(false);
    expect('max' in parts[parts.length - 1]!).toBe(false);
    for (let i = 1; i < parts.length; i++) expect(parts[i]!.min).toEqual(parts[i - 1]!.max);
    expect(new Set(parts.map((p) => p._id)).size).toBe(parts.length);
    // mixed-type ids: some split point falls among the strings
    expect(parts.some((p) => typeof p.max === 'string')).toBe(true);
  });

  it('respects maxPartitions and never splits below one document per partition', async () => {
    const capped = await planPartitions(source, ns({ estimatedBytes: 1e9, estimatedCount: 1000 }), {
      targetBytes: 1,
      maxPartitions: 4,
      oversampling: 5,
    });
    expect(capped.length).toBeLessThanOrEqual(4);
    const tiny = await planPartitions(source, ns({ estimatedBytes: 1e9, estimatedCount: 1 }), {
      targetBytes: 1,
      maxPartitions: 100,
      oversampling: 5,
    });
    expect(tiny).toHaveLength(1);
  });

  it('a billion-document collection is planned from one bounded sample, not a scan', async () => {
    // 1e9 documents of ~1 KB: the planner asks for one $sample of maxPartitions × oversampling
    // _ids (first stage of its pipeline, well under 5 % of the documents: on a real server a
    // pseudo-random cursor, so its cost does not grow with the collection) and plans from it.
    const calls: number[] = [];
    const sampling = Object.create(source) as FakeCluster;
    sampling.sampleSortedIds = async (db: string, coll: string, size: number) => {
      calls.push(size);
      return source.sampleSortedIds(db, coll, size);
    };
    const parts = await planPartitions(
      sampling,
      ns({ estimatedBytes: 1e12, estimatedCount: 1e9 }),
    );
    expect(calls).toEqual([512 * 10]);
    expect(calls[0]! / 1e9).toBeLessThan(0.05);
    // The fake holds 1,000 documents: the sample's quantiles give as many ranges as it can.
    expect(parts.length).toBeGreaterThan(100);
    expect(parts.length).toBeLessThanOrEqual(512);
  });
});
