import { BSON, type Document } from 'bson';
import {
  MongoCursorExhaustedError,
  MongoError,
  MongoErrorLabel,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
  type MongoClient,
  type RunCommandCursor,
} from 'mongodb';
import {
  HistoryLostError,
  RawDocument,
  resumeTokenTime,
  type ChangeEvent,
  type ChangeFeed,
  type ChangeFeedBatch,
  type ChangeFeedCursor,
  type ResumeToken,
  type StartPoint,
} from '@sync/engine/apply';
import { EXACT_BSON } from './exact-bson';
import { rawDocumentCursor, readRawBuffered } from './raw-cursor';

/** ChangeStreamHistoryLost, and ChangeStreamFatalError (the resume token's event is gone). */
const HISTORY_LOST_CODES = new Set([286, 280]);

/** CursorNotFound: resumable on a getMore (the change streams specification, servers 4.4+). */
const CURSOR_NOT_FOUND = 43;

export interface MongoChangeFeedOptions {
  /** How long a getMore waits for events before returning an empty batch (default 1000). */
  maxAwaitTimeMS?: number;
  /** Upper bound of events handed out per batch (default 1000): the server's batch size. */
  maxBatchEvents?: number;
}

/**
 * ChangeFeed over a cluster-scope `$changeStream` aggregate (`allChangesForCluster`,
 * `showExpandedEvents` so DDL arrives), read as the change streams specification describes —
 * the same command, `getMore` with `maxTimeMS` as the await time, the postBatchResumeToken as
 * the position after a batch, one resume (`resumeAfter` the last position) after a resumable
 * error — but with the events' bytes in hand instead of the driver's `ChangeStream` objects:
 *
 * - every field but `fullDocument` is decoded exactly (no promotion: an Int32 stays Int32 on its
 *   way to the destination);
 * - `fullDocument` is kept as its raw bytes (RawDocument): an insert is written to the
 *   destination as those bytes, never decoded nor re-encoded by the worker (each of the two
 *   cost more than all the rest of an insert event's handling), and decoded only where an
 *   update must be applied onto it in memory.
 *
 * No fullDocument lookup: updates are replayed from their updateDescription and only the rare
 * unreplayable one is re-read (MongoDocumentLookup).
 */
export class MongoChangeFeed implements ChangeFeed {
  constructor(
    /** The cluster, or (a per-shard worker) how to reach its shard's replica set. */
    private readonly client: MongoClient | (() => Promise<MongoClient>),
    private readonly options: MongoChangeFeedOptions = {},
  ) {}

  async open(start: StartPoint): Promise<ChangeFeedCursor> {
    const client = typeof this.client === 'function' ? await this.client() : this.client;
    return new MongoChangeFeedCursor(
      client,
      start,
      this.options.maxAwaitTimeMS ?? 1000,
      this.options.maxBatchEvents ?? 1000,
    );
  }
}

class MongoChangeFeedCursor implements ChangeFeedCursor {
  private cursor: RunCommandCursor | null = null;
  /** The position after the last event handed out, or after the last whole batch. */
  private token: ResumeToken | undefined;
  private closed = false;

  constructor(
    private readonly client: MongoClient,
    private readonly start: StartPoint,
    private readonly maxAwaitTimeMS: number,
    private readonly maxEvents: number,
  ) {}

  /**
   * Builds the aggregate; it runs on the first `next` (as the driver's ChangeStream runs its
   * aggregate on the first read), so a start point gone from the oplog is reported there.
   */
  private openStream(): RunCommandCursor {
    const stage: Document = { allChangesForCluster: true, showExpandedEvents: true };
    // Where it left off once it has a position; the start point until then.
    if (this.token) stage.resumeAfter = this.token;
    else Object.assign(stage, this.start);
    return rawDocumentCursor(this.client.db('admin'), {
      aggregate: 1,
      pipeline: [{ $changeStream: stage }],
      cursor: { batchSize: this.maxEvents },
    })
      .setBatchSize(this.maxEvents)
      .setMaxTimeMS(this.maxAwaitTimeMS);
  }

  /**
   * One server batch: the first `tryNext` may run a getMore (waiting at most maxAwaitTimeMS);
   * the rest of the batch is taken as it is buffered. After a whole batch the position is its
   * postBatchResumeToken, which also advances on an idle stream. A resumable error (a network
   * error, a failover, a killed cursor) closes the cursor and returns an empty batch; the next
   * call resumes after the position reached.
   */
  async next(): Promise<ChangeFeedBatch> {
    if (this.closed) throw new Error('the change feed is closed');
    const cursor = (this.cursor ??= this.openStream());
    let first: Uint8Array | null;
    try {
      first = (await cursor.tryNext()) as Uint8Array | null;
    } catch (error) {
      if (!isResumable(error)) throw translateError(error);
      this.cursor = null;
      await cursor.close().catch(() => undefined);
      return this.batch([]);
    }
    const events: ChangeEvent[] = [];
    if (first) {
      events.push(decodeEvent(first));
      for (const bytes of readRawBuffered(cursor)) events.push(decodeEvent(bytes));
      this.token = events[events.length - 1]!._id;
    }
    const afterBatch = postBatchResumeToken(cursor);
    if (afterBatch) this.token = afterBatch;
    return this.batch(events);
  }

  /** `events` and the position reached. */
  private batch(events: ChangeEvent[]): ChangeFeedBatch {
    return { events, resumeToken: this.token, highWaterTime: resumeTokenTime(this.token) };
  }

  async close(): Promise<void> {
    this.closed = true;
    const cursor = this.cursor;
    this.cursor = null;
    await cursor?.close();
  }
}

/** The reply's postBatchResumeToken (the driver's current cursor reply), when it has one. */
function postBatchResumeToken(cursor: RunCommandCursor): ResumeToken | undefined {
  const reply = (cursor as unknown as { documents?: { postBatchResumeToken?: unknown } | null })
    .documents;
  const token = reply?.postBatchResumeToken;
  return token && typeof token === 'object' ? (token as ResumeToken) : undefined;
}

/** The element name `fullDocument`, as bytes. */
const FULL_DOCUMENT = Buffer.from('fullDocument', 'utf8');
const BSON_OBJECT = 3;

/**
 * A change event from its bytes: every field decoded exactly but `fullDocument`, which is kept
 * as a view of its bytes (RawDocument). The event's other fields are decoded from a copy of the
 * event without the `fullDocument` element (the rest of an event is small).
 */
export function decodeEvent(bytes: Uint8Array): ChangeEvent {
  const elements = BSON.onDemand.parseToElements(bytes, 0);
  for (const element of elements) {
    const [type, nameOffset, nameLength, offset, length] = element as unknown as number[];
    if (type !== BSON_OBJECT || nameLength !== FULL_DOCUMENT.length) continue;
    if (Buffer.compare(bytes.subarray(nameOffset, nameOffset + nameLength), FULL_DOCUMENT) !== 0)
      continue;
    const start = nameOffset - 1;
    const end = offset + length;
    const rest = Buffer.allocUnsafe(bytes.byteLength - (end - start));
    rest.set(bytes.subarray(0, start), 0);
    rest.set(bytes.subarray(end), start);
    rest.writeInt32LE(rest.byteLength, 0);
    const event = BSON.deserialize(rest, EXACT_BSON) as ChangeEvent;
    event.fullDocument = new RawDocument(bytes.subarray(offset, end));
    return checked(event);
  }
  return checked(BSON.deserialize(bytes, EXACT_BSON) as ChangeEvent);
}

function checked(event: ChangeEvent): ChangeEvent {
  // As the driver's ChangeStream: an event without its resume token cannot be resumed after.
  if (!event._id) throw new Error('a change event without its resume token (_id)');
  return event;
}

/**
 * Resumable after a `getMore` (the change streams specification, servers 4.4+): a network
 * error, a server no longer selectable, CursorNotFound, or an error the server labelled
 * ResumableChangeStreamError. A cursor exhausted by the server is resumed too.
 */
function isResumable(error: unknown): boolean {
  if (error instanceof MongoCursorExhaustedError) return true;
  if (error instanceof MongoNetworkError || error instanceof MongoServerSelectionError) return true;
  if (!(error instanceof MongoError)) return false;
  if (error.code === CURSOR_NOT_FOUND) return true;
  return error.hasErrorLabel(MongoErrorLabel.ResumableChangeStreamError);
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
