/**
 * A byte semaphore: bounds the document bytes the copier holds at once across ALL partitions
 * (read but not yet acknowledged by the destination). Waiters are admitted in FIFO order, so a
 * large request is never starved by a stream of small ones. A request larger than the whole
 * budget is admitted alone (when nothing else is held), so one oversized document cannot
 * deadlock the copy; apart from that case `held` never exceeds `capacity`.
 */
export class ByteBudget {
  private inUse = 0;
  private peak = 0;
  private readonly waiters: Array<{ bytes: number; admit: () => void }> = [];

  constructor(readonly capacity: number) {
    if (!(capacity > 0)) throw new RangeError(`byte budget must be positive: ${capacity}`);
  }

  /** Bytes currently held. */
  get held(): number {
    return this.inUse;
  }

  /** Highest `held` ever observed. */
  get peakHeld(): number {
    return this.peak;
  }

  /** Requests queued behind the budget. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** Takes `bytes` now if they fit (and nobody is queued); false otherwise. */
  tryAcquire(bytes: number): boolean {
    if (this.waiters.length > 0 || !this.fits(bytes)) return false;
    this.take(bytes);
    return true;
  }

  /** Resolves once `bytes` are held. Rejects (without holding anything) if `signal` aborts. */
  acquire(bytes: number, signal?: AbortSignal): Promise<void> {
    if (this.tryAcquire(bytes)) return Promise.resolve();
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        bytes,
        admit: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        this.admitWaiters(); // a large head leaving may unblock smaller requests behind it
        reject(signal?.reason ?? new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Gives back bytes taken earlier. */
  release(bytes: number): void {
    if (bytes <= 0) return;
    if (bytes > this.inUse) throw new RangeError(`released ${bytes} B but only ${this.inUse} held`);
    this.inUse -= bytes;
    this.admitWaiters();
  }

  private fits(bytes: number): boolean {
    return this.inUse + bytes <= this.capacity || this.inUse === 0;
  }

  private take(bytes: number): void {
    this.inUse += bytes;
    if (this.inUse > this.peak) this.peak = this.inUse;
  }

  private admitWaiters(): void {
    while (this.waiters.length > 0 && this.fits(this.waiters[0]!.bytes)) {
      const next = this.waiters.shift()!;
      this.take(next.bytes);
      next.admit();
    }
  }
}
