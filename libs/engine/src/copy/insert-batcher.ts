import type { Document } from 'bson';

export interface BatchLimits {
  maxBytes: number;
  maxDocuments: number;
}

/**
 * Groups documents into write batches bounded by bytes and count (unordered insertMany of
 * ~10k docs / ~12 MiB: large enough to amortise round trips, below the 16 MiB+ message limit
 * the driver would otherwise split anyway).
 */
export class InsertBatcher {
  private documents: Document[] = [];
  private bytes = 0;

  constructor(private readonly limits: BatchLimits) {}

  /** Adds one document; returns the batches (0, 1 or 2) that became full and must be written. */
  push(document: Document, size: number): Document[][] {
    const full: Document[][] = [];
    if (this.documents.length > 0 && this.bytes + size > this.limits.maxBytes)
      full.push(this.take());
    this.documents.push(document);
    this.bytes += size;
    if (this.documents.length >= this.limits.maxDocuments || this.bytes >= this.limits.maxBytes) {
      full.push(this.take());
    }
    return full;
  }

  take(): Document[] {
    const batch = this.documents;
    this.documents = [];
    this.bytes = 0;
    return batch;
  }

  get pending(): number {
    return this.documents.length;
  }
}
