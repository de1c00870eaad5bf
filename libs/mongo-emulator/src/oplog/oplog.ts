import type { Timestamp } from 'bson';
import { ClusterClock, compareTimestamps } from '../clock/cluster-clock';
import type { NewOplogEntry, OplogEntry } from './oplog-entry';

export interface OplogOptions {
  /** Entries kept; older ones are truncated like a capped oplog. */
  maxEntries: number;
  /**
   * Asked on every append whether the majority-committed snapshot must stay where it is
   * (mongod's `disableSnapshotting` fail point, evaluated where `_updateCommittedSnapshot`
   * would move the snapshot). Without it, every entry is majority-committed at once, as on a
   * single-member replica set.
   */
  holdCommittedSnapshot?: () => boolean;
}

/**
 * A bounded, ordered log of every operation. Appends are synchronous, so entries are
 * totally ordered by `ts`; readers wait for new entries with `waitForEntriesAfter`.
 */
export class Oplog {
  private entries: OplogEntry[] = [];
  /** Index of the first live entry in `entries` (amortised truncation). */
  private head = 0;
  private waiters = new Set<() => void>();
  /** The ts of the newest entry ever truncated; reading from at or before it loses history. */
  private truncatedThrough: Timestamp | undefined;
  /** Bumped whenever `entries` is compacted, so suspended iterators re-locate themselves. */
  private generation = 0;
  /**
   * The majority-committed snapshot: the newest entry readConcern "majority" reads, change
   * streams and w:"majority" writes may rely on. Equal to the newest entry unless
   * `holdCommittedSnapshot` kept it back.
   */
  private committed: Timestamp | undefined;

  constructor(
    readonly clock: ClusterClock,
    private readonly options: OplogOptions,
  ) {}

  append(entry: NewOplogEntry): OplogEntry {
    return this.appendAt(entry, this.clock.tick());
  }

  /**
   * Appends at a time chosen by the caller (a distributed transaction's commit timestamp, the
   * same on every participant): it must be later than the newest entry and already allocated
   * by the clock.
   */
  appendAt(entry: NewOplogEntry, ts: Timestamp): OplogEntry {
    const newest = this.newest();
    if (newest && compareTimestamps(ts, newest.ts) <= 0)
      throw new Error(`oplog append at ${ts.toString()} is not after the newest entry`);
    const full = withTime(entry, ts, Date.now());
    this.entries.push(full);
    this.truncate();
    if (!this.committed || !this.options.holdCommittedSnapshot?.()) this.committed = full.ts;
    this.notify();
    return full;
  }

  /**
   * Timestamp of the majority-committed snapshot (replSetGetStatus'
   * `readConcernMajorityOpTime`): the newest entry, unless the snapshot is being held back.
   */
  committedTimestamp(): Timestamp | undefined {
    return this.committed;
  }

  /** True when entries newer than the majority-committed snapshot exist. */
  get committedLags(): boolean {
    const newest = this.newest();
    return !!newest && !!this.committed && compareTimestamps(newest.ts, this.committed) > 0;
  }

  get size(): number {
    return this.entries.length - this.head;
  }

  /** Oldest entry still held, or undefined when the log is empty. */
  oldest(): OplogEntry | undefined {
    return this.entries[this.head];
  }

  newest(): OplogEntry | undefined {
    return this.entries.length > this.head ? this.entries[this.entries.length - 1] : undefined;
  }

  /**
   * True when reading from `ts` onwards (inclusive) is impossible because `ts` is older than
   * the oldest entry held: history before the node started, or truncated since. mongod's
   * oplog scan asserts the same (the first oplog entry must not be newer than the start).
   */
  isOlderThanHistory(ts: Timestamp): boolean {
    const first = this.oldest();
    return first !== undefined && compareTimestamps(ts, first.ts) < 0;
  }

  /**
   * True when a reader that has seen everything up to and including `ts` can no longer
   * continue because entries after `ts` were truncated.
   */
  hasLostHistoryAfter(ts: Timestamp): boolean {
    if (!this.truncatedThrough) return false;
    return compareTimestamps(ts, this.truncatedThrough) < 0;
  }

  /** Entries with ts strictly greater than `ts` (all entries when ts is undefined). */
  *entriesAfter(ts: Timestamp | undefined): IterableIterator<OplogEntry> {
    let generation = this.generation;
    let i = ts ? this.firstIndexAfter(ts) : this.head;
    let last: Timestamp | undefined = ts;
    for (;;) {
      if (generation !== this.generation) {
        // The array was compacted while the reader was suspended: find our place again.
        generation = this.generation;
        i = last ? this.firstIndexAfter(last) : this.head;
      }
      if (i < this.head) i = this.head; // truncated under us; callers check hasLostHistoryAfter
      if (i >= this.entries.length) return;
      const entry = this.entries[i];
      last = entry.ts;
      i += 1;
      yield entry;
    }
  }

  /** Resolves when an entry newer than `ts` exists, or after `timeoutMs`, or on abort. */
  waitForEntriesAfter(ts: Timestamp, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return this.waitUntil(
      () => {
        const newest = this.newest();
        return !!newest && compareTimestamps(newest.ts, ts) > 0;
      },
      timeoutMs,
      signal,
    );
  }

  /**
   * Resolves with true once the majority-committed snapshot reaches `ts` (`inclusive`) or
   * passes it; with false after `timeoutMs` (Infinity: never) or on abort.
   */
  waitForCommitted(
    ts: Timestamp,
    inclusive: boolean,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<boolean> {
    const reached = () => {
      if (!this.committed) return false;
      const cmp = compareTimestamps(this.committed, ts);
      return inclusive ? cmp >= 0 : cmp > 0;
    };
    return this.waitUntil(reached, timeoutMs, signal).then(reached);
  }

  /** Resolves when `condition` holds after an append, after `timeoutMs`, or on abort. */
  private waitUntil(
    condition: () => boolean,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<void> {
    if (condition() || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = () => {
        if (timer) clearTimeout(timer);
        this.waiters.delete(check);
        signal?.removeEventListener('abort', finish);
        resolve();
      };
      const check = () => {
        if (condition()) finish();
      };
      // setTimeout clamps delays above 2^31-1 ms to 1 ms: an unbounded wait has no timer.
      if (Number.isFinite(timeoutMs)) timer = setTimeout(finish, Math.max(0, timeoutMs));
      this.waiters.add(check);
      signal?.addEventListener('abort', finish, { once: true });
    });
  }

  private firstIndexAfter(ts: Timestamp): number {
    let lo = this.head;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareTimestamps(this.entries[mid].ts, ts) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private truncate(): void {
    const excess = this.size - this.options.maxEntries;
    if (excess <= 0) return;
    this.truncatedThrough = this.entries[this.head + excess - 1].ts;
    this.head += excess;
    if (this.head > 4096 && this.head > this.entries.length / 2) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
      this.generation += 1;
    }
  }

  private notify(): void {
    if (this.waiters.size === 0) return;
    for (const w of [...this.waiters]) w();
  }
}

/** Every field of an entry besides op and db (a missing or unknown one fails to compile). */
const OPTIONAL_FIELDS: Record<Exclude<keyof NewOplogEntry, 'op' | 'db'>, true> = {
  coll: true,
  uuid: true,
  documentKey: true,
  postImage: true,
  preImage: true,
  updateDescription: true,
  operationDescription: true,
  stateBeforeChange: true,
  to: true,
  lsid: true,
  txnNumber: true,
  fromMigrate: true,
  o: true,
  rid: true,
  applyOps: true,
  prepare: true,
  partialTxn: true,
  count: true,
  prevOpTime: true,
  txnPrefix: true,
  txnOpIndex: true,
};
const OPTIONAL_FIELD_NAMES = Object.keys(OPTIONAL_FIELDS) as Array<keyof typeof OPTIONAL_FIELDS>;

/**
 * The entry as kept in the log: ts and wallMs, then `entry`'s fields (those it has) in one fixed
 * order. Not `{...entry, ts, wall}`: V8 gives every object spread from a source with
 * out-of-object properties a hidden class of its own, several hundred bytes per entry that a
 * million-entry log would pay a million times.
 */
function withTime(entry: NewOplogEntry, ts: Timestamp, wallMs: number): OplogEntry {
  const out: OplogEntry = { ts, wallMs, op: entry.op, db: entry.db };
  const target = out as unknown as Record<string, unknown>;
  for (const field of OPTIONAL_FIELD_NAMES) {
    const value = entry[field];
    if (value !== undefined) target[field] = value;
  }
  return out;
}
