import { EXACT, pickTopLevelFields } from './pick-fields';
import { BSON, type Document, type Timestamp } from 'bson';
import type { DestinationCluster, InsertResult } from '../ports/destination-cluster';
import type { EngineLogger } from '../ports/engine-logger';
import type { JobStore, PartitionRecord } from '../ports/job-store';
import {
  SourceNamespaceChangedError,
  type ReadOptions,
  type SourceCluster,
} from '../ports/source-cluster';
import { ByteBudget } from './byte-budget';
import { retryInPlace, type InPlaceRetryOptions } from '../faults/retry-in-place';
import { labelFault } from '../faults/fault-labels';
import { worthRunningAgain } from '../faults/transient';
import type { CopyTally } from './copy-tally';
import { InsertBatcher, type WriteBatch } from './insert-batcher';
import { DEFAULT_GROUP_READS, GroupReads, type GroupReadOptions } from './group-reads';

export interface CopierOptions {
  /** Partitions copied at the same time. */
  concurrency: number;
  /**
   * Small partitions (estimated under `smallPartitionBytes`) copied at the same time, in all
   * (default 16; large ones stay within `concurrency`). Many small collections are bound by
   * round trips, not bytes: more of them in flight hide the latency, and the byte budget
   * (`maxBytesInFlight`) still bounds memory.
   */
  smallPartitionConcurrency?: number;
  /** Below this estimated size a partition is small (default 4 MiB). */
  smallPartitionBytes?: number;
  /** Bounds of one unordered insertMany. */
  writeBatchBytes: number;
  writeBatchDocuments: number;
  /** Documents per source cursor batch. */
  readBatchSize: number;
  /**
   * Global bound on document bytes held at once across ALL partitions: read from the source
   * and not yet acknowledged by the destination (default 16 MiB). A partition waits for room
   * before it reads on, so the copy's memory does not grow with concurrency or data size.
   */
  maxBytesInFlight?: number;
  /**
   * Copy bytes to bytes when both ports support it (`readRaw` + `insertRawUnordered`): documents
   * are never decoded (except to route them in a per-shard copy) nor re-encoded. Default true.
   */
  raw?: boolean;
  /** Transient failures of one write batch are retried in place (see retryInPlace). */
  retry?: InPlaceRetryOptions;
  /**
   * Small whole collections read several at once (`SourceCluster.readWholeMany`, raw path
   * only); `collections: 1` reads each alone. Unset values keep DEFAULT_GROUP_READS.
   */
  groupReads?: Partial<GroupReadOptions>;
}

/** One read batch as the copy loop sees it, whichever path produced it. */
interface ReadBatch<T> {
  documents: T[];
  sizes: ArrayLike<number>;
  bytes: number;
}

/** How one path reads, routes and writes documents of type T. */
interface CopyPath<T> {
  read(database: string, collection: string, options: ReadOptions): AsyncIterable<ReadBatch<T>>;
  /** The document (or only `fields` of it, when the path can) for routing by `keep`. */
  decode(document: T, fields?: string[]): Document;
  insert(database: string, collection: string, documents: T[]): Promise<InsertResult>;
}

export const DEFAULT_COPIER: CopierOptions = {
  concurrency: 4,
  // 1 MiB / 1,000 documents. Against 2 MiB / 2,000, in bench (c) runs (200,000 × 1 KB):
  // the worker's peak RSS was ~25 MB lower, and the destination spent ~8 % less CPU per document.
  // The copy rate was within run-to-run noise. At this size a larger command saves no round
  // trip worth having.
  writeBatchBytes: 1024 * 1024,
  writeBatchDocuments: 1_000,
  readBatchSize: 500,
  maxBytesInFlight: 16 * 1024 * 1024,
  smallPartitionConcurrency: 16,
  smallPartitionBytes: 4 * 1024 * 1024,
};

export type CopyOutcome = 'completed' | 'aborted';

/** Records a copied partition: `marked` runs once its mark is written (Copier.run). */
type Marks = (item: { id: string; bytes: number; documents: number }, marked: () => void) => void;

/** Where a partition is read from and written to. */
export interface CopyTarget {
  /** The collection's current name on the source (may differ from the destination's). */
  source: { db: string; coll: string };
  /** Where the destination has it (the catalog's name). */
  destination: { db: string; coll: string };
  /** The collection UUID the source read must match. */
  uuid?: string;
  /** The partition's estimated bytes (its collection's estimate ÷ its partitions), if known. */
  estimatedBytes?: number;
  /** Keeps only the documents this worker owns (a per-shard sync); absent: all. */
  keep?: (doc: Document) => boolean;
  /**
   * A plain collection (no view, no time series) read whole by this worker: a small one may be
   * read together with others of its database (`readWholeMany`).
   */
  whole?: boolean;
  /**
   * The top-level fields `keep` reads (a shard key's): a raw copy decodes only those of each
   * document. Absent: `keep` gets the whole document.
   */
  keepFields?: string[];
}

/** Finds partitions' collections: by catalog, and again by UUID after a source DDL moved one. */
export interface CopyTargets {
  resolve(partition: PartitionRecord): CopyTarget;
  /** Null: the collection is gone from the source (its drop arrives as a change event). */
  relocate(partition: PartitionRecord): Promise<CopyTarget | null>;
  /** The partition is marked done, in the store and in memory (followers of the catalog). */
  done?(partition: PartitionRecord): void;
}

/**
 * The initial copy: copies partitions in parallel. Each partition streams its range from the source
 * and writes UNORDERED batches, with one write in flight while the next batch is read. Memory:
 * every read batch takes its bytes from one ByteBudget shared by all partitions and gives them
 * back once the destination acknowledged them, so the copier holds at most `maxBytesInFlight`
 * plus one read batch per partition (a partition about to wait for room first sends the
 * partial batch it holds, so waiting partitions never hold bytes nobody will release). A
 * duplicate key means a previous
 * attempt already copied that document. A partition is recorded done only after all its writes
 * succeeded, so after a pause or crash it is simply copied again from its start.
 */
export class Copier {
  constructor(
    private readonly source: SourceCluster,
    private readonly destination: DestinationCluster,
    private readonly store: JobStore,
    private readonly tally: CopyTally,
    private readonly logger: EngineLogger,
    private readonly targets: CopyTargets,
    private readonly options: CopierOptions = DEFAULT_COPIER,
    /** Reads are causally after this source time (T0). */
    private readonly afterClusterTime?: Timestamp,
  ) {
    this.budget = new ByteBudget(options.maxBytesInFlight ?? DEFAULT_COPIER.maxBytesInFlight!);
  }

  /** Bytes read and not yet written, across all partitions (exposed for tests and metrics). */
  readonly budget: ByteBudget;

  /** Copies every pending partition. Resolves 'aborted' when `signal` fired; throws on failure. */
  async run(partitions: PartitionRecord[], signal: AbortSignal): Promise<CopyOutcome> {
    const queue = partitions.filter((p) => p.status !== 'done');
    const failure = new AbortController();
    const stop = AbortSignal.any([signal, failure.signal]);
    let firstError: unknown = null;
    let next = 0;
    const { concurrency } = this.options;
    const lanes = Math.max(concurrency, this.options.smallPartitionConcurrency ?? concurrency);
    const smallBelow = this.options.smallPartitionBytes ?? DEFAULT_COPIER.smallPartitionBytes!;
    // Large partitions take one of `concurrency` slots (a semaphore of one unit each); small
    // ones only a lane.
    const large = new ByteBudget(concurrency);
    const raw = this.rawPath();
    const together =
      raw && this.source.readWholeMany && (this.options.groupReads?.collections ?? 2) > 1
        ? new GroupReads(
            this.source,
            queue,
            (partition) => this.targets.resolve(partition),
            this.logger,
            this.afterClusterTime,
            { ...DEFAULT_GROUP_READS, ...this.options.groupReads },
          )
        : null;
    const group = new GroupCommit<{ id: string; bytes: number; documents: number }>((done) =>
      this.store.markPartitionsDone
        ? this.store.markPartitionsDone(done)
        : Promise.all(
            done.map((d) => this.store.markPartitionDone(d.id, d.bytes, d.documents)),
          ).then(() => undefined),
    );
    // A lane does not wait for its partition's mark: it copies its next partition while marks
    // gather into one job-store write (with many small collections, groups of hundreds instead
    // of one per lane). The run ends only once every mark is written; a failed one fails it.
    const marking = new Set<Promise<void>>();
    const marks: Marks = (item, marked) => {
      const written = group.add(item).then(marked);
      marking.add(written);
      written.then(
        () => marking.delete(written),
        (error: unknown) => {
          marking.delete(written);
          firstError ??= error;
          failure.abort();
        },
      );
    };
    const worker = async (): Promise<void> => {
      while (!stop.aborted && next < queue.length) {
        const index = next++;
        const partition = queue[index]!;
        if (partition.status === 'done') continue;
        const estimate = this.targets.resolve(partition).estimatedBytes;
        const big = estimate === undefined || estimate >= smallBelow;
        try {
          if (big) await large.acquire(1, stop);
          try {
            await this.copyPartition(partition, stop, marks, together && { together, index });
          } finally {
            if (big) large.release(1);
          }
        } catch (error) {
          if (stop.aborted && firstError === null && !(error instanceof CopyWriteError)) return;
          firstError ??= error;
          failure.abort();
          return;
        }
      }
    };
    const workers = Array.from({ length: Math.max(1, Math.min(lanes, queue.length)) }, worker);
    await Promise.all(workers);
    while (marking.size > 0) await Promise.allSettled([...marking]);
    if (firstError !== null) throw firstError;
    return signal.aborted ? 'aborted' : 'completed';
  }

  /**
   * One partition, read from wherever the source has its collection now: a rename on the source
   * during the copy surfaces as SourceNamespaceChangedError, and the partition is read again
   * from its start under the new name (documents already written are duplicates). A collection
   * that is gone from the source is left as it is: its drop arrives as a change event.
   */
  private async copyPartition(
    partition: PartitionRecord,
    signal: AbortSignal,
    marks: Marks,
    /** The group reads, and the partition's position in the queue. */
    grouped: { together: GroupReads; index: number } | null,
  ): Promise<void> {
    let target: CopyTarget | null = this.targets.resolve(partition);
    for (let attempt = 0; ; attempt++) {
      try {
        // Read with its group (first attempt only): a partition read again was moved.
        const read =
          attempt === 0 && grouped
            ? await grouped.together.take(partition, grouped.index, signal)
            : null;
        const documents = read
          ? await this.copyRangeOn(this.alreadyRead(read), partition, target, signal)
          : await this.copyRange(partition, target, signal);
        const bytes = this.tally.finish(partition._id);
        // Recorded done only once its writes are acknowledged (they are, here), and done in
        // memory only once the mark is written; marks finishing together share one write.
        marks({ id: partition._id, bytes, documents }, () => {
          partition.status = 'done';
          partition.copiedBytes = bytes;
          partition.copiedDocuments = documents;
          this.targets.done?.(partition);
          this.logger.debug('partition copied', { partition: partition._id, bytes, documents });
        });
        return;
      } catch (error) {
        this.tally.abandon(partition._id);
        if (!(error instanceof SourceNamespaceChangedError) || attempt >= 20) throw error;
        target = await this.targets.relocate(partition);
        this.logger.info('source collection moved during the copy; reading it again', {
          partition: partition._id,
          now: target ? `${target.source.db}.${target.source.coll}` : 'gone',
        });
        if (!target) {
          marks({ id: partition._id, bytes: 0, documents: 0 }, () => {
            partition.status = 'done';
            this.targets.done?.(partition);
          });
          return;
        }
      }
    }
  }

  /** Bytes to bytes, when both ports can (and the options allow it). */
  private rawPath(): CopyPath<Uint8Array> | null {
    const { source, destination } = this;
    if (this.options.raw === false || !source.readRaw || !destination.insertRawUnordered)
      return null;
    const readRaw = source.readRaw.bind(source);
    const insertRaw = destination.insertRawUnordered.bind(destination);
    return {
      read: async function* (database, collection, options) {
        for await (const batch of readRaw(database, collection, options)) {
          yield { ...batch, sizes: batch.documents.map((d) => d.byteLength) };
        }
      },
      decode: (document, fields) =>
        fields ? pickTopLevelFields(document, fields) : BSON.deserialize(document, EXACT),
      insert: insertRaw,
    };
  }

  /**
   * The raw path, its read being documents already read (with their group), in batches cut as
   * the copy cuts its writes (at most `readBatchSize` documents and `writeBatchBytes`): each
   * takes its bytes from the shared budget as a read batch does.
   */
  private alreadyRead(documents: Uint8Array[]): CopyPath<Uint8Array> {
    const raw = this.rawPath()!;
    const limits = {
      maxDocuments: this.options.readBatchSize,
      maxBytes: this.options.writeBatchBytes,
    };
    const asRead = (batch: WriteBatch<Uint8Array>): ReadBatch<Uint8Array> => ({
      ...batch,
      sizes: batch.documents.map((d) => d.byteLength),
    });
    return {
      ...raw,
      read: async function* () {
        const batcher = new InsertBatcher<Uint8Array>(limits);
        for (const document of documents) {
          const before = batcher.makeRoom(document.byteLength);
          if (before) yield asRead(before);
          const filled = batcher.add(document, document.byteLength);
          if (filled) yield asRead(filled);
        }
        if (batcher.pending > 0) yield asRead(batcher.take());
      },
    };
  }

  /** Decoded documents (the destination's driver encodes them again). */
  private decodedPath(): CopyPath<Document> {
    const { source, destination } = this;
    return {
      read: (database, collection, options) => source.read(database, collection, options),
      decode: (document) => document,
      insert: (database, collection, documents) =>
        destination.insertUnordered(database, collection, documents),
    };
  }

  /** Streams the range into the destination; returns the documents read. */
  private copyRange(
    partition: PartitionRecord,
    target: CopyTarget,
    signal: AbortSignal,
  ): Promise<number> {
    const raw = this.rawPath();
    return raw
      ? this.copyRangeOn(raw, partition, target, signal)
      : this.copyRangeOn(this.decodedPath(), partition, target, signal);
  }

  private async copyRangeOn<T>(
    path: CopyPath<T>,
    partition: PartitionRecord,
    target: CopyTarget,
    signal: AbortSignal,
  ): Promise<number> {
    const { db: database, coll: collection } = target.destination;
    const batcher = new InsertBatcher<T>({
      maxBytes: this.options.writeBatchBytes,
      maxDocuments: this.options.writeBatchDocuments,
    });
    let pendingWrite: Promise<void> = Promise.resolve();
    let documents = 0;
    /** Budget bytes this partition holds (read, not yet acknowledged). */
    let held = 0;
    const write = async (batch: WriteBatch<T>): Promise<void> => {
      await pendingWrite; // keep at most one write in flight per partition
      pendingWrite = this.insert(path, database, collection, batch.documents).finally(() => {
        held -= batch.bytes;
        this.budget.release(batch.bytes);
      });
      pendingWrite.catch(() => undefined); // observed by the next await; avoid an unhandled rejection
    };
    try {
      const range = partition.natural ? 'natural' : boundsOf(partition);
      const batches = path.read(target.source.db, target.source.coll, {
        range,
        batchSize: this.options.readBatchSize,
        maxBatchBytes: this.options.writeBatchBytes,
        signal,
        ...(target.uuid !== undefined ? { uuid: target.uuid } : {}),
        ...(this.afterClusterTime ? { afterClusterTime: this.afterClusterTime } : {}),
      });
      for await (const batch of batches) {
        if (signal.aborted) break;
        if (!this.budget.tryAcquire(batch.bytes)) {
          // Send what we hold before waiting: only in-flight writes then hold budget here.
          if (batcher.pending > 0) await write(batcher.take());
          await this.budget.acquire(batch.bytes, signal);
        }
        held += batch.bytes;
        let kept = 0;
        let keptBytes = 0;
        for (let i = 0; i < batch.documents.length; i++) {
          const doc = batch.documents[i]!;
          if (target.keep && !target.keep(path.decode(doc, target.keepFields))) continue;
          kept += 1;
          keptBytes += batch.sizes[i]!;
          const size = batch.sizes[i]!;
          const before = batcher.makeRoom(size);
          if (before) await write(before);
          const filled = batcher.add(doc, size);
          if (filled) await write(filled);
        }
        if (keptBytes < batch.bytes) {
          // Documents of other shards are never written: their budget is free at once.
          held -= batch.bytes - keptBytes;
          this.budget.release(batch.bytes - keptBytes);
        }
        documents += kept;
        this.tally.add(partition._id, keptBytes);
      }
      if (batcher.pending > 0 && !signal.aborted) await write(batcher.take());
      await pendingWrite;
      if (signal.aborted) throw new CopyAbortedError();
      return documents;
    } catch (error) {
      await pendingWrite.catch(() => undefined);
      throw error;
    } finally {
      // Bytes of documents never sent (abort, failure): give them back.
      if (held > 0) this.budget.release(held);
    }
  }

  private async insert<T>(
    path: CopyPath<T>,
    database: string,
    collection: string,
    batch: T[],
  ): Promise<void> {
    try {
      // Idempotent (a document already there is a duplicate key, counted as copied): a batch
      // that failed transiently is sent again here instead of copying the partition again.
      const result = await retryInPlace(
        `copy into ${database}.${collection}`,
        () => path.insert(database, collection, batch),
        this.options.retry,
      );
      if (result.duplicates > 0) {
        this.logger.debug('documents already copied', {
          namespace: `${database}.${collection}`,
          duplicates: result.duplicates,
        });
      }
    } catch (error) {
      throw new CopyWriteError(`${database}.${collection}`, error);
    }
  }
}

function boundsOf(partition: PartitionRecord): { min?: unknown; max?: unknown } {
  const bounds: { min?: unknown; max?: unknown } = {};
  if ('min' in partition) bounds.min = partition.min;
  if ('max' in partition) bounds.max = partition.max;
  return bounds;
}

/** A destination write failed with something other than a duplicate key: the copy must stop. */
export class CopyWriteError extends Error {
  constructor(
    readonly namespace: string,
    cause: unknown,
  ) {
    super(
      `copy into ${namespace} failed: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.name = 'CopyWriteError';
    // A destination that rejected a document (a server error with a code) stops the sync; a
    // connection that broke while writing does not.
    if (!worthRunningAgain(cause)) labelFault(this, ['permanent']);
  }
}

export class CopyAbortedError extends Error {
  constructor() {
    super('copy aborted');
    this.name = 'CopyAbortedError';
  }
}

/**
 * Group commit: items added while a write is running go together in the next write; each
 * `add` resolves once the write holding its item succeeded (and rejects with its failure).
 */
export class GroupCommit<T> {
  private pending: Array<{ item: T; resolve: () => void; reject: (e: unknown) => void }> = [];
  private running = false;

  constructor(private readonly write: (items: T[]) => Promise<void>) {}

  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0);
        try {
          await this.write(batch.map((b) => b.item));
          for (const b of batch) b.resolve();
        } catch (error) {
          for (const b of batch) b.reject(error);
        }
      }
    } finally {
      this.running = false;
    }
  }
}
