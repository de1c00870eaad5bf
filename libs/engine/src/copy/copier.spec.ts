import { BSON, Double, Int32 } from 'bson';
import { silentLogger } from '../ports/engine-logger';
import type { JobStore, PartitionRecord } from '../ports/job-store';
import { FakeCluster, replicaSet } from '../testing/in-memory-clusters';
import {
  Copier as RealCopier,
  CopyWriteError,
  GroupCommit,
  type CopierOptions,
  type CopyTargets,
} from './copier';
import { CopyTally } from './copy-tally';
import { InsertBatcher } from './insert-batcher';
import { newPartition } from './partition-planner';

function partition(index: number, bounds: { min?: unknown; max?: unknown }): PartitionRecord {
  return newPartition({ syncID: 'w', key: 'k', set: 1 }, index, bounds);
}

function setup(count = 1000) {
  const source = new FakeCluster('src', replicaSet('a', 'a:1'));
  const destination = new FakeCluster('dst', replicaSet('b', 'b:1'));
  const docs = Array.from({ length: count }, (_, i) => ({
    _id: i,
    n: new Int32(i),
    d: new Double(-0),
  }));
  source.seed('db', 'c', docs);
  const parts = [
    partition(0, { max: 250 }),
    partition(1, { min: 250, max: 700 }),
    partition(2, { min: 700 }),
  ];
  destination.store.partitions = new Map(parts.map((p) => [p._id, { ...p }]));
  const totalBytes = docs.reduce((s, d) => s + BSON.calculateObjectSize(d), 0);
  return { source, destination, parts, totalBytes };
}

const options = {
  concurrency: 2,
  writeBatchBytes: 4096,
  writeBatchDocuments: 50,
  readBatchSize: 64,
};

/** Every partition is `db.c` on both sides (renames are covered by the sync-job tests). */
const targets: CopyTargets = {
  resolve: () => ({ source: { db: 'db', coll: 'c' }, destination: { db: 'db', coll: 'c' } }),
  relocate: async () => null,
};

class Copier extends RealCopier {
  constructor(
    source: FakeCluster,
    destination: FakeCluster,
    store: FakeCluster['store'],
    tally: CopyTally,
    logger: typeof silentLogger,
    copierOptions?: CopierOptions,
  ) {
    super(source, destination, store, tally, logger, targets, copierOptions);
  }
}

/** A copier from a setup's source to its destination, recording into the destination's store. */
const copierOf = (
  w: { source: FakeCluster; destination: FakeCluster },
  copierOptions: CopierOptions = options,
) =>
  new Copier(
    w.source,
    w.destination,
    w.destination.store,
    new CopyTally(),
    silentLogger,
    copierOptions,
  );

describe('Copier', () => {
  it('copies every partition exactly, records each as done and counts real bytes', async () => {
    const { source, destination, parts, totalBytes } = setup();
    const tally = new CopyTally();
    const copier = new Copier(source, destination, destination.store, tally, silentLogger, options);
    expect(await copier.run(parts, new AbortController().signal)).toBe('completed');
    const copied = destination.collection('db', 'c')!.documents;
    expect(copied).toHaveLength(1000);
    const sorted = [...copied].sort((a, b) => a._id - b._id);
    expect(Buffer.from(BSON.serialize(sorted[5]!))).toEqual(
      Buffer.from(BSON.serialize(source.collection('db', 'c')!.documents[5]!)),
    );
    expect(tally.copiedBytes).toBe(totalBytes);
    expect([...destination.store.partitions.values()].every((p) => p.status === 'done')).toBe(true);
    expect(
      [...destination.store.partitions.values()].reduce((s, p) => s + p.copiedDocuments, 0),
    ).toBe(1000);
  });

  it('treats duplicate keys as already copied and skips done partitions', async () => {
    const { source, destination, parts } = setup();
    await destination.insertUnordered(
      'db',
      'c',
      source.collection('db', 'c')!.documents.slice(0, 300),
    );
    parts[2]!.status = 'done';
    const copier = copierOf({ source, destination });
    expect(await copier.run(parts, new AbortController().signal)).toBe('completed');
    expect(destination.collection('db', 'c')!.documents).toHaveLength(700);
  });

  it('fails loudly on any other write error and stops the other partitions', async () => {
    const { source, destination, parts } = setup();
    destination.failInsert = (ns) => new Error(`document failed validation in ${ns}`);
    const copier = copierOf({ source, destination });
    await expect(copier.run(parts, new AbortController().signal)).rejects.toBeInstanceOf(
      CopyWriteError,
    );
    expect([...destination.store.partitions.values()].some((p) => p.status === 'done')).toBe(false);
  });

  it('lanes do not wait for marks: many partitions share one mark write; run ends after all', async () => {
    const { source, destination } = setup(400);
    const parts = Array.from({ length: 40 }, (_, i) =>
      partition(i, {
        ...(i > 0 ? { min: i * 10 } : {}),
        ...(i < 39 ? { max: (i + 1) * 10 } : {}),
      }),
    );
    destination.store.partitions = new Map(parts.map((p) => [p._id, { ...p }]));
    const writes: number[] = [];
    const store = destination.store;
    let release: () => void = () => undefined;
    const slow = new Promise<void>((r) => (release = r));
    // The first mark write is held: every other partition finishes meanwhile, so the marks
    // gather into the next write instead of each lane waiting for its own.
    (store as JobStore).markPartitionsDone = async (done) => {
      writes.push(done.length);
      if (writes.length === 1) await slow;
      for (const d of done) await store.markPartitionDone(d.id, d.bytes, d.documents);
    };
    const copier = new Copier(source, destination, store, new CopyTally(), silentLogger, {
      ...options,
      concurrency: 2,
      smallPartitionConcurrency: 2,
      smallPartitionBytes: 1 << 20,
    });
    const running = copier.run(parts, new AbortController().signal);
    let settled = false;
    void running.then(() => (settled = true));
    while (destination.collection('db', 'c')!.documents.length < 400)
      await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    // Everything is copied; the run still waits for the held mark.
    expect(settled).toBe(false);
    expect(parts.some((p) => p.status === 'done')).toBe(false);
    release();
    expect(await running).toBe('completed');
    expect(writes[0]).toBe(1);
    expect(writes.reduce((a, b) => a + b, 0)).toBe(40);
    expect(writes.length).toBeLessThanOrEqual(3);
    expect(parts.every((p) => p.status === 'done')).toBe(true);
  });

  it('a mark that fails fails the run; its partition stays pending', async () => {
    const { source, destination, parts } = setup();
    (destination.store as JobStore).markPartitionsDone = async () => {
      throw new Error('job store unreachable');
    };
    const copier = copierOf({ source, destination });
    await expect(copier.run(parts, new AbortController().signal)).rejects.toThrow(
      'job store unreachable',
    );
    expect(parts.some((p) => p.status === 'done')).toBe(false);
  });

  it('on abort leaves unfinished partitions pending and gives their bytes back', async () => {
    const { source, destination, parts } = setup();
    source.readDelayMs = 5;
    const tally = new CopyTally();
    const controller = new AbortController();
    const copier = new Copier(source, destination, destination.store, tally, silentLogger, {
      ...options,
      concurrency: 1,
    });
    const run = copier.run(parts, controller.signal);
    await new Promise((r) => setTimeout(r, 30));
    controller.abort();
    expect(await run).toBe('aborted');
    const stored = [...destination.store.partitions.values()];
    expect(stored.some((p) => p.status === 'pending')).toBe(true);
    expect(tally.copiedBytes).toBe(stored.reduce((s, p) => s + p.copiedBytes, 0));
  });
});

describe('Copier memory bound', () => {
  it('never holds more document bytes than maxBytesInFlight across all partitions', async () => {
    const { source, destination, parts, totalBytes } = setup(3000);
    const capacity = 4096;
    const copier = copierOf(
      { source, destination },
      {
        concurrency: 3,
        writeBatchBytes: 1024,
        writeBatchDocuments: 50,
        readBatchSize: 40,
        maxBytesInFlight: capacity,
      },
    );
    const insert = destination.insertUnordered.bind(destination);
    const held: number[] = [];
    destination.insertUnordered = async (db, coll, docs) => {
      held.push(copier.budget.held);
      await new Promise((r) => setTimeout(r, 1));
      return insert(db, coll, docs);
    };
    expect(await copier.run(parts, new AbortController().signal)).toBe('completed');
    expect(destination.collection('db', 'c')!.documents).toHaveLength(3000);
    expect(totalBytes).toBeGreaterThan(10 * capacity);
    expect(Math.max(...held)).toBeLessThanOrEqual(capacity);
    expect(copier.budget.peakHeld).toBeLessThanOrEqual(capacity);
    expect(copier.budget.held).toBe(0);
  });

  it('gives every byte back when the copy fails or is aborted', async () => {
    const failing = setup();
    failing.destination.failInsert = (ns) => new Error(`rejected in ${ns}`);
    const copier = copierOf(failing, { ...options, maxBytesInFlight: 2048 });
    await expect(copier.run(failing.parts, new AbortController().signal)).rejects.toBeInstanceOf(
      CopyWriteError,
    );
    expect(copier.budget.held).toBe(0);

    const slow = setup();
    slow.source.readDelayMs = 5;
    const controller = new AbortController();
    const aborted = copierOf(slow, { ...options, maxBytesInFlight: 2048 });
    const run = aborted.run(slow.parts, controller.signal);
    await new Promise((r) => setTimeout(r, 30));
    controller.abort();
    expect(await run).toBe('aborted');
    expect(aborted.budget.held).toBe(0);
  });
});

describe('Copier concurrency by partition size', () => {
  /** 12 partitions of `db.c`, each read with a delay; the most read at once is recorded. */
  async function peakReads(estimatedBytes: number | undefined): Promise<number> {
    const source = new FakeCluster('src', replicaSet('a', 'a:1'));
    const destination = new FakeCluster('dst', replicaSet('b', 'b:1'));
    source.seed(
      'db',
      'c',
      Array.from({ length: 120 }, (_, i) => ({ _id: i })),
    );
    source.readDelayMs = 15;
    const parts = Array.from({ length: 12 }, (_, i) =>
      partition(i, { ...(i > 0 ? { min: i * 10 } : {}), ...(i < 11 ? { max: (i + 1) * 10 } : {}) }),
    );
    destination.store.partitions = new Map(parts.map((p) => [p._id, { ...p }]));
    let active = 0;
    let peak = 0;
    const read = source.read.bind(source);
    source.read = async function* (...args: Parameters<FakeCluster['read']>) {
      active += 1;
      peak = Math.max(peak, active);
      try {
        yield* read(...args);
      } finally {
        active -= 1;
      }
    };
    const sized: CopyTargets = {
      resolve: () => ({
        source: { db: 'db', coll: 'c' },
        destination: { db: 'db', coll: 'c' },
        ...(estimatedBytes !== undefined ? { estimatedBytes } : {}),
      }),
      relocate: async () => null,
    };
    const copier = new RealCopier(
      source,
      destination,
      destination.store,
      new CopyTally(),
      silentLogger,
      sized,
      { ...options, raw: false, concurrency: 2, smallPartitionConcurrency: 8 },
    );
    expect(await copier.run(parts, new AbortController().signal)).toBe('completed');
    expect(destination.collection('db', 'c')!.documents).toHaveLength(120);
    expect([...destination.store.partitions.values()].every((p) => p.status === 'done')).toBe(true);
    return peak;
  }

  it('small partitions run up to smallPartitionConcurrency at once; large ones up to concurrency', async () => {
    expect(await peakReads(1024)).toBe(8);
    expect(await peakReads(64 * 1024 * 1024)).toBe(2);
    // Size unknown: treated as large.
    expect(await peakReads(undefined)).toBe(2);
  });
});

describe('GroupCommit', () => {
  it('items added while a write runs go together in the next write; each add settles with its write', async () => {
    const writes: number[][] = [];
    let release: () => void = () => undefined;
    let fail = false;
    const group = new GroupCommit<number>(async (items) => {
      writes.push(items);
      await new Promise<void>((r) => (release = r));
      if (fail) throw new Error('write refused');
    });
    const first = group.add(1);
    const rest = [group.add(2), group.add(3)];
    release(); // the first write (item 1) ends; 2 and 3 go together
    await first;
    await new Promise((r) => setImmediate(r));
    fail = true;
    release();
    await expect(Promise.all(rest)).rejects.toThrow('write refused');
    expect(writes).toEqual([[1], [2, 3]]);
  });
});

describe('InsertBatcher', () => {
  it('bounds batches by bytes and by count; an oversized document goes alone', () => {
    const b = new InsertBatcher({ maxBytes: 100, maxDocuments: 3 });
    /** What pushing one document hands back to be written, in order. */
    const push = (document: object, size: number) =>
      [b.makeRoom(size), b.add(document, size)].filter((batch) => batch !== null);
    expect(push({ a: 1 }, 40)).toEqual([]);
    expect(push({ a: 2 }, 40)).toEqual([]);
    expect(push({ a: 3 }, 40)).toEqual([{ documents: [{ a: 1 }, { a: 2 }], bytes: 80 }]);
    expect(push({ a: 4 }, 500)).toEqual([
      { documents: [{ a: 3 }], bytes: 40 },
      { documents: [{ a: 4 }], bytes: 500 },
    ]);
    expect(push({ a: 5 }, 1)).toEqual([]);
    expect(push({ a: 6 }, 1)).toEqual([]);
    expect(push({ a: 7 }, 1)).toEqual([{ documents: [{ a: 5 }, { a: 6 }, { a: 7 }], bytes: 3 }]);
    expect(b.pending).toBe(0);
  });
});
