import { BSON, Int32, type Document } from 'bson';
import { silentLogger } from '../ports/engine-logger';
import type { PartitionRecord } from '../ports/job-store';
import type {
  RawDocumentBatch,
  ReadOptions,
  SourceCluster,
  WholeCollections,
} from '../ports/source-cluster';
import type { InsertResult } from '../ports/destination-cluster';
import { FakeCluster, replicaSet } from '../testing/in-memory-clusters';
import { Copier, type CopyTarget, type CopyTargets } from './copier';
import { CopyTally } from './copy-tally';
import { GroupReads, type GroupableTarget } from './group-reads';
import { newPartition } from './partition-planner';

const EXACT = { promoteValues: false, promoteLongs: false, promoteBuffers: false } as const;

/** The in-memory cluster with the raw ports and `readWholeMany` (as the MongoDB adapters have). */
class RawCluster extends FakeCluster {
  wholeReads: string[][] = [];
  aloneReads: string[] = [];
  /** Replaces a read together's answer (tests of what it cannot vouch for). */
  answer: ((read: WholeCollections) => WholeCollections | null) | null = null;
  failTogether: Error | null = null;

  async *readRaw(
    database: string,
    collection: string,
    options: ReadOptions,
  ): AsyncIterable<RawDocumentBatch> {
    this.aloneReads.push(`${database}.${collection}`);
    for await (const batch of this.read(database, collection, options)) {
      const documents = batch.documents.map((d) => BSON.serialize(d));
      yield { documents, bytes: documents.reduce((s, d) => s + d.byteLength, 0) };
    }
  }

  async readWholeMany(database: string, collections: string[]): Promise<WholeCollections | null> {
    this.wholeReads.push(collections);
    if (this.failTogether) throw this.failTogether;
    const read: WholeCollections = {
      documents: collections.map((c) =>
        (this.collection(database, c, false)?.documents ?? []).map((d) => BSON.serialize(d)),
      ),
      uuids: collections.map((c) => this.collection(database, c, false)?.uuid ?? null),
    };
    return this.answer ? this.answer(read) : read;
  }

  async insertRawUnordered(
    database: string,
    collection: string,
    documents: Uint8Array[],
  ): Promise<InsertResult> {
    return this.insertUnordered(
      database,
      collection,
      documents.map((d) => BSON.deserialize(d, EXACT)),
    );
  }
}

function partitionOf(key: string, extra: Partial<PartitionRecord> = {}): PartitionRecord {
  return { ...newPartition({ syncID: 'w', key, set: 1 }, 0), ...extra };
}

/** `n` small collections `db.t<i>` of two documents each on the source, one partition each. */
function tenants(n: number, database = 'db') {
  const source = new RawCluster('src', replicaSet('a', 'a:1'));
  const destination = new RawCluster('dst', replicaSet('b', 'b:1'));
  const partitions: PartitionRecord[] = [];
  const targets = new Map<string, CopyTarget>();
  for (let i = 0; i < n; i++) {
    const coll = source.seed(database, `t${i}`, [
      { _id: 1, v: new Int32(i) },
      { _id: 2, v: new Int32(-i) },
    ]);
    const partition = partitionOf(coll.uuid!);
    partitions.push(partition);
    targets.set(partition._id, {
      source: { db: database, coll: `t${i}` },
      destination: { db: database, coll: `t${i}` },
      uuid: coll.uuid!,
      estimatedBytes: 60,
      whole: true,
    });
  }
  destination.store.partitions = new Map(partitions.map((p) => [p._id, p]));
  return { source, destination, partitions, targets };
}

function copierOf(
  w: ReturnType<typeof tenants>,
  relocate: CopyTargets['relocate'] = async () => null,
): Copier {
  return new Copier(
    w.source,
    w.destination,
    w.destination.store,
    new CopyTally(),
    silentLogger,
    { resolve: (p) => w.targets.get(p._id)!, relocate },
    {
      concurrency: 2,
      smallPartitionConcurrency: 8,
      writeBatchBytes: 4096,
      writeBatchDocuments: 50,
      readBatchSize: 64,
      groupReads: { collections: 10, memberBytes: 1024, groupBytes: 100_000, maxBytes: 100_000 },
    },
  );
}

const bytesOf = (docs: Document[]) =>
  docs.map((d) => Buffer.from(BSON.serialize(d)).toString('hex')).sort();

function expectCopied(w: ReturnType<typeof tenants>, n: number): void {
  for (let i = 0; i < n; i++) {
    const want = w.source.collection('db', `t${i}`, false)!.documents;
    const got = w.destination.collection('db', `t${i}`, false)?.documents ?? [];
    expect(bytesOf(got)).toEqual(bytesOf(want));
  }
  for (const p of w.partitions) {
    expect(p.status).toBe('done');
    expect(p.copiedDocuments).toBe(2);
  }
}

describe('Copier: small whole collections read together', () => {
  it('reads 25 collections in 3 reads (groups of at most 10) and copies each exactly', async () => {
    const w = tenants(25);
    expect(await copierOf(w).run(w.partitions, new AbortController().signal)).toBe('completed');
    expectCopied(w, 25);
    expect(w.source.wholeReads.map((r) => r.length)).toEqual([10, 10, 5]);
    expect(w.source.aloneReads).toEqual([]);
    expect(w.source.reads).toBe(0);
  });

  it('copies a collection read with its group in read batches of at most readBatchSize and writeBatchBytes', async () => {
    const w = tenants(3);
    // t1 grew since it was sized: 150 documents of ~100 bytes, more than one batch by either bound.
    w.source
      .collection('db', 't1')!
      .documents.push(
        ...Array.from({ length: 150 }, (_, i) => ({ _id: 100 + i, pad: 'x'.repeat(80) })),
      );
    const inserts: number[] = [];
    const insertRaw = w.destination.insertRawUnordered.bind(w.destination);
    w.destination.insertRawUnordered = (db, coll, docs) => {
      if (coll === 't1') inserts.push(docs.length);
      return insertRaw(db, coll, docs);
    };
    expect(await copierOf(w).run(w.partitions, new AbortController().signal)).toBe('completed');
    expect(w.source.wholeReads).toHaveLength(1);
    expect(w.source.aloneReads).toEqual([]);
    const want = w.source.collection('db', 't1')!.documents;
    expect(bytesOf(w.destination.collection('db', 't1')!.documents)).toEqual(bytesOf(want));
    expect(inserts.reduce((a, b) => a + b, 0)).toBe(152);
    expect(Math.max(...inserts)).toBeLessThanOrEqual(50);
    expect(w.partitions[1]!.copiedDocuments).toBe(152);
  });

  it('reads alone a collection whose name had another UUID after the read', async () => {
    const w = tenants(4);
    // The name now belongs to another collection: what was read under it is not copied.
    w.source.answer = (read) => ({
      documents: read.documents.map((docs, i) =>
        i === 1 ? [BSON.serialize({ _id: 'impostor' })] : docs,
      ),
      uuids: read.uuids.map((u, i) => (i === 1 ? 'f'.repeat(32) : u)),
    });
    const relocated: string[] = [];
    const copier = copierOf(w, async (p) => {
      relocated.push(p._id);
      return null; // gone from the source: its drop comes as an event
    });
    // Alone, the read by UUID finds the name taken by another collection.
    w.source.collection('db', 't1', false)!.uuid = 'e'.repeat(32);
    expect(await copier.run(w.partitions, new AbortController().signal)).toBe('completed');
    expect(w.source.aloneReads).toEqual(['db.t1']);
    expect(relocated).toEqual([w.partitions[1]!._id]);
    expect(w.destination.collection('db', 't1', false)?.documents ?? []).toEqual([]);
    for (const i of [0, 2, 3]) {
      expect(w.destination.collection('db', `t${i}`, false)!.documents).toHaveLength(2);
    }
  });

  it('reads each alone when the read together fails or brings too much', async () => {
    for (const failure of ['error', 'too much'] as const) {
      const w = tenants(6);
      if (failure === 'error') w.source.failTogether = new Error('Unrecognized pipeline stage');
      else w.source.answer = () => null;
      expect(await copierOf(w).run(w.partitions, new AbortController().signal)).toBe('completed');
      expectCopied(w, 6);
      expect(w.source.aloneReads).toHaveLength(6);
    }
  });
});

describe('GroupReads', () => {
  const target = (db: string, coll: string, extra: Partial<GroupableTarget> = {}) => ({
    source: { db, coll },
    estimatedBytes: 100,
    whole: true,
    ...extra,
  });
  /** Group reads over `list`, with a source that records each read and answers every name. */
  const planned = (
    list: Array<{ partition: PartitionRecord; target: GroupableTarget }>,
    uuidOf: (collection: string) => string | null = (c) => `uuid-${c}`,
  ) => {
    const reads: string[][] = [];
    const source = {
      readWholeMany: async (_db: string, collections: string[]) => {
        reads.push(collections);
        return {
          documents: collections.map((c) => [BSON.serialize({ _id: c })]),
          uuids: collections.map(uuidOf),
        };
      },
    };
    const targets = new Map(list.map((e) => [e.partition, e.target]));
    const groups = new GroupReads(
      source as unknown as SourceCluster,
      list.map((e) => e.partition),
      (p) => targets.get(p)!,
      silentLogger,
      undefined,
      { collections: 3, memberBytes: 1000, groupBytes: 250, maxBytes: 10_000 },
    );
    const signal = new AbortController().signal;
    /** What the lane at queue position `i` gets: the `_id`s read with its group, or null. */
    const take = async (i: number) => {
      const docs = await groups.take(list[i]!.partition, i, signal);
      return docs?.map((d) => BSON.deserialize(d)._id as string) ?? null;
    };
    return { reads, take };
  };

  it('groups consecutive small whole collections of one database, within count and bytes', async () => {
    const p = (k: string, extra: Partial<PartitionRecord> = {}) => partitionOf(k, extra);
    const { reads, take } = planned([
      { partition: p('a'), target: target('x', 'a') },
      { partition: p('b'), target: target('x', 'b') },
      { partition: p('c'), target: target('x', 'c') }, // 300 bytes > 250: a new group
      { partition: p('d'), target: target('y', 'd') }, // another database
      { partition: p('e'), target: target('y', 'e', { estimatedBytes: 5000 }) }, // too large
      { partition: p('f'), target: target('y', 'f', { whole: false }) }, // a view, a shard's share
      { partition: p('g', { min: 5 }), target: target('y', 'g') }, // a bounded range
      { partition: p('h', { natural: true }), target: target('y', 'h') },
      { partition: p('i', { status: 'done' }), target: target('y', 'i') },
      { partition: p('j'), target: target('y', 'j') },
    ]);
    const got: Array<string[] | null> = [];
    for (let i = 0; i < 10; i++) got.push(await take(i));
    // a+b; c alone (a group of one is read alone); d+j (skipping what cannot be grouped).
    expect(got).toEqual([['a'], ['b'], null, ['d'], null, null, null, null, null, ['j']]);
    expect(reads).toEqual([
      ['a', 'b'],
      ['d', 'j'],
    ]);
  });

  it('gives each partition its documents once, and starts the next group once one is read', async () => {
    const list = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].map((k) => ({
      partition: partitionOf(k),
      target: target('x', k, { estimatedBytes: 10 }),
    }));
    const { reads, take } = planned(list, (c) => (c === 'c' ? null : `uuid-${c}`));
    expect(reads).toEqual([]); // nothing planned nor read before a lane asks
    expect(await take(0)).toEqual(['a']);
    expect(reads).toEqual([
      ['a', 'b', 'c'],
      ['d', 'e', 'f'],
    ]);
    expect(await take(0)).toBeNull(); // taken once
    expect(await take(1)).toEqual(['b']);
    expect(await take(2)).toBeNull(); // gone after the read: read alone (it finds it gone)
    expect(await take(4)).toEqual(['e']);
    expect(reads).toHaveLength(3); // g, h, i read ahead once d's group was read
    expect(await take(9)).toBeNull(); // j would be a group of one: read alone
    expect(reads).toHaveLength(3);
  });
});
