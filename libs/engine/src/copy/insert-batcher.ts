import type { Document } from 'bson';

export interface BatchLimits {
  maxBytes: number;
  maxDocuments: number;
}

/** One write batch (decoded documents, or their raw BSON bytes) and its exact BSON size. */
export interface WriteBatch<T = Document> {
  documents: T[];
  bytes: number;
}

/**
 * Groups documents into write batches bounded by bytes and count (unordered insertMany of a
 * few MiB: large enough to amortise round trips, small enough that the copier's global byte
 * budget is shared by several partitions).
 */
export class InsertBatcher<T = Document> {
  private documents: T[] = [];
  private bytes = 0;

  constructor(private readonly limits: BatchLimits) {}

  /**
   * The batch to write first when a document of `size` bytes would overflow the one being
   * filled (null: it fits). Then `add` it. Two calls instead of one returning a list: the copy
   * calls them for every document, and a list per document was garbage at copy rates.
   */
  makeRoom(size: number): WriteBatch<T> | null {
    return this.documents.length > 0 && this.bytes + size > this.limits.maxBytes
      ? this.take()
      : null;
  }

  /** Adds one document; returns the batch it filled (to be written), else null. */
  add(document: T, size: number): WriteBatch<T> | null {
    this.documents.push(document);
    this.bytes += size;
    return this.documents.length >= this.limits.maxDocuments || this.bytes >= this.limits.maxBytes
      ? this.take()
      : null;
  }

  take(): WriteBatch<T> {
    const batch = { documents: this.documents, bytes: this.bytes };
    this.documents = [];
    this.bytes = 0;
    return batch;
  }

  get pending(): number {
    return this.documents.length;
  }
}
