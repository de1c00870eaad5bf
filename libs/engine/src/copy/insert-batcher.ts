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

  /** Adds one document; returns the batches (0, 1 or 2) that became full and must be written. */
  push(document: T, size: number): WriteBatch<T>[] {
    const full: WriteBatch<T>[] = [];
    if (this.documents.length > 0 && this.bytes + size > this.limits.maxBytes)
      full.push(this.take());
    this.documents.push(document);
    this.bytes += size;
    if (this.documents.length >= this.limits.maxDocuments || this.bytes >= this.limits.maxBytes) {
      full.push(this.take());
    }
    return full;
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
