/**
 * Bytes copied by this instance: finished partitions plus partitions in flight. A partition that
 * is abandoned (pause, shutdown, failure) gives its in-flight bytes back, because it will be read
 * again from its start; so the figure never counts a document twice.
 */
export class CopyTally {
  private done: number;
  private readonly inFlight = new Map<string, number>();

  constructor(doneBytes = 0) {
    this.done = doneBytes;
  }

  add(partitionId: string, bytes: number): void {
    this.inFlight.set(partitionId, (this.inFlight.get(partitionId) ?? 0) + bytes);
  }

  finish(partitionId: string): number {
    const bytes = this.inFlight.get(partitionId) ?? 0;
    this.inFlight.delete(partitionId);
    this.done += bytes;
    return bytes;
  }

  abandon(partitionId: string): void {
    this.inFlight.delete(partitionId);
  }

  /** Bytes of a partition read and written so far (not finished yet). */
  inFlightBytes(partitionId: string): number {
    return this.inFlight.get(partitionId) ?? 0;
  }

  get copiedBytes(): number {
    let total = this.done;
    for (const bytes of this.inFlight.values()) total += bytes;
    return total;
  }
}
