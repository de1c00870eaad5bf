import { Double, Int32, type Document } from 'bson';
import { FakeCluster, replicaSet } from '../testing/in-memory-clusters';
import { diffDocuments } from './document-diff';
import type { VerifyTarget } from './namespace-verifier';
import { VerificationFailedError } from './verification';
import { verifyNamespaces } from './verify-pass';

const docs = (n: number): Document[] =>
  Array.from({ length: n }, (_, i) => ({ _id: i, n: new Int32(i), s: `v${i}` }));

function pair(count = 50) {
  const src = new FakeCluster('cluster0', replicaSet('rsA', 'a:1'));
  const dst = new FakeCluster('cluster1', replicaSet('rsB', 'b:1'));
  for (const cluster of [src, dst]) {
    cluster.seed('shop', 'items', docs(count), { validationLevel: 'moderate' });
    cluster
      .collection('shop', 'items')!
      .indexes.push({ v: 2, key: { s: 1 }, name: 's_1', unique: true });
  }
  return { src, dst, items: (c: FakeCluster) => c.collection('shop', 'items')!.documents };
}

/** Four `_id` partitions, as the copy would have them. */
const target: VerifyTarget = {
  database: 'shop',
  collection: 'items',
  type: 'collection',
  ranges: [{ max: 10 }, { min: 10, max: 20 }, { min: 20, max: 30 }, { min: 30 }],
};

const verify = (src: FakeCluster, dst: FakeCluster, compareUnique = true) =>
  verifyNamespaces(src, dst, [target], { compareUnique, concurrency: 3 });

describe('verification pass (digests per _id range, drill-down to _ids)', () => {
  it('identical sides: no problems, every document counted once', async () => {
    const { src, dst } = pair();
    const [verdict] = await verify(src, dst);
    expect(verdict).toMatchObject({
      namespace: 'shop.items',
      documents: { source: 50, destination: 50 },
      problems: [],
      mismatchedRanges: [],
    });
  });

  it.each([
    [
      'a changed value',
      (d: Document[]) => (d[12]!.s = 'other'),
      'document _id {"$numberInt":"12"} differs',
    ],
    [
      'a changed field order',
      (d: Document[]) => (d[12] = { _id: 12, s: 'v12', n: new Int32(12) }),
      'document _id {"$numberInt":"12"} differs',
    ],
    [
      'Int32 → Double',
      (d: Document[]) => (d[12]!.n = new Double(12)),
      'document _id {"$numberInt":"12"} differs',
    ],
    [
      'a missing document',
      (d: Document[]) => d.splice(12, 1),
      'document _id {"$numberInt":"12"} missing on destination',
    ],
    [
      'an extra document',
      (d: Document[]) => d.push({ _id: 15.5 }),
      'document _id {"$numberDouble":"15.5"} only on destination',
    ],
  ])('catches %s in its range only', async (_name, tamper, problem) => {
    const { src, dst, items } = pair();
    tamper(items(dst));
    const [verdict] = await verify(src, dst);
    expect(verdict!.problems).toContain(problem);
    expect(verdict!.mismatchedRanges).toEqual([{ min: 10, max: 20 }]);
    expect(verdict!.ids).toHaveLength(1);
  });

  it('counts differ: named with both totals', async () => {
    const { src, dst, items } = pair();
    items(dst).splice(40, 3);
    const [verdict] = await verify(src, dst);
    expect(verdict!.problems[0]).toBe('document count differs: source 50, destination 47');
    expect(verdict!.ids).toHaveLength(3);
  });

  it('indexes: missing, non-unique (after commit only), options', async () => {
    const { src, dst } = pair();
    const coll = dst.collection('shop', 'items')!;
    coll.indexes.find((i) => i.name === 's_1')!.unique = false;
    expect((await verify(src, dst, false))[0]!.problems).toEqual([]);
    expect((await verify(src, dst, true))[0]!.problems).toEqual(['index s_1 differs (unique)']);
    coll.indexes = coll.indexes.filter((i) => i.name !== 's_1');
    coll.options = {};
    expect((await verify(src, dst, false))[0]!.problems).toEqual([
      'collection options differ',
      'index s_1 missing on destination',
    ]);
  });

  it('ignores what the sync built on purpose and what is relaxed until commit', async () => {
    const { src, dst } = pair();
    dst.collection('shop', 'items')!.indexes.push({ v: 2, key: { k: 1 }, name: 'k_1' });
    const [verdict] = await verifyNamespaces(
      src,
      dst,
      [{ ...target, ignoreDestinationIndexes: ['k_1'] }],
      { compareUnique: true, concurrency: 2 },
    );
    expect(verdict!.problems).toEqual([]);
  });

  it('digests never read a whole collection into one batch and never count as copy reads', async () => {
    const { src, dst } = pair(500);
    await verify(src, dst);
    expect(src.reads).toBe(0);
    expect(src.comparisons).toBe(4);
  });

  it('diffDocuments merges both sides in _id order and stops at the sample limit', async () => {
    const { src, dst, items } = pair();
    items(dst).splice(0, 20);
    const diff = await diffDocuments(src, dst, 'shop', 'items', { maxDifferences: 3 });
    expect(diff.differences).toEqual([
      { id: '{"$numberInt":"0"}', value: new Int32(0), problem: 'missing on destination' },
      { id: '{"$numberInt":"1"}', value: new Int32(1), problem: 'missing on destination' },
      { id: '{"$numberInt":"2"}', value: new Int32(2), problem: 'missing on destination' },
    ]);
  });

  it('the commit error names namespaces and sample _ids', () => {
    const error = new VerificationFailedError([
      {
        namespace: 'shop.items',
        problems: ['document _id {"$numberInt":"3"} differs'],
        ids: ['3'],
      },
    ]);
    expect(error.name).toBe('VerificationFailed');
    expect(error.message).toContain(
      '1 namespace(s) — shop.items: document _id {"$numberInt":"3"} differs',
    );
  });
});
