import type { Timestamp } from 'bson';
import type { ResumeToken } from './ports';
import { maxTimestamp } from './timestamps';

/** A point of the stream: resuming after `token` continues right after it. */
export interface StreamPosition {
  token: ResumeToken;
  clusterTime?: Timestamp;
}

interface Entry {
  position: StreamPosition;
  done: boolean;
}

/**
 * Tracks which events are applied, and the furthest position safe to resume from. Events
 * finish out of order (parallel lanes), so the safe position is the last one such that it and
 * every position before it are done — never a token past an unapplied event, or a restart
 * would skip that event.
 *
 * Batch ends (postBatchResumeToken) enter as positions that are done immediately: an idle
 * stream thereby advances the checkpoint and its cluster time, so lag does not grow when the
 * source is quiet.
 */
export class CheckpointTracker {
  private readonly entries: Entry[] = [];
  private head = 0;
  /** Sequence number of entries[0]. */
  private base = 0;
  private safe: StreamPosition | undefined;
  /** Cluster time of the safe position, carried forward when a position has none. */
  private safeTime: Timestamp | undefined;
  private listeners = new Set<() => void>();

  constructor(initial?: StreamPosition) {
    this.safe = initial;
    this.safeTime = initial?.clusterTime;
  }

  /** Registers an event about to be applied; returns its sequence number. */
  add(position: StreamPosition): number {
    this.entries.push({ position, done: false });
    return this.base + this.entries.length - 1;
  }

  /** Registers a position with nothing to apply (batch end, ignored event). */
  addDone(position: StreamPosition): void {
    this.complete(this.add(position));
  }

  complete(seq: number): void {
    const entry = this.entries[seq - this.base];
    if (!entry || entry.done) throw new Error(`checkpoint tracker: bad sequence ${seq}`);
    entry.done = true;
    let advanced = false;
    while (this.head < this.entries.length && this.entries[this.head].done) {
      const { position } = this.entries[this.head];
      this.safe = position;
      this.safeTime = maxTimestamp(this.safeTime, position.clusterTime);
      this.head += 1;
      advanced = true;
    }
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries.splice(0, this.head);
      this.base += this.head;
      this.head = 0;
    }
    if (advanced) for (const l of [...this.listeners]) l();
  }

  /** Furthest position with nothing unapplied before it (undefined before the first). */
  get safePosition(): StreamPosition | undefined {
    return this.safe && { token: this.safe.token, clusterTime: this.safeTime };
  }

  /** Events registered and not yet applied. */
  get pending(): number {
    let n = 0;
    for (let i = this.head; i < this.entries.length; i++) if (!this.entries[i].done) n++;
    return n;
  }

  /** Entries not yet folded into the safe position (cheap upper bound of `pending`). */
  get outstanding(): number {
    return this.entries.length - this.head;
  }

  /** Calls `listener` whenever the safe position advances; returns an unsubscribe. */
  onAdvance(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
