import { Long, type Document } from 'bson';
import { CommandError } from '../errors';
import type { ConnectionContext } from '../commands/types';
import { asNumber } from '../server/values';
import { compareTokens, decodeResumeToken, type ResumeTokenDoc } from '../changes/resume-token';
import type { ShardHandle } from './metadata';
import type { ClusterClock } from '../clock/cluster-clock';

interface ShardStream {
  shard: ShardHandle;
  cursorId: Long;
  /** Collection part of the shard cursor's namespace (getMore's `collection`). */
  collection: string;
  pbrt?: ResumeTokenDoc;
}

function isDoc(v: unknown): v is Document {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

const DEFAULT_AWAIT_MS = 1000;
const POLL_MS = 10;

/**
 * A change stream opened through mongos over several shards: the same stream runs on every
 * shard and the router merges the events in resume-token (cluster-time) order. The shards share
 * one clock and write synchronously, so once every shard has been polled no event older than
 * the newest one seen can still appear: the merged high-water mark is the largest shard
 * postBatchResumeToken, and a quiet shard never holds the stream back.
 */
export class MergedChangeStream {
  private readonly streams: ShardStream[] = [];
  private buffer: Document[] = [];
  private skipThrough?: ResumeTokenDoc;
  private lastReturned?: ResumeTokenDoc;
  /** The opening command's session: shard cursors belong to it. */
  private lsid?: Document;
  closed = false;

  constructor(
    readonly ns: string,
    private readonly db: string,
    private readonly clock: ClusterClock,
  ) {}

  /**
   * Opens the stream on every shard. A client resume token names an event of one shard, so the
   * shards start at its cluster time and the router drops what is not after the token.
   */
  async open(shards: ShardHandle[], body: Document, conn: ConnectionContext): Promise<Document> {
    if (isDoc(body.lsid)) this.lsid = body.lsid;
    const pipeline = [...(body.pipeline as Document[])];
    const spec: Document = { ...(pipeline[0].$changeStream as Document) };
    const token = spec.resumeAfter ?? spec.startAfter;
    if (token !== undefined) {
      const data = decodeResumeToken(token);
      this.skipThrough = token as ResumeTokenDoc;
      delete spec.resumeAfter;
      delete spec.startAfter;
      spec.startAtOperationTime = data.clusterTime;
    } else if (spec.startAtOperationTime === undefined) {
      spec.startAtOperationTime = this.clock.tick();
    }
    pipeline[0] = { $changeStream: spec };
    const shardBody: Document = { ...body, pipeline, cursor: { batchSize: 0 } };
    delete shardBody.txnNumber;
    for (const shard of shards) {
      const reply = await shard.executor.execute(shardBody, conn);
      if (asNumber(reply.ok) === 0) {
        await this.kill(conn);
        return reply;
      }
      const cursor = reply.cursor as Document;
      const ns = String(cursor.ns);
      this.streams.push({
        shard,
        cursorId: cursor.id as Long,
        collection: ns.slice(ns.indexOf('.') + 1),
        pbrt: cursor.postBatchResumeToken as ResumeTokenDoc | undefined,
      });
      this.accept(cursor.firstBatch as Document[]);
    }
    const batchSize = isDoc(body.cursor) ? asNumber(body.cursor.batchSize) : undefined;
    return { cursor: this.batch('firstBatch', batchSize) };
  }

  private accept(events: Document[]): void {
    for (const ev of events) {
      const id = ev._id as ResumeTokenDoc;
      if (this.skipThrough && compareTokens(id, this.skipThrough) <= 0) continue;
      this.buffer.push(ev);
    }
    this.buffer.sort((a, b) => compareTokens(a._id as ResumeTokenDoc, b._id as ResumeTokenDoc));
  }

  private highWaterMark(): ResumeTokenDoc | undefined {
    let best = this.lastReturned;
    for (const s of this.streams) {
      if (s.pbrt && (!best || compareTokens(s.pbrt, best) > 0)) best = s.pbrt;
    }
    if (this.skipThrough && (!best || compareTokens(this.skipThrough, best) > 0))
      best = this.skipThrough;
    return best;
  }

  private batch(field: 'firstBatch' | 'nextBatch', batchSize: number | undefined): Document {
    const n = batchSize !== undefined && batchSize > 0 ? batchSize : this.buffer.length;
    const events = this.buffer.splice(0, field === 'firstBatch' && batchSize === 0 ? 0 : n);
    if (events.length) this.lastReturned = events[events.length - 1]._id as ResumeTokenDoc;
    // With events still buffered the resume point is the last event returned.
    const pbrt = this.buffer.length ? this.lastReturned : this.highWaterMark();
    return {
      [field]: events,
      postBatchResumeToken: pbrt,
      id: Long.ZERO,
      ns: this.ns,
    };
  }

  private async poll(conn: ConnectionContext): Promise<Document | undefined> {
    for (const s of this.streams) {
      const reply = await s.shard.executor.execute(
        {
          getMore: s.cursorId,
          collection: s.collection,
          maxTimeMS: 0,
          $db: this.db,
          ...(this.lsid ? { lsid: this.lsid } : {}),
        },
        conn,
      );
      if (asNumber(reply.ok) === 0) return reply;
      const cursor = reply.cursor as Document;
      if (cursor.postBatchResumeToken) s.pbrt = cursor.postBatchResumeToken as ResumeTokenDoc;
      this.accept(cursor.nextBatch as Document[]);
    }
    return undefined;
  }

  async getMore(body: Document, conn: ConnectionContext): Promise<Document> {
    if (this.closed) throw new CommandError('CursorNotFound', 'cursor not found');
    const batchSize = asNumber(body.batchSize);
    const deadline = Date.now() + (asNumber(body.maxTimeMS) ?? DEFAULT_AWAIT_MS);
    for (;;) {
      if (!this.buffer.length) {
        const failed = await this.poll(conn);
        if (failed) {
          await this.kill(conn);
          return failed;
        }
      }
      if (this.buffer.length || Date.now() >= deadline || conn.closed.aborted) break;
      await sleep(Math.min(POLL_MS, deadline - Date.now()), conn.closed);
    }
    return { cursor: this.batch('nextBatch', batchSize) };
  }

  async kill(conn: ConnectionContext): Promise<void> {
    this.closed = true;
    for (const s of this.streams) {
      if (s.cursorId.isZero()) continue;
      await s.shard.executor.execute(
        {
          killCursors: s.collection,
          cursors: [s.cursorId],
          $db: this.db,
          ...(this.lsid ? { lsid: this.lsid } : {}),
        },
        conn,
      );
    }
    this.streams.length = 0;
  }
}
