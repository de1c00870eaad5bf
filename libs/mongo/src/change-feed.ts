import type { Document } from 'bson';
import { MongoServerError, type ChangeStream, type MongoClient } from 'mongodb';
import {
  HistoryLostError,
  resumeTokenTime,
  type ChangeEvent,
  type ChangeFeed,
  type ChangeFeedBatch,
  type ChangeFeedCursor,
  type StartPoint,
} from '@sync/engine/apply';
import { EXACT_BSON } from './exact-bson';

/** ChangeStreamHistoryLost, and ChangeStreamFatalError (the resume token's event is gone). */
const HISTORY_LOST_CODES = new Set([286, 280]);

export interface MongoChangeFeedOptions {
  /** How long a getMore waits for events before returning an empty batch (default 1000). */
  maxAwaitTimeMS?: number;
  /** Upper bound of events handed out per batch (default 1000). */
  maxBatchEvents?: number;
}

/**
 * ChangeFeed over `MongoClient.watch()` at cluster scope with `showExpandedEvents` (so DDL
 * arrives) and exact decoding (no promotion: an Int32 stays Int32 on its way to the
 * destination). No fullDocument lookup: updates are replayed from their updateDescription and
 * only the rare unreplayable one is re-read (MongoDocumentLookup).
 */
export class MongoChangeFeed implements ChangeFeed {
  constructor(
    /** The cluster, or (a per-shard worker) how to reach its shard's replica set. */
    private readonly client: MongoClient | (() => Promise<MongoClient>),
    private readonly options: MongoChangeFeedOptions = {},
  ) {}

  async open(start: StartPoint): Promise<ChangeFeedCursor> {
    const client = typeof this.client === 'function' ? await this.client() : this.client;
    const stream = client.watch<Document, ChangeEvent>([], {
      ...EXACT_BSON,
      showExpandedEvents: true,
      maxAwaitTimeMS: this.options.maxAwaitTimeMS ?? 1000,
      ...start,
    });
    return new MongoChangeFeedCursor(stream, this.options.maxBatchEvents ?? 1000);
  }
}

class MongoChangeFeedCursor implements ChangeFeedCursor {
  constructor(
    private readonly stream: ChangeStream<Document, ChangeEvent>,
    private readonly maxEvents: number,
  ) {}

  /**
   * One server batch: the first `tryNext` may run a getMore (waiting at most maxAwaitTimeMS);
   * the rest of the batch is already buffered. After the last buffered event the driver's
   * `resumeToken` is the postBatchResumeToken, which also advances on an idle stream.
   */
  async next(): Promise<ChangeFeedBatch> {
    try {
      const events: ChangeEvent[] = [];
      const first = await this.stream.tryNext();
      if (first) {
        events.push(first);
        while (events.length < this.maxEvents && this.buffered() > 0) {
          const event = await this.stream.tryNext();
          if (!event) break;
          events.push(event);
        }
      }
      const resumeToken = this.stream.resumeToken as Document | undefined;
      return { events, resumeToken, highWaterTime: resumeTokenTime(resumeToken) };
    } catch (error) {
      throw translateError(error);
    }
  }

  async close(): Promise<void> {
    await this.stream.close();
  }

  /** Events the driver holds from the last server batch (the cursor is internal to ChangeStream). */
  private buffered(): number {
    const cursor = (this.stream as unknown as { cursor?: { bufferedCount?: () => number } }).cursor;
    return cursor?.bufferedCount?.() ?? 0;
  }
}

function translateError(error: unknown): unknown {
  if (error instanceof MongoServerError && HISTORY_LOST_CODES.has(Number(error.code))) {
    return new HistoryLostError(
      `the source no longer has the change history to resume from: ${error.message}`,
      Number(error.code),
      { cause: error },
    );
  }
  return error;
}
