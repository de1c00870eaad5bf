import type { IdRange } from '../ports/source-cluster';
import { compareKeyValues } from '../shards/key-order';

/**
 * Memory bound of the dirty set. Every document write change application makes is remembered by
 * its `_id` until a check that started after the write finds both sides byte-equal; past these
 * limits a write marks the `_id` range that holds the document instead (re-read whole).
 *
 * Worst case: `idsTotal` entries of (the `_id` value, its identity string of at most
 * `maxIdentityChars`, ~100 bytes of bookkeeping): 100 000 × (≤ 512 + ~150) B ≈ 65 MB; with
 * ObjectId `_id`s ≈ 100 000 × ~200 B ≈ 20 MB. Ranges cost ~100 bytes each (the copy's
 * partitions: a few hundred per large collection).
 */
export interface DirtyLimits {
  /** Dirty `_id`s remembered per namespace (default 10 000). */
  idsPerNamespace?: number;
  /** Dirty `_id`s remembered over every namespace (default 100 000). */
  idsTotal?: number;
  /** A longer document identity (`db.coll` + canonical `_id`) marks its range (default 512). */
  maxIdentityChars?: number;
}

/** Something a check clears: a document or a range, marked by writes, cleared by an equal check. */
interface Mark {
  /** Tracker sequence number of the latest write (monotonic over the tracker). */
  seq: number;
  /** When the oldest write not yet seen by a check was marked (ms). */
  markedAt: number;
  /** `seq` as of the start of the last check that did not clear it (-1: none). */
  checkedSeq: number;
  checkedAt: number;
  /** Checks in a row that found a difference (re-checked with a growing pause). */
  differs: number;
}

export interface DirtyId extends Mark {
  id: unknown;
  identity: string;
  /** Rewritten from the source once already (see `documentChecked`): never twice. */
  repaired?: boolean;
  /** Index of the range holding it (computed when first needed). */
  range?: number;
}

export interface RangeState extends Mark {
  index: number;
  range: IdRange;
  /** Checked at least once since its namespace (or partition set) was tracked. */
  checked: boolean;
  /** Not known equal: never checked, written since, or different when last checked. */
  dirty: boolean;
  /** Its partition is copied: it may be checked (false while the copy runs). */
  ready: boolean;
}

/** The ids of a namespace that has none (never written to). */
const NO_IDS: ReadonlyMap<string, DirtyId> = new Map();

/** What the tracker keeps of one namespace (by current name, as writes report it). */
export class NamespaceState {
  /**
   * Written `_id`s not yet found equal, by identity. Created on the first and dropped once empty:
   * with many namespaces most are never written to, and an empty Map still costs ~0.5 KB.
   */
  private idMap: Map<string, DirtyId> | null = null;
  /** Absent until the catalog told its copy partitions. */
  ranges: RangeState[] | null = null;
  /**
   * What its ranges were built for (TrackedNamespace's `signature` and `generation`): a new one
   * restarts the namespace.
   */
  signature = '';
  generation = 0;
  /** Natural-order partitions (capped): no `_id` tracking, every write marks the range. */
  natural = false;
  /** Writes arrived past the caps before the ranges were known: every range dirty. */
  overflow = false;
  /** Metadata (type, options, indexes) found equal by the live pass since the last DDL. */
  metadataOk = false;
  metadataCheckedAt = -Infinity;
  metadataDiffers = 0;
  /**
   * The tracker sequence of its last metadata change (a DDL, a new partition set): a check
   * whose reads began before it saw the metadata before the change, and settles nothing.
   */
  metadataChangedAt = 0;
  /** The tracker's last `sync` that named it. */
  followed = 0;

  constructor(
    readonly database: string,
    readonly collection: string,
  ) {}

  get name(): string {
    return `${this.database}.${this.collection}`;
  }

  get ids(): ReadonlyMap<string, DirtyId> {
    return this.idMap ?? NO_IDS;
  }

  addId(entry: DirtyId): void {
    (this.idMap ??= new Map()).set(entry.identity, entry);
  }

  /** True when it was there. */
  deleteId(identity: string): boolean {
    if (!this.idMap?.delete(identity)) return false;
    if (this.idMap.size === 0) this.idMap = null;
    return true;
  }

  clearIds(): void {
    this.idMap = null;
  }

  rangeOf(entry: DirtyId): RangeState | undefined {
    if (!this.ranges) return undefined;
    entry.range ??= rangeIndex(this.ranges, entry.id);
    return this.ranges[entry.range];
  }
}

/** One namespace as the catalog has it: what the tracker follows. */
export interface TrackedNamespace {
  database: string;
  collection: string;
  /**
   * What the ranges are built for, with `generation`: a change of either restarts the namespace
   * (fresh ranges, all unchecked). The verifier gives the catalog key (the record's own string,
   * so nothing is allocated per namespace) and folds the partition set, copy state and type
   * into the number.
   */
  signature: string;
  /** See `signature` (absent: 0). */
  generation?: number;
  ranges: IdRange[];
  /** Per range: copied, so it may be checked (absent: every range is). */
  ready?: boolean[];
  natural: boolean;
  /** A view: metadata only, no ranges. */
  view?: boolean;
}

export interface Backlog {
  /** `_id`s written and not yet found equal (checked or not). */
  dirtyDocuments: number;
  /** Ranges not known equal (written past the caps, or different when last read). */
  dirtyRanges: number;
  /** Ranges never checked since they were copied (a pass reads them whole). */
  uncheckedRanges: number;
  /** Age of the oldest write no check has seen yet (0: none). */
  oldestUncheckedMs: number;
}

/** Work for one check of one namespace. */
export interface NamespaceWork {
  state: NamespaceState;
  ranges: RangeState[];
  ids: DirtyId[];
}

const pending = (m: Mark) => m.seq > m.checkedSeq;

/**
 * How long progress may reuse a backlog that still counts unchecked work while the initial copy
 * runs (ms; see `backlog`).
 */
export const COPY_BACKLOG_REUSE_MS = 1_000;

/**
 * The dirty set of the incremental verifier: per namespace, the copy's `_id` ranges (each
 * checked once, then kept verified) and the `_id`s change application wrote since their last
 * equal check. Writes are reported after they land on the destination; a check records the
 * sequence number it started at and clears only marks no later write has renewed, so a write
 * during a check is never lost.
 */
export class DirtyTracker {
  private readonly byDb = new Map<string, Map<string, NamespaceState>>();
  /**
   * The namespaces that may hold work or count in the backlog: every one not settled (ranges all
   * checked equal, metadata equal, no dirty `_id`). Added by whatever may unsettle one, dropped
   * lazily by the walks that find it settled. The live pass, progress and canCommit walk only
   * these: once a copy of 100,000 small collections is checked, a handful instead of all.
   */
  private readonly active = new Set<NamespaceState>();
  /**
   * Unsettled namespaces the live pass has nothing to do for until their copy ends: every range
   * waits for its partition (not ready, never checked), no `_id` written, no overflow. Kept out
   * of `active`, so that during a copy of 100,000 small collections the live pass walks those
   * whose partitions finished, not every one still to copy; the backlog counts them.
   */
  private readonly parked = new Set<NamespaceState>();
  /** Followed namespaces that have ranges (the catalog told their partitions). */
  private ranged = 0;
  private seq = 0;
  private idCount = 0;
  private readonly perNamespace: number;
  private readonly total: number;
  private readonly maxChars: number;
  /** The catalog was followed once (what "caught up" needs before it can be true). */
  synced = false;
  private syncRound = 0;
  /**
   * Bumped by every change to ranges and marks other than a new write (which bumps `seq`):
   * `backlog` is reused while neither moved — progress and canCommit ask for it several times a
   * second, and at 100,000 namespaces each walk took tens of milliseconds.
   */
  private version = 0;
  private lastBacklog: {
    version: number;
    seq: number;
    /** When it was counted (the tracker's clock). */
    at: number;
    dirtyRanges: number;
    uncheckedRanges: number;
    oldest: number;
    uncheckedMetadata: number;
  } | null = null;

  constructor(
    private readonly now: () => number,
    limits: DirtyLimits = {},
  ) {
    this.perNamespace = limits.idsPerNamespace ?? 10_000;
    this.total = limits.idsTotal ?? 100_000;
    this.maxChars = limits.maxIdentityChars ?? 512;
  }

  /** The current sequence number: a check started now clears marks up to it. */
  get sequence(): number {
    return this.seq;
  }

  get documentsTracked(): number {
    return this.idCount;
  }

  namespaces(): NamespaceState[] {
    return [...this.eachNamespace()];
  }

  /**
   * Every followed namespace, without building a list: the live pass and progress walk them
   * several times a second, and at 100,000 namespaces those lists were much of the garbage.
   */
  *eachNamespace(): IterableIterator<NamespaceState> {
    for (const dbMap of this.byDb.values()) yield* dbMap.values();
  }

  /**
   * The namespaces not known settled (see `active`), settled ones dropped on the way: a
   * namespace not visited has all its ranges checked equal, its metadata equal and no dirty
   * `_id` (or is not followed and was never written to).
   */
  *eachActive(): IterableIterator<NamespaceState> {
    for (const state of this.active) {
      if (settled(state)) this.active.delete(state);
      else yield state;
    }
  }

  /** Every namespace not known settled: `eachActive` and the parked ones (all of the backlog). */
  *eachUnsettled(): IterableIterator<NamespaceState> {
    yield* this.parked;
    yield* this.eachActive();
  }

  /** Namespaces whose every range waits for its copy (unsettled, no live work). */
  get parkedNamespaces(): number {
    return this.parked.size;
  }

  /** Followed namespaces with ranges (what per-namespace verification counts). */
  get rangedNamespaces(): number {
    return this.ranged;
  }

  get(database: string, collection: string): NamespaceState | undefined {
    return this.byDb.get(database)?.get(collection);
  }

  /**
   * Hot path (once per document a write batch landed): one map lookup, and one entry allocated
   * only for an `_id` not already dirty.
   */
  markDocument(database: string, collection: string, id: unknown, identity: string): void {
    const state = this.state(database, collection);
    this.activate(state);
    const seq = ++this.seq;
    const existing = state.ids.get(identity);
    if (existing) {
      if (!pending(existing)) existing.markedAt = this.now();
      existing.seq = seq;
      return;
    }
    if (
      !state.natural &&
      state.ids.size < this.perNamespace &&
      this.idCount < this.total &&
      identity.length <= this.maxChars
    ) {
      const now = this.now();
      state.addId({
        id,
        identity,
        seq,
        markedAt: now,
        checkedSeq: -1,
        checkedAt: 0,
        differs: 0,
      });
      this.idCount += 1;
      return;
    }
    if (!state.ranges) {
      state.overflow = true;
      return;
    }
    const range = state.ranges[state.natural ? 0 : rangeIndex(state.ranges, id)];
    if (range) this.markRange(range, seq);
  }

  /**
   * A DDL that replaces documents without document events (drop, rename, dropDatabase): the
   * namespace starts over — every range unchecked, its dirty `_id`s forgotten (covered).
   */
  invalidate(database: string, collection?: string): void {
    const dbMap = this.byDb.get(database);
    if (!dbMap) return;
    this.version += 1;
    for (const [name, state] of [...dbMap]) {
      if (collection !== undefined && name !== collection) continue;
      this.idCount -= state.ids.size;
      if (state.ranges) this.ranged -= 1;
      this.active.delete(state);
      this.parked.delete(state);
      dbMap.delete(name);
    }
  }

  /** Any other DDL of a namespace: its metadata is checked again. */
  metadataChanged(database: string, collection?: string): void {
    const seq = ++this.seq;
    for (const state of this.byDb.get(database)?.values() ?? []) {
      if (collection === undefined || state.collection === collection) {
        state.metadataOk = false;
        state.metadataDiffers = 0; // not checked since the change
        state.metadataChangedAt = seq;
        this.activate(state);
      }
    }
  }

  /**
   * Follows the catalog: a namespace seen for the first time, or with another partition set or
   * copy state, gets fresh ranges (all unchecked); one the catalog no longer holds is dropped.
   */
  sync(namespaces: Iterable<TrackedNamespace>): void {
    // Stamped rather than collected in a set: at 100,000 namespaces, after each catalog write.
    const round = ++this.syncRound;
    for (const ns of namespaces) this.follow(ns, round);
    const gone = [];
    for (const state of this.eachNamespace()) if (state.followed !== round) gone.push(state);
    for (const state of gone) this.invalidate(state.database, state.collection);
    this.synced = true;
  }

  /**
   * `sync` of some namespaces only, the catalog otherwise as the last `sync` saw it (their
   * partitions finished: no namespace came or went). Nothing is dropped.
   */
  syncSome(namespaces: Iterable<TrackedNamespace>): void {
    for (const ns of namespaces) this.follow(ns, this.syncRound);
  }

  private follow(ns: TrackedNamespace, round: number): void {
    const state = this.state(ns.database, ns.collection);
    state.followed = round;
    const generation = ns.generation ?? 0;
    if (state.signature !== ns.signature || state.generation !== generation || !state.ranges) {
      this.version += 1;
      const now = this.now();
      const seq = ++this.seq;
      if (!state.ranges) this.ranged += 1;
      state.signature = ns.signature;
      state.generation = generation;
      state.natural = ns.natural;
      state.metadataOk = false;
      state.metadataDiffers = 0;
      state.metadataChangedAt = seq;
      const ranges = ns.view ? [] : ns.ranges.length > 0 ? ns.ranges : [{}];
      state.ranges = ranges.map((range, index) => ({
        index,
        range,
        checked: false,
        dirty: true,
        seq,
        markedAt: now,
        checkedSeq: -1,
        checkedAt: 0,
        differs: 0,
        ready: true,
      }));
      for (const entry of state.ids.values()) delete entry.range;
      if (state.natural) {
        this.idCount -= state.ids.size;
        state.clearIds();
      }
      this.activate(state);
    }
    const ranges = state.ranges;
    let waiting = ranges.length > 0 && state.ids.size === 0 && !state.overflow;
    for (let i = 0; i < ranges.length; i++) {
      const r = ranges[i]!;
      r.ready = ns.ready?.[i] ?? true;
      if (r.ready || r.checked) waiting = false;
    }
    if (state.overflow) {
      this.version += 1;
      state.overflow = false;
      for (const r of ranges) this.markRange(r, ++this.seq);
      this.activate(state);
    }
    if (waiting) {
      this.active.delete(state);
      this.parked.add(state);
    } else if (this.parked.has(state)) {
      this.activate(state);
    }
  }

  /** Something may now be due for `state` (a write, a check, a DDL, a copy that ended). */
  private activate(state: NamespaceState): void {
    this.parked.delete(state);
    this.active.add(state);
  }

  /**
   * What a check reads now. `all` (the commit's final pass): every range not known equal and
   * every dirty `_id`. Otherwise (live): what was written since it was last checked (once its
   * oldest unchecked write is `settleMs` old: a hot document is read at most once per `settleMs`),
   * and what differed, again after a pause growing from `recheckMs` to 60 s. An `_id` whose range is read
   * whole is covered by that range.
   */
  plan(options: {
    all: boolean;
    full?: boolean;
    recheckMs: number;
    /** Live: a write is checked once its oldest unchecked write is this old (default 0). */
    settleMs?: number;
  }): NamespaceWork[] {
    const now = this.now();
    const settle = options.settleMs ?? 0;
    const due = (m: Mark) =>
      options.all ||
      (pending(m)
        ? now - m.markedAt >= settle
        : now - m.checkedAt >=
          Math.min(60_000, options.recheckMs * 2 ** Math.max(0, m.differs - 1)));
    const work: NamespaceWork[] = [];
    // A settled namespace has nothing due unless every range is read again (`full`).
    for (const state of options.full
      ? this.eachNamespace()
      : options.all
        ? this.eachUnsettled()
        : this.eachActive()) {
      if (!state.ranges) continue;
      const ranges = state.ranges.filter(
        (r) => (r.ready || options.all) && (options.full || !r.checked || (r.dirty && due(r))),
      );
      const whole = new Set(ranges.map((r) => r.index));
      const ids: DirtyId[] = [];
      if (!options.full) {
        for (const entry of state.ids.values()) {
          const range = state.rangeOf(entry);
          if (!range || whole.has(range.index) || range.dirty) continue;
          if (due(entry)) ids.push(entry);
        }
      }
      if (ranges.length > 0 || ids.length > 0) work.push({ state, ranges, ids });
    }
    return work;
  }

  /**
   * A range's check, started at `startSeq`, found only these documents different (their full
   * list: the range was compared document by document): the range is settled as if equal, and
   * each of them is re-checked on its own — after `recheckMs`, like any document that differed —
   * instead of the whole range (which, written without pause, would hardly ever read equal).
   */
  rangeSettledExcept(
    state: NamespaceState,
    range: RangeState,
    startSeq: number,
    differing: Array<{ id: unknown; identity: string }>,
  ): void {
    this.rangeChecked(state, range, startSeq, true);
    const now = this.now();
    for (const { id, identity } of differing) {
      this.markDocument(state.database, state.collection, id, identity);
      const entry = state.ids.get(identity);
      if (!entry) {
        // Past the caps: the range stays the problem.
        this.markRange(range, ++this.seq);
        range.differs += 1;
        range.checkedAt = now;
        continue;
      }
      // Found different by this check (as of its start): re-checked after the usual pause.
      entry.checkedSeq = entry.seq;
      entry.checkedAt = now;
      entry.differs += 1;
    }
  }

  /** A range's check, started at `startSeq`, found both sides `equal` (or not). */
  rangeChecked(state: NamespaceState, range: RangeState, startSeq: number, equal: boolean): void {
    this.version += 1;
    this.activate(state); // dropped by the next walk if this settled it
    const now = this.now();
    range.checked = true;
    if (equal && range.seq <= startSeq) {
      range.dirty = false;
      range.differs = 0;
      range.checkedSeq = range.seq;
    } else {
      range.dirty = true;
      range.checkedSeq = Math.max(range.checkedSeq, Math.min(range.seq, startSeq));
      if (!equal) range.differs += 1;
      // What is left unchecked was written after this check started: it is that new, not as old
      // as the first write the check covered (else a range written without pause — a capped
      // log — would age for ever and hold canCommit false).
      if (range.seq > startSeq) range.markedAt = Math.max(range.markedAt, now);
    }
    range.checkedAt = now;
    // The `_id`s of the range the check saw are settled with it.
    for (const entry of [...state.ids.values()]) {
      if (entry.seq > startSeq || state.rangeOf(entry) !== range) continue;
      if (equal) this.forget(state, entry);
      else {
        entry.checkedSeq = entry.seq;
        entry.checkedAt = now;
      }
    }
  }

  /**
   * A document's check, started at `startSeq`, found both sides `equal` (or not). Returns true
   * when the document is stuck different: this check and the one before it both found it
   * different, and change application wrote nothing to it since the earlier one began — a
   * recheck pause (≥ `recheckMs`) with no write, while the live pass runs only with change
   * application caught up. Its events will not fix it: the caller may rewrite it from the source.
   */
  documentChecked(
    state: NamespaceState,
    entry: DirtyId,
    startSeq: number,
    equal: boolean,
  ): boolean {
    if (state.ids.get(entry.identity) !== entry) return false; // forgotten meanwhile (a DDL)
    this.version += 1;
    this.activate(state);
    if (equal && entry.seq <= startSeq) {
      this.forget(state, entry);
      return false;
    }
    const stuck =
      !equal && entry.differs > 0 && entry.seq === entry.checkedSeq && entry.seq <= startSeq;
    entry.checkedSeq = Math.max(entry.checkedSeq, Math.min(entry.seq, startSeq));
    entry.checkedAt = this.now();
    if (!equal) entry.differs += 1;
    // Written again after the check started: what is left unchecked is that new.
    if (entry.seq > startSeq) entry.markedAt = Math.max(entry.markedAt, entry.checkedAt);
    return stuck;
  }

  /** Every dirty `_id` of a namespace becomes its range's problem (no `readByIds`). */
  promoteIds(state: NamespaceState): void {
    if (!state.ranges) return;
    if (state.ids.size > 0) this.version += 1;
    for (const entry of [...state.ids.values()]) {
      const range = state.rangeOf(entry);
      if (range) this.markRange(range, ++this.seq);
      this.forget(state, entry);
    }
  }

  /**
   * `reuseMs`: a backlog counted less than this long ago that still counts unchecked ranges or
   * metadata is returned as it is, though something moved since. Progress asks so while the
   * initial copy runs: nearly every namespace of a copy of 100,000 small collections is then
   * unchecked, each finished partition moves the figures, and each progress request and metrics
   * scrape walked all of them again (11 % of the worker's CPU, progress asked every 200 ms).
   * Nothing decides on such a backlog: canCommit is false until the copy is over.
   */
  backlog(reuseMs = 0): Backlog {
    const now = this.now();
    const { dirtyRanges, uncheckedRanges, oldest } = this.tally(reuseMs);
    return {
      dirtyDocuments: this.idCount,
      dirtyRanges,
      uncheckedRanges,
      oldestUncheckedMs: oldest === Infinity ? 0 : Math.max(0, now - oldest),
    };
  }

  /**
   * The figures of one walk over every namespace, reused while nothing they count moved (see
   * `version`): progress, metrics and canCommit each ask several times a second; and for
   * `reuseMs` while they still count unchecked work (see `backlog`).
   */
  private tally(reuseMs = 0): NonNullable<DirtyTracker['lastBacklog']> {
    let last = this.lastBacklog;
    const now = this.now();
    if (
      last === null ||
      !(
        (last.version === this.version && last.seq === this.seq) ||
        ((last.uncheckedRanges > 0 || last.uncheckedMetadata > 0) && now - last.at < reuseMs)
      )
    ) {
      let dirtyRanges = 0;
      let uncheckedRanges = 0;
      let oldest = Infinity;
      let uncheckedMetadata = 0;
      for (const state of this.eachUnsettled()) {
        if (state.ranges && !state.metadataOk && state.metadataDiffers === 0)
          uncheckedMetadata += 1;
        for (const r of state.ranges ?? []) {
          if (!r.checked) uncheckedRanges += 1;
          else if (r.dirty) dirtyRanges += 1;
          if (pending(r)) oldest = Math.min(oldest, r.markedAt);
        }
        for (const entry of state.ids.values()) {
          if (pending(entry)) oldest = Math.min(oldest, entry.markedAt);
        }
      }
      last = {
        version: this.version,
        seq: this.seq,
        at: now,
        dirtyRanges,
        uncheckedRanges,
        oldest,
        uncheckedMetadata,
      };
      this.lastBacklog = last;
    }
    return last;
  }

  /**
   * Caught up: the catalog followed, every range checked once, and no write older than `maxAgeMs`
   * unseen by a check (what differed when checked is re-checked, and named by progress, but does
   * not hold canCommit: the final pass decides).
   */
  caughtUp(maxAgeMs: number, backlog: Backlog = this.backlog()): boolean {
    if (!this.synced) return false;
    return backlog.uncheckedRanges === 0 && backlog.oldestUncheckedMs <= maxAgeMs;
  }

  /**
   * Followed namespaces whose options and indexes no check has compared since they were copied
   * or last changed by DDL (found equal, or found different: both count as checked). The final
   * pass compares those again, so a commit waits for them as for unchecked ranges.
   */
  uncheckedMetadata(): number {
    return this.tally().uncheckedMetadata;
  }

  /** A live check compared a namespace's options and indexes (found equal or not). */
  metadataChecked(state: NamespaceState, equal: boolean, at: number): void {
    this.version += 1;
    this.activate(state);
    state.metadataOk = equal;
    state.metadataCheckedAt = at;
    state.metadataDiffers = equal ? 0 : state.metadataDiffers + 1;
  }

  private markRange(range: RangeState, seq: number): void {
    if (!pending(range)) range.markedAt = this.now();
    range.seq = seq;
    range.dirty = true;
  }

  private forget(state: NamespaceState, entry: DirtyId): void {
    if (state.deleteId(entry.identity)) this.idCount -= 1;
  }

  private state(database: string, collection: string): NamespaceState {
    let dbMap = this.byDb.get(database);
    if (!dbMap) this.byDb.set(database, (dbMap = new Map()));
    let state = dbMap.get(collection);
    if (!state) dbMap.set(collection, (state = new NamespaceState(database, collection)));
    return state;
  }
}

/**
 * Nothing to check and nothing in the backlog: every range checked equal since its last write,
 * the metadata found equal, no dirty `_id` (or, not followed yet, never written to).
 */
function settled(state: NamespaceState): boolean {
  if (state.overflow || state.ids.size > 0) return false;
  const ranges = state.ranges;
  if (!ranges) return true;
  if (!state.metadataOk) return false;
  for (const r of ranges) if (!r.checked || r.dirty) return false;
  return true;
}

/** The range holding `id` (ranges in `_id` order: min inclusive, max exclusive). */
export function rangeIndex(ranges: RangeState[], id: unknown): number {
  let low = 0;
  let high = ranges.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    const min = ranges[mid]!.range;
    if (!('min' in min) || compareKeyValues(id, min.min) >= 0) low = mid;
    else high = mid - 1;
  }
  return low;
}
