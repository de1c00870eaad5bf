import type { RangeDigest } from '../ports/source-cluster';

/** What the copy read of one partition: the set digest of its documents, and when it began. */
export interface CopyRead {
  digest: RangeDigest;
  /** The verifier's tracker sequence when the read began (`DirtyTracker.untouchedSince`). */
  begunAt: number;
}

/**
 * The digests the copy took of the documents it read, by partition, kept until the live pass
 * checks their ranges. A range no write touched since its copy began reading it holds on the
 * source what the copy read then, so the live pass checks it by reading the destination alone
 * and comparing with this digest: the source is read once, by the copy, instead of once more
 * by the verifier. Anything else (a write since, a DDL, a digest missing or different) is
 * checked by reading both sides, as without. In memory only: a restarted worker reads both.
 *
 * Memory: one small entry per copied partition not yet checked; past `limit` entries, new
 * digests are not kept (those ranges read both sides).
 */
export class CopyReads {
  private readonly reads = new Map<string, CopyRead>();

  constructor(
    private readonly sequence: () => number,
    private readonly limit = 100_000,
  ) {}

  /** The copy begins reading partition `id`: call the result with the digest of what it read. */
  reading(id: string): (digest: RangeDigest) => void {
    const begunAt = this.sequence();
    return (digest) => {
      if (this.reads.size < this.limit || this.reads.has(id))
        this.reads.set(id, { digest, begunAt });
    };
  }

  /** The read of partition `id`, if kept, forgotten as it is handed out (each is used once). */
  take(id: string): CopyRead | undefined {
    const read = this.reads.get(id);
    if (read) this.reads.delete(id);
    return read;
  }

  get size(): number {
    return this.reads.size;
  }

  clear(): void {
    this.reads.clear();
  }
}
