import { FakeCluster, FakeJobStore, replicaSet } from '../testing/in-memory-clusters';
import type { JobRecord, NamespaceRecord, PartitionRecord } from '../ports/job-store';
import { JobSession } from './job-session';

const clock = { now: () => Date.now(), sleep: async () => undefined };

function record(key: string): NamespaceRecord {
  return {
    key,
    database: 'tenants',
    collection: key,
    type: 'collection',
    options: {},
    indexes: [],
    relaxedIndexes: [],
    estimatedBytes: 10,
    estimatedCount: 1,
    capped: false,
    copy: 'initial',
    partitionSet: 1,
  } as unknown as NamespaceRecord;
}

function partition(key: string, index: number): PartitionRecord {
  return { _id: `${key}-${index}`, key, set: 1, index, status: 'pending' } as PartitionRecord;
}

/** A session over `keys`, each with two partitions of set 1. */
function sessionOf(keys: string[]): { session: JobSession; partitions: PartitionRecord[] } {
  const job = { _id: 'job', phase: 'prepared', namespaces: keys.map(record) } as JobRecord;
  const partitions = keys.flatMap((k) => [partition(k, 0), partition(k, 1)]);
  const cluster = new FakeCluster('cluster0', replicaSet('rsA', 'a:1'));
  const session = new JobSession(
    job,
    partitions,
    cluster,
    cluster,
    new FakeJobStore(),
    { source: 's', destination: 'd' },
    clock,
  );
  return { session, partitions };
}

/** What the copier does once a partition's mark is written. */
function finish(session: JobSession, p: PartitionRecord): void {
  p.status = 'done';
  session.partitionChanged(p.key);
}

describe('catalog watch (followers visit only what changed)', () => {
  it('names the namespaces whose partitions finished; a catalog write, new partitions or another phase make the next look whole', async () => {
    const { session, partitions } = sessionOf(['a', 'b', 'c']);
    const watch = session.watchCatalog();
    expect(session.changesFor(watch).full).toBe(true); // first look
    expect(session.changesFor(watch)).toEqual({ full: false, keys: new Set() });

    finish(session, partitions[0]!);
    finish(session, partitions[5]!);
    expect(session.changesFor(watch)).toEqual({ full: false, keys: new Set(['a', 'c']) });
    expect(session.changesFor(watch).keys.size).toBe(0); // taken once

    await session.save((job) => void (job.namespaces[1]!.estimatedBytes = 99));
    expect(session.changesFor(watch).full).toBe(true);

    // A job-state write that leaves the records alone does not; its phase change does.
    await session.save((job) => void (job.updatedAt = new Date()), { catalogUnchanged: true });
    expect(session.changesFor(watch).full).toBe(false);
    await session.save((job) => void (job.phase = 'copied'), { catalogUnchanged: true });
    expect(session.changesFor(watch).full).toBe(true);

    session.partitions = [...session.partitions, partition('d', 0)];
    expect(session.changesFor(watch).full).toBe(true);

    session.unwatchCatalog(watch);
    finish(session, partitions[2]!);
    expect(session.changesFor(watch)).toEqual({ full: false, keys: new Set() });
  });

  it('says whether anything changed since the last look without taking it', async () => {
    const { session, partitions } = sessionOf(['a', 'b']);
    const watch = session.watchCatalog();
    expect(session.catalogChangedFor(watch)).toBe(true); // never looked
    session.changesFor(watch);
    expect(session.catalogChangedFor(watch)).toBe(false);
    finish(session, partitions[1]!);
    expect(session.catalogChangedFor(watch)).toBe(true);
    expect(session.catalogChangedFor(watch)).toBe(true); // still there for the look
    expect(session.changesFor(watch)).toEqual({ full: false, keys: new Set(['a']) });
    expect(session.catalogChangedFor(watch)).toBe(false);
    await session.save((job) => void (job.phase = 'copied'), { catalogUnchanged: true });
    expect(session.catalogChangedFor(watch)).toBe(true);
    expect(session.changesFor(watch).full).toBe(true);
    expect(session.catalogChangedFor(watch)).toBe(false);
  });

  it('the copied count follows finished partitions without walking, and agrees with a walk', async () => {
    const keys = Array.from({ length: 50 }, (_, i) => `n${i}`);
    const { session, partitions } = sessionOf(keys);
    expect(session.copiedNamespaces()).toBe(0);
    const walk = () =>
      session.job.namespaces.filter((n) =>
        session.partitionsOf(n.key).every((p) => p.status === 'done'),
      ).length;
    // Partitions finish in an order that completes namespaces one partition at a time.
    for (let i = 0; i < partitions.length; i += 3) {
      finish(session, partitions[i]!);
      expect(session.copiedNamespaces()).toBe(walk());
    }
    for (let i = 0; i < partitions.length; i++) {
      if (partitions[i]!.status !== 'done') finish(session, partitions[i]!);
      if (i % 7 === 0) expect(session.copiedNamespaces()).toBe(walk());
    }
    expect(session.copiedNamespaces()).toBe(50);
    // A record that leaves the catalog is counted out by the write that removes it.
    await session.save((job) => void job.namespaces.pop());
    expect(session.copiedNamespaces()).toBe(49);
  });

  it('whether a copy is pending is kept until a catalog write or another phase changes it', async () => {
    const { session } = sessionOf(['a', 'b']);
    expect(session.copiesPending()).toBe(true);
    // The initial copy's records are pending until the phase says copied.
    await session.save((job) => void (job.phase = 'copied'), { catalogUnchanged: true });
    expect(session.copiesPending()).toBe(false);
    // A collection that entered the sync later is pending by its own record.
    await session.save((job) => void (job.namespaces[0]!.copy = 'pending'));
    expect(session.copiesPending()).toBe(true);
    await session.save((job) => void (job.namespaces[0]!.copy = 'done'));
    expect(session.copiesPending()).toBe(false);
  });
});
