import { documentIdentity } from '../apply/doc-key';
import type { IdRange } from '../ports/source-cluster';
import { DirtyTracker, type RangeState, type TrackedNamespace } from './dirty-tracker';

const items = (
  ranges: IdRange[] = [{ max: 10 }, { min: 10, max: 20 }, { min: 20 }],
): TrackedNamespace => ({
  database: 'shop',
  collection: 'items',
  signature: 'k|1|done|collection',
  ranges,
  natural: false,
});

function tracker(limits = {}) {
  let now = 1_000;
  const t = new DirtyTracker(() => now, limits);
  const mark = (id: number) =>
    t.markDocument('shop', 'items', id, documentIdentity('shop', 'items', { _id: id }));
  return { t, mark, advance: (ms: number) => (now += ms) };
}

/** Checks every planned range and document as equal (what a clean check does). */
function checkAllEqual(t: DirtyTracker, all = false) {
  const work = t.plan({ all, recheckMs: 1_000 });
  const start = t.sequence;
  for (const w of work) {
    for (const r of w.ranges) t.rangeChecked(w.state, r, start, true);
    for (const e of w.ids) t.documentChecked(w.state, e, start, true);
  }
  return work;
}

describe('DirtyTracker (what the incremental verifier still has to read)', () => {
  it('reuses a backlog that counts unchecked work for reuseMs when asked to; never one with none', () => {
    const { t, mark, advance } = tracker();
    t.sync([items()]);
    const first = t.backlog(1_000);
    expect(first.uncheckedRanges).toBe(3);
    const state = t.get('shop', 'items')!;
    const work = t.plan({ all: false, recheckMs: 1_000 });
    const start = t.sequence;
    t.rangeChecked(work[0]!.state, work[0]!.ranges[0]!, start, true);
    // Something moved: asked with reuse, the second-old figures; without, a new count.
    expect(t.backlog(1_000).uncheckedRanges).toBe(3);
    expect(t.backlog().uncheckedRanges).toBe(2);
    for (const r of work[0]!.ranges.slice(1)) t.rangeChecked(state, r, start, true);
    expect(t.backlog(1_000).uncheckedRanges).toBe(2);
    advance(1_000);
    expect(t.backlog(1_000).uncheckedRanges).toBe(0); // a second old: counted again
    // Nothing unchecked: never reused once something moved.
    t.metadataChecked(state, true, 2_000);
    expect(t.backlog()).toEqual(
      expect.objectContaining({ uncheckedRanges: 0, dirtyRanges: 0, oldestUncheckedMs: 0 }),
    );
    mark(5);
    advance(500);
    expect(t.backlog(1_000).oldestUncheckedMs).toBe(500);
  });

  it('the metadata left to compare, asked for again, reflects every check, DDL and catalog change', () => {
    const { t } = tracker();
    const other: TrackedNamespace = {
      ...items(),
      collection: 'orders',
      signature: 'o|1|done|collection',
    };
    t.sync([items(), other]);
    expect(t.uncheckedMetadata()).toBe(2);
    const [a, b] = [t.get('shop', 'items')!, t.get('shop', 'orders')!];
    t.metadataChecked(a, true, 1_000);
    expect(t.uncheckedMetadata()).toBe(1);
    // Found different: checked all the same (the final pass names it).
    t.metadataChecked(b, false, 1_000);
    expect(t.uncheckedMetadata()).toBe(0);
    expect([b.metadataOk, b.metadataDiffers]).toEqual([false, 1]);
    t.metadataChanged('shop', 'items'); // a DDL
    expect(t.uncheckedMetadata()).toBe(1);
    t.metadataChecked(a, true, 2_000);
    expect(t.uncheckedMetadata()).toBe(0);
    // A new partition set: compared again.
    t.sync([{ ...items(), signature: 'k|2|done|collection' }, other]);
    expect(t.uncheckedMetadata()).toBe(1);
    // Gone from the catalog: nothing left to compare for it.
    t.sync([other]);
    expect(t.uncheckedMetadata()).toBe(0);
  });

  it('a backlog asked for again reflects every check, write, DDL and catalog change since, and ages', () => {
    const { t, mark, advance } = tracker();
    t.sync([items()]);
    expect(t.backlog()).toMatchObject({ uncheckedRanges: 3, oldestUncheckedMs: 0 });
    advance(400);
    expect(t.backlog()).toMatchObject({ uncheckedRanges: 3, oldestUncheckedMs: 400 });
    const work = t.plan({ all: true, recheckMs: 1_000 });
    t.rangeChecked(work[0]!.state, work[0]!.ranges[0]!, t.sequence, true);
    expect(t.backlog()).toMatchObject({ uncheckedRanges: 2 });
    checkAllEqual(t, true);
    expect(t.backlog()).toMatchObject({ uncheckedRanges: 0, dirtyRanges: 0, oldestUncheckedMs: 0 });
    mark(5);
    advance(250);
    expect(t.backlog()).toMatchObject({ dirtyDocuments: 1, oldestUncheckedMs: 250 });
    checkAllEqual(t, true);
    expect(t.backlog()).toMatchObject({ dirtyDocuments: 0, oldestUncheckedMs: 0 });
    t.sync([{ ...items(), signature: 'k|2|done|collection' }]); // a new partition set
    expect(t.backlog()).toMatchObject({ uncheckedRanges: 3 });
    t.sync([]); // dropped from the catalog
    expect(t.backlog()).toMatchObject({ uncheckedRanges: 0 });
  });

  it('every copied range is unchecked until a check reads it; then nothing is left to read', () => {
    const { t } = tracker();
    expect(t.caughtUp(5_000)).toBe(false); // the catalog not followed yet
    t.sync([items()]);
    expect(t.backlog()).toMatchObject({ uncheckedRanges: 3, dirtyDocuments: 0 });
    expect(t.caughtUp(5_000)).toBe(false);
    const work = checkAllEqual(t);
    expect(work[0]!.ranges).toHaveLength(3);
    expect(t.backlog()).toMatchObject({ uncheckedRanges: 0, dirtyRanges: 0, dirtyDocuments: 0 });
    expect(t.caughtUp(5_000)).toBe(true);
    expect(t.plan({ all: true, recheckMs: 1_000 })).toEqual([]);
  });

  it('a document written during every check is never older than the last check (canCommit stays reachable)', () => {
    const { t, mark, advance } = tracker();
    t.sync([items()]);
    checkAllEqual(t);
    mark(5);
    for (let round = 0; round < 20; round++) {
      advance(1_500);
      const work = t.plan({ all: false, recheckMs: 1_000, settleMs: 1_000 });
      const start = t.sequence;
      mark(5); // the application writes it again while the check reads it
      for (const w of work) for (const e of w.ids) t.documentChecked(w.state, e, start, true);
    }
    // Still dirty (a write landed during each check), but only as old as the last check.
    expect(t.backlog().dirtyDocuments).toBe(1);
    expect(t.backlog().oldestUncheckedMs).toBe(0);
    expect(t.caughtUp(5_000)).toBe(true);
  });

  it('a written document is dirty by _id (numbers by value) until an equal check, and only it is read', () => {
    const { t, mark } = tracker();
    t.sync([items()]);
    checkAllEqual(t);
    mark(12);
    mark(12); // twice: one entry
    t.markDocument('shop', 'items', 12.0, documentIdentity('shop', 'items', { _id: 12.0 }));
    mark(3);
    const [work] = t.plan({ all: true, recheckMs: 1_000 });
    expect(work!.ranges).toEqual([]);
    expect(work!.ids.map((e) => e.id)).toEqual([12, 3]);
    checkAllEqual(t);
    expect(t.backlog().dirtyDocuments).toBe(0);
  });

  it('a write during a check keeps the document dirty (the check clears only what it saw)', () => {
    const { t, mark } = tracker();
    t.sync([items()]);
    checkAllEqual(t);
    mark(5);
    const [work] = t.plan({ all: false, recheckMs: 1_000 });
    const start = t.sequence;
    mark(5); // applied while the check reads both sides
    t.documentChecked(work!.state, work!.ids[0]!, start, true);
    expect(t.backlog().dirtyDocuments).toBe(1);
    expect(t.plan({ all: false, recheckMs: 1_000 })[0]!.ids.map((e) => e.id)).toEqual([5]);
  });

  it('a document that differs stays dirty: re-checked after a growing pause, always by the final pass', () => {
    const { t, mark, advance } = tracker();
    t.sync([items()]);
    checkAllEqual(t);
    mark(7);
    const [work] = t.plan({ all: false, recheckMs: 1_000 });
    t.documentChecked(work!.state, work!.ids[0]!, t.sequence, false);
    expect(t.plan({ all: false, recheckMs: 1_000 })).toEqual([]); // pausing
    expect(t.plan({ all: true, recheckMs: 1_000 })[0]!.ids).toHaveLength(1);
    // Checked since its write: it does not hold canCommit (the final pass decides).
    advance(60_000);
    expect(t.caughtUp(5_000)).toBe(true);
    expect(t.plan({ all: false, recheckMs: 1_000 })[0]!.ids).toHaveLength(1);
  });

  it('a document is stuck different after two differing checks with no write between them', () => {
    const { t, mark, advance } = tracker();
    t.sync([items()]);
    checkAllEqual(t);
    mark(7);
    const check = (equal: boolean) => {
      const [work] = t.plan({ all: false, recheckMs: 1_000 });
      return t.documentChecked(work!.state, work!.ids[0]!, t.sequence, equal);
    };
    expect(check(false)).toBe(false); // the first difference: a write may be on its way
    advance(1_000);
    expect(check(false)).toBe(true); // a pause with no write, still different
    advance(2_000);
    expect(check(true)).toBe(false);
    expect(t.backlog().dirtyDocuments).toBe(0);
  });

  it('a write between two differing checks means the document is not stuck', () => {
    const { t, mark, advance } = tracker();
    t.sync([items()]);
    checkAllEqual(t);
    mark(7);
    const [first] = t.plan({ all: false, recheckMs: 1_000 });
    const entry = first!.ids[0]!;
    expect(t.documentChecked(first!.state, entry, t.sequence, false)).toBe(false);
    mark(7); // change application wrote it again
    advance(1_000);
    const [second] = t.plan({ all: false, recheckMs: 1_000 });
    expect(t.documentChecked(second!.state, second!.ids[0]!, t.sequence, false)).toBe(false);
    // A write during the check (after it started) does not count as quiet either.
    advance(2_000);
    const [third] = t.plan({ all: false, recheckMs: 1_000 });
    const start = t.sequence;
    mark(7);
    expect(t.documentChecked(third!.state, third!.ids[0]!, start, false)).toBe(false);
  });

  it('a document a range check found different is stuck at its first quiet recheck', () => {
    const { t, advance } = tracker();
    t.sync([items()]);
    const [work] = t.plan({ all: false, recheckMs: 1_000 });
    const start = t.sequence;
    const range = work!.ranges[0]!;
    t.rangeSettledExcept(work!.state, range, start, [
      { id: 3, identity: documentIdentity('shop', 'items', { _id: 3 }) },
    ]);
    advance(1_000);
    const [again] = t.plan({ all: false, recheckMs: 1_000 });
    expect(again!.ids.map((e) => e.id)).toEqual([3]);
    // The range check marked it (its own write-less mark): quiet since, and still different.
    expect(t.documentChecked(again!.state, again!.ids[0]!, t.sequence, false)).toBe(true);
  });

  it('caught up only while no write is older than the limit without a check', () => {
    const { t, mark, advance } = tracker();
    t.sync([items()]);
    checkAllEqual(t);
    mark(1);
    expect(t.caughtUp(5_000)).toBe(true);
    advance(6_000);
    expect(t.backlog().oldestUncheckedMs).toBe(6_000);
    expect(t.caughtUp(5_000)).toBe(false);
    checkAllEqual(t);
    expect(t.caughtUp(5_000)).toBe(true);
  });

  it('past the per-namespace cap a write marks its whole range; its _ids are settled with it', () => {
    const { t, mark } = tracker({ idsPerNamespace: 2 });
    t.sync([items()]);
    checkAllEqual(t);
    mark(1);
    mark(15);
    mark(16); // over the cap: range [10, 20) is dirty
    expect(t.backlog()).toMatchObject({ dirtyDocuments: 2, dirtyRanges: 1 });
    const [work] = t.plan({ all: true, recheckMs: 1_000 });
    expect(work!.ranges.map((r) => r.range)).toEqual([{ min: 10, max: 20 }]);
    expect(work!.ids.map((e) => e.id)).toEqual([1]); // 15 is read with its range
    checkAllEqual(t, true);
    expect(t.backlog()).toMatchObject({ dirtyDocuments: 0, dirtyRanges: 0 });
  });

  it('the total cap and over-long identities mark ranges too (memory stays bounded)', () => {
    const { t, mark } = tracker({ idsTotal: 1, maxIdentityChars: 40 });
    t.sync([items()]);
    checkAllEqual(t);
    mark(1);
    mark(25);
    t.markDocument('shop', 'items', 11, 'x'.repeat(41));
    expect(t.documentsTracked).toBe(1);
    expect(t.backlog().dirtyRanges).toBe(2);
  });

  it('writes before the ranges are known, past the cap, make every range dirty', () => {
    const { t, mark } = tracker({ idsPerNamespace: 1 });
    mark(1);
    mark(2);
    t.sync([items()]);
    checkAllEqual(t);
    expect(t.backlog()).toMatchObject({ uncheckedRanges: 0, dirtyRanges: 0, dirtyDocuments: 0 });
  });

  it('a drop or rename starts the namespace over; a namespace gone from the catalog is forgotten', () => {
    const { t, mark } = tracker();
    t.sync([items()]);
    checkAllEqual(t);
    mark(3);
    t.invalidate('shop', 'items');
    expect(t.backlog()).toMatchObject({ dirtyDocuments: 0, uncheckedRanges: 0 });
    t.sync([items()]);
    expect(t.backlog().uncheckedRanges).toBe(3);
    checkAllEqual(t);
    t.sync([]);
    expect(t.namespaces()).toEqual([]);
  });

  it('a new partition set (the collection copied again) is checked again', () => {
    const { t } = tracker();
    t.sync([items()]);
    checkAllEqual(t);
    t.sync([{ ...items([{}]), signature: 'k|2|done|collection' }]);
    expect(t.backlog().uncheckedRanges).toBe(1);
  });

  it('live: a write is checked once its oldest unchecked write is settleMs old', () => {
    const { t, mark, advance } = tracker();
    t.sync([items()]);
    checkAllEqual(t);
    mark(4);
    expect(t.plan({ all: false, recheckMs: 1_000, settleMs: 1_000 })).toEqual([]);
    expect(t.plan({ all: true, recheckMs: 1_000, settleMs: 1_000 })[0]!.ids).toHaveLength(1);
    advance(600);
    mark(4); // written again: still due from its first unchecked write
    advance(500);
    expect(t.plan({ all: false, recheckMs: 1_000, settleMs: 1_000 })[0]!.ids).toHaveLength(1);
  });

  it('a range that differs only on listed documents is settled; those documents are re-checked alone', () => {
    const { t, advance } = tracker();
    t.sync([items()]);
    const work = t.plan({ all: false, recheckMs: 1_000 });
    const start = t.sequence;
    const [w] = work;
    const [first, ...rest] = w!.ranges;
    // The first range's digests differ on documents 3 and 7 (writes not applied yet).
    t.rangeSettledExcept(
      w!.state,
      first!,
      start,
      [3, 7].map((id) => ({ id, identity: documentIdentity('shop', 'items', { _id: id }) })),
    );
    for (const r of rest) t.rangeChecked(w!.state, r, start, true);
    expect(t.backlog()).toMatchObject({ uncheckedRanges: 0, dirtyRanges: 0, dirtyDocuments: 2 });
    // Not due before recheckMs; then only the two documents are read, not the range.
    expect(t.plan({ all: false, recheckMs: 1_000 })).toEqual([]);
    advance(1_000);
    const next = t.plan({ all: false, recheckMs: 1_000 });
    expect(next[0]!.ranges).toEqual([]);
    expect(next[0]!.ids.map((e) => e.id)).toEqual([3, 7]);
    const again = t.sequence;
    for (const e of next[0]!.ids) t.documentChecked(next[0]!.state, e, again, true);
    expect(t.backlog()).toMatchObject({ dirtyRanges: 0, dirtyDocuments: 0 });
    expect(t.caughtUp(5_000)).toBe(true);
  });

  it('past the caps, a listed document leaves its range dirty instead', () => {
    const { t } = tracker({ idsPerNamespace: 1 });
    t.sync([items()]);
    const [w] = t.plan({ all: false, recheckMs: 1_000 });
    const start = t.sequence;
    t.rangeSettledExcept(
      w!.state,
      w!.ranges[0]!,
      start,
      [3, 7].map((id) => ({ id, identity: documentIdentity('shop', 'items', { _id: id }) })),
    );
    expect(t.backlog()).toMatchObject({ dirtyRanges: 1, dirtyDocuments: 1 });
  });

  it('checks a range once its partition is copied, and keeps it checked when the copy ends', () => {
    const { t } = tracker();
    t.sync([{ ...items(), ready: [true, false, false] }]);
    const first = checkAllEqual(t);
    expect(first[0]!.ranges.map((r) => r.index)).toEqual([0]);
    expect(t.backlog()).toMatchObject({ uncheckedRanges: 2 });
    expect(t.caughtUp(5_000)).toBe(false);
    t.sync([{ ...items(), ready: [true, true, false] }]);
    expect(checkAllEqual(t)[0]!.ranges.map((r) => r.index)).toEqual([1]);
    // The copy is done: same signature, nothing read twice.
    t.sync([items()]);
    expect(checkAllEqual(t)[0]!.ranges.map((r) => r.index)).toEqual([2]);
    expect(t.caughtUp(5_000)).toBe(true);
  });
});

describe('DirtyTracker: walks of the unsettled namespaces only', () => {
  /** A seeded generator: the same sequence every run. */
  function random(seed: number) {
    let x = seed;
    return (n: number) => {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      return (x >>> 16) % n;
    };
  }

  /** The backlog and plan as a walk of every namespace computes them. */
  function walked(t: DirtyTracker, now: number) {
    let dirtyRanges = 0;
    let uncheckedRanges = 0;
    let uncheckedMetadata = 0;
    let oldest = Infinity;
    for (const state of t.namespaces()) {
      if (state.ranges && !state.metadataOk && state.metadataDiffers === 0) uncheckedMetadata += 1;
      for (const r of state.ranges ?? []) {
        if (!r.checked) uncheckedRanges += 1;
        else if (r.dirty) dirtyRanges += 1;
        if (r.seq > r.checkedSeq) oldest = Math.min(oldest, r.markedAt);
      }
      for (const e of state.ids.values())
        if (e.seq > e.checkedSeq) oldest = Math.min(oldest, e.markedAt);
    }
    const due = t
      .namespaces()
      .filter(
        (s) =>
          s.ranges &&
          (s.ranges.some((r) => !r.checked || r.dirty) ||
            [...s.ids.values()].some((e) => !s.rangeOf(e)?.dirty)),
      )
      .map((s) => s.name)
      .sort();
    return {
      backlog: {
        dirtyDocuments: t.documentsTracked,
        dirtyRanges,
        uncheckedRanges,
        oldestUncheckedMs: oldest === Infinity ? 0 : Math.max(0, now - oldest),
      },
      uncheckedMetadata,
      due,
    };
  }

  it('after any sequence of follows, writes, checks and DDL, the figures and the work equal a walk of everything', () => {
    let now = 1_000;
    const t = new DirtyTracker(() => now, { idsPerNamespace: 3, idsTotal: 8 });
    const next = random(7);
    const names = ['a', 'b', 'c', 'd', 'e', 'f'];
    // Per namespace: its partition set and which of its three ranges are copied.
    const generations = new Map(names.map((n) => [n, 1]));
    const readiness = new Map(names.map((n) => [n, [false, false, false]]));
    const tracked = (c: string, generation: number): TrackedNamespace => ({
      database: 'db',
      collection: c,
      signature: `${c}|${generation}`,
      ranges: [{ max: 10 }, { min: 10, max: 20 }, { min: 20 }],
      ready: [...readiness.get(c)!],
      natural: false,
    });
    t.sync(names.map((n) => tracked(n, 1)));
    let settledSeen = 0;
    let parkedSeen = 0;
    for (let step = 0; step < 3_000; step++) {
      now += next(50);
      const c = names[next(names.length)]!;
      const op = next(12);
      if (op === 0) {
        const id = next(30);
        t.markDocument('db', c, id, documentIdentity('db', c, { _id: id }));
      } else if (op <= 3) {
        // A check of everything planned (now and then every range: mode full), equal or not.
        const start = t.sequence;
        const equal = next(5) !== 0;
        for (const w of t.plan({ all: true, full: op === 3, recheckMs: 1_000 })) {
          for (const r of w.ranges) t.rangeChecked(w.state, r, start, equal);
          for (const e of w.ids) t.documentChecked(w.state, e, start, equal);
        }
      } else if (op <= 5) {
        const state = t.get('db', c);
        if (state?.ranges) t.metadataChecked(state, next(4) !== 0, now);
      } else if (op === 6) {
        t.metadataChanged('db', c);
      } else if (op === 7) {
        // Another partition set for one (its ranges start over, copied or not yet).
        generations.set(c, generations.get(c)! + 1);
        readiness.set(c, Array(3).fill(next(2) === 0) as boolean[]);
        t.syncSome([tracked(c, generations.get(c)!)]);
      } else if (op === 8) {
        t.invalidate('db', c);
        t.sync(names.map((n) => tracked(n, generations.get(n)!)));
      } else if (op === 10 || op === 11) {
        // One of its partitions finished copying.
        readiness.get(c)![next(3)] = true;
        t.syncSome([tracked(c, generations.get(c)!)]);
      } else if (op === 9) {
        const state = t.get('db', c);
        const range = state?.ranges?.[next(3)];
        if (state && range) {
          const identity = documentIdentity('db', c, { _id: 15 });
          t.rangeSettledExcept(state, range, t.sequence, [{ id: 15, identity }]);
        }
      }
      settledSeen += t
        .namespaces()
        .filter(
          (s) =>
            s.ranges &&
            s.metadataOk &&
            s.ids.size === 0 &&
            s.ranges.every((r) => r.checked && !r.dirty),
        ).length;
      const expected = walked(t, now);
      expect(t.backlog()).toEqual(expected.backlog);
      expect(t.uncheckedMetadata()).toBe(expected.uncheckedMetadata);
      expect(
        t
          .plan({ all: true, recheckMs: 1_000 })
          .map((w) => w.state.name)
          .sort(),
      ).toEqual(expected.due);
      expect(t.rangedNamespaces).toBe(t.namespaces().filter((s) => s.ranges).length);
      // The live pass's work (nothing held back by a pause) equals a walk of everything.
      const selected = (r: RangeState) => r.ready && (!r.checked || r.dirty);
      const liveDue = t
        .namespaces()
        .filter(
          (st) =>
            st.ranges &&
            (st.ranges.some(selected) ||
              [...st.ids.values()].some((e) => {
                const r = st.rangeOf(e);
                return !!r && !selected(r) && !r.dirty;
              })),
        )
        .map((st) => st.name)
        .sort();
      expect(
        t
          .plan({ all: false, recheckMs: 0 })
          .map((w) => w.state.name)
          .sort(),
      ).toEqual(liveDue);
      parkedSeen += t.parkedNamespaces;
    }
    // The sequence did settle namespaces (what the walks skip) many times over.
    expect(settledSeen).toBeGreaterThan(1_000);
    expect(parkedSeen).toBeGreaterThan(100);
  });
});
