import { Timestamp, type Document } from 'bson';
import { CommandError } from '../errors';
import { bsonSize } from '../bson/codec';
import { compareTimestamps } from '../clock/cluster-clock';
import {
  MAX_BATCH_BYTES,
  DEFAULT_FIRST_BATCH,
  type Batch,
  type BatchRequest,
  type ServerCursor,
} from '../cursors/cursor-manager';
import type { NodeServices } from '../node/node-services';
import type { OplogEntry } from '../oplog/oplog-entry';
import type { ChangeStreamSpec } from './spec';
import {
  compareTokens,
  encodeResumeToken,
  highWaterMarkToken,
  tokenToString,
  type ResumeTokenData,
  type ResumeTokenDoc,
} from './resume-token';
import { buildEvent, buildInvalidate, relevance, tokenDataForEntry } from './event-builder';
import { PreImageTracker } from './images';
import { UserPipeline } from './user-pipeline';
import { transactionEvent, transactionTokenData, unwindTransaction } from './transaction-events';

/** mongod's default wait for awaitData getMores without maxTimeMS. */
export const DEFAULT_AWAIT_MS = 1000;
/** Largest document MongoDB can return (16 MiB + 16 KiB of headroom for internal fields). */
const MAX_EVENT_BYTES = 16 * 1024 * 1024 + 16 * 1024;

export const NON_RESUMABLE_LABEL = 'NonResumableChangeStreamError';
export const RESUMABLE_LABEL = 'ResumableChangeStreamError';

/**
 * Codes MongoDB labels ResumableChangeStreamError on a change stream getMore (retriable,
 * network, not-primary and stale-routing categories, plus RetryChangeStream and
 * FailedToSatisfyReadPreference — error_labels.cpp isResumableChangeStreamError).
 */
const RESUMABLE_CODES = new Set([
  6, 7, 63, 89, 91, 133, 150, 189, 234, 262, 9001, 10107, 11600, 11602, 13388, 13435, 13436,
]);
/** Codes in MongoDB's NonResumableChangeStreamError category. */
const NON_RESUMABLE_CODES = new Set([280, 286]);

/** Error labels MongoDB attaches to a failed change-stream aggregate/getMore with this code. */
export function changeStreamErrorLabels(code: number, isGetMore: boolean): string[] {
  if (NON_RESUMABLE_CODES.has(code)) return [NON_RESUMABLE_LABEL];
  if (isGetMore && RESUMABLE_CODES.has(code)) return [RESUMABLE_LABEL];
  return [];
}

export function historyLostError(): CommandError {
  return new CommandError(
    'ChangeStreamHistoryLost',
    'Resume of change stream was not possible, as the resume point may no longer be in the oplog.',
    { labels: [NON_RESUMABLE_LABEL] },
  );
}

/** Where a stream starts reading, as decided by openChangeStream. */
export interface StreamStart {
  /** Entries with ts strictly greater than this are read (undefined: from the oldest). */
  after: Timestamp | undefined;
  /** The PBRT before any event: the client's token, or a high-water mark at the start time. */
  initialToken: ResumeTokenDoc;
  /** An event token the stream must find (and swallow) before returning later events. */
  mustFind?: { token: ResumeTokenDoc; data: ResumeTokenData };
}

interface Pending {
  doc: Document;
  token: ResumeTokenDoc;
}

/**
 * A tailable, awaitData cursor over the oplog. Each oplog entry is filtered by the stream's
 * scope, shaped into an event, checked against the resume token, run through the user's
 * stages, and queued; batches are cut by batchSize and the 16 MiB reply bound.
 *
 * postBatchResumeToken: while events remain queued it is the last returned event's token
 * (resuming from it must not skip them); once the reader is drained it is the larger of that
 * token and a high-water mark at the newest scanned time, so it advances while idle.
 */
export class ChangeStreamCursor implements ServerCursor {
  private readonly queue: Pending[] = [];
  private readonly images: PreImageTracker;
  private readonly pipeline: UserPipeline;
  /** Every entry with ts <= this has been read. */
  private readAfter: Timestamp | undefined;
  /** True when the last read reached the end of the oplog. */
  private atEnd = false;
  private mustFind: StreamStart['mustFind'];
  private pbrt: ResumeTokenDoc;
  private invalidated = false;
  private closed = false;
  private firstBatchDone = false;

  constructor(
    readonly ns: string,
    private readonly node: NodeServices,
    private readonly spec: ChangeStreamSpec,
    start: StreamStart,
    db: string,
  ) {
    this.readAfter = start.after;
    this.pbrt = start.initialToken;
    this.mustFind = start.mustFind;
    this.images = new PreImageTracker(node);
    this.pipeline = new UserPipeline(spec.userPipeline, node, db);
  }

  async nextBatch(request: BatchRequest): Promise<Batch> {
    if (this.closed) return { documents: [], exhausted: true };
    const first = !this.firstBatchDone;
    this.firstBatchDone = true;
    const limit = first
      ? (request.batchSize ?? DEFAULT_FIRST_BATCH)
      : request.batchSize && request.batchSize > 0
        ? request.batchSize
        : Infinity;
    const deadline = Date.now() + (request.maxTimeMS ?? DEFAULT_AWAIT_MS);

    let documents: Document[] = [];
    try {
      for (;;) {
        documents = this.fill(limit);
        if (documents.length > 0 || this.invalidated || first || limit === 0) break;
        const remaining = deadline - Date.now();
        if (remaining <= 0 || request.signal?.aborted) break;
        // Wake when the majority-committed snapshot passes what we have read (or at the
        // deadline / disconnect).
        await this.node.oplog.waitForCommitted(this.waitPoint(), false, remaining, request.signal);
      }
    } catch (err) {
      if (err instanceof CommandError) {
        for (const label of changeStreamErrorLabels(err.code, !first)) {
          if (!err.errorLabels.includes(label)) err.errorLabels.push(label);
        }
      }
      throw err;
    }

    this.advancePbrt();
    const exhausted = this.invalidated && this.queue.length === 0;
    if (exhausted) this.closed = true;
    return { documents, exhausted, cursorFields: { postBatchResumeToken: this.pbrt } };
  }

  close(): void {
    this.closed = true;
    this.queue.length = 0;
  }

  private waitPoint(): Timestamp {
    const committed = this.node.oplog.committedTimestamp();
    if (this.readAfter && (!committed || compareTimestamps(this.readAfter, committed) >= 0))
      return this.readAfter;
    return committed ?? this.readAfter ?? new Timestamp({ t: 0, i: 0 });
  }

  /**
   * Collects up to `limit` events, reading the oplog only when the queue is empty. Like a
   * change stream on a replica set, it reads only majority-committed entries: none newer than
   * the committed snapshot.
   */
  private fill(limit: number): Document[] {
    const out: Document[] = [];
    let bytes = 0;
    let reader: Iterator<OplogEntry> | undefined;
    const visible = this.node.oplog.committedTimestamp();
    this.atEnd = false;
    while (out.length < limit) {
      if (this.queue.length === 0) {
        if (this.invalidated) break;
        if (!reader) {
          if (this.readAfter && this.node.oplog.hasLostHistoryAfter(this.readAfter))
            throw historyLostError();
          reader = this.node.oplog.entriesAfter(this.readAfter);
        }
        const next = reader.next();
        if (next.done || (visible && compareTimestamps(next.value.ts, visible) > 0)) {
          this.atEnd = true;
          break;
        }
        this.readAfter = next.value.ts;
        this.process(next.value);
        continue;
      }
      const pending = this.queue[0];
      const size = bsonSize(pending.doc);
      if (size > MAX_EVENT_BYTES) {
        throw new CommandError(
          'BSONObjectTooLarge',
          `BSONObj size: ${size} (0x${size.toString(16).toUpperCase()}) is invalid. Size must be between 0 and 16793600(16MB) First element: _id: ${tokenToString(pending.token)}`,
        );
      }
      if (out.length > 0 && bytes + size > MAX_BATCH_BYTES) break;
      this.queue.shift();
      out.push(pending.doc);
      bytes += size;
      this.pbrt = maxToken(this.pbrt, pending.token);
    }
    reader?.return?.();
    return out;
  }

  /** Turns one oplog entry into 0..2 queued events (the event, then an invalidate). */
  private process(entry: OplogEntry): void {
    if (entry.op === 'applyOps' || entry.op === 'commitTransaction')
      return this.processTransaction(entry);
    if (entry.op === 'abortTransaction') return;
    this.images.observe(entry);
    const rel = relevance(entry, this.spec);
    if (rel === 'skip') return;
    const built = buildEvent(this.node, entry, this.spec, this.images);

    let emit = true;
    if (this.mustFind) {
      // The resume token must be the first in-scope event at or after its time; events that
      // sort before it were already seen, and passing it without a match is fatal (as in
      // DocumentSourceChangeStreamEnsureResumeTokenPresent).
      const wanted = this.mustFind;
      const mine = encodeResumeToken(tokenDataForEntry(entry, wanted.data.version));
      const cmp = compareTokens(mine, wanted.token);
      if (cmp > 0) {
        throw new CommandError(
          'ChangeStreamFatalError',
          `cannot resume stream; the resume token was not found. ${tokenToString(built.token)}`,
          { labels: [NON_RESUMABLE_LABEL] },
        );
      }
      emit = false;
      if (cmp === 0) this.mustFind = undefined;
      else return; // sorts before the resume point: the client has seen it (and what follows it)
    }
    if (emit) this.enqueue(built.event, built.token);
    if (rel === 'invalidating') {
      const inv = buildInvalidate(entry, built.tokenData);
      this.enqueue(inv.event, inv.token);
      this.invalidated = true;
    }
  }

  /**
   * A committed transaction (its last applyOps entry): one event per operation in the stream's
   * scope, all at the commit's time, each token carrying its `txnOpIndex`, so a stream resumed
   * from the k-th event returns the ones after it. Partial entries and aborted transactions
   * (which write nothing) yield no event.
   */
  private processTransaction(entry: OplogEntry): void {
    for (const op of unwindTransaction(entry)) {
      this.images.observe(op);
      if (relevance(op, this.spec) === 'skip') continue;
      const built = transactionEvent(buildEvent(this.node, op, this.spec, this.images), op);
      if (this.mustFind) {
        const wanted = this.mustFind;
        const data = transactionTokenData(tokenDataForEntry(op, wanted.data.version), op);
        const cmp = compareTokens(encodeResumeToken(data), wanted.token);
        if (cmp > 0) {
          throw new CommandError(
            'ChangeStreamFatalError',
            `cannot resume stream; the resume token was not found. ${tokenToString(built.token)}`,
            { labels: [NON_RESUMABLE_LABEL] },
          );
        }
        if (cmp === 0) this.mustFind = undefined;
        continue;
      }
      this.enqueue(built.event, built.token);
    }
  }

  private enqueue(event: Document, token: ResumeTokenDoc): void {
    for (const doc of this.pipeline.apply(event)) this.queue.push({ doc, token });
    // An event the user's $match dropped still moves the resume point past it.
    if (this.pipeline.empty) return;
    if (!this.queue.some((p) => p.token === token))
      this.skippedToken = maxToken(this.skippedToken, token);
  }

  /** Token of the newest event removed by the user's stages (only relevant once drained). */
  private skippedToken: ResumeTokenDoc | undefined;

  private advancePbrt(): void {
    if (this.queue.length > 0) return; // stay at the last returned event
    if (this.skippedToken) this.pbrt = maxToken(this.pbrt, this.skippedToken);
    if (this.invalidated) return;
    const visible = this.node.oplog.committedTimestamp() ?? this.node.clock.current();
    const scanned = this.atEnd ? latest(visible, this.readAfter) : this.readAfter;
    if (scanned) this.pbrt = maxToken(this.pbrt, highWaterMarkToken(scanned));
  }
}

function latest(a: Timestamp, b: Timestamp | undefined): Timestamp {
  return b && compareTimestamps(b, a) > 0 ? b : a;
}

function maxToken(a: ResumeTokenDoc | undefined, b: ResumeTokenDoc): ResumeTokenDoc;
function maxToken(a: ResumeTokenDoc, b: ResumeTokenDoc | undefined): ResumeTokenDoc;
function maxToken(
  a: ResumeTokenDoc | undefined,
  b: ResumeTokenDoc | undefined,
): ResumeTokenDoc | undefined {
  if (!a) return b;
  if (!b) return a;
  return compareTokens(a, b) >= 0 ? a : b;
}
