import { Long, Timestamp, type Document } from 'bson';
import { CommandError } from '../errors';
import type { CommandContext } from '../commands/types';
import { cursorNamespace, parseChangeStreamSpec, type ChangeStreamSpec } from './spec';
import { highWaterMarkToken, isHighWaterMark, previousTimestamp } from './resume-token';
import { ChangeStreamCursor, historyLostError, type StreamStart } from './change-stream-cursor';

/**
 * Runs an aggregate whose pipeline starts with `$changeStream` and returns the reply's
 * `cursor` document: `{firstBatch, postBatchResumeToken, id, ns}`. The first batch never
 * waits (awaitData applies to getMore only); the cursor stays open even when it is empty.
 *
 * `cursorOptions` is the aggregate's `cursor` option (`{batchSize?}`).
 */
export async function openChangeStream(
  ctx: CommandContext,
  pipeline: Document[],
  cursorOptions: Document = {},
): Promise<Document> {
  const [stage, ...userStages] = pipeline;
  const spec = parseChangeStreamSpec(ctx.db, ctx.cmd.aggregate, stage?.$changeStream, userStages);
  const start = resolveStart(ctx, spec);
  const ns = cursorNamespace(spec.scope);
  const cursor = new ChangeStreamCursor(ns, ctx.node, spec, start, ctx.db);

  const batchSize =
    cursorOptions.batchSize === undefined ? undefined : Number(cursorOptions.batchSize);
  if (batchSize !== undefined && (!Number.isFinite(batchSize) || batchSize < 0)) {
    throw new CommandError('BadValue', 'cursor.batchSize must not be negative');
  }
  const batch = await cursor.nextBatch({ batchSize, signal: ctx.conn.closed });
  // A change stream cursor is tailable: it is registered even when the first batch is empty,
  // and only an invalidate closes it.
  let id = ctx.node.cursors.register(cursor, {
    lsidKey: ctx.session?.key,
    user: ctx.conn.users[0]?.user,
  });
  if (batch.exhausted) {
    ctx.node.cursors.kill([id]);
    id = Long.ZERO;
  }
  return { firstBatch: batch.documents, ...(batch.cursorFields ?? {}), id, ns };
}

/** Turns the start option into a read position, checking the oplog still covers it. */
function resolveStart(ctx: CommandContext, spec: ChangeStreamSpec): StreamStart {
  const oplog = ctx.node.oplog;
  const lostFrom = (ts: Timestamp) =>
    oplog.hasLostHistoryAfter(previousTimestamp(ts)) || oplog.isOlderThanHistory(ts);

  if (spec.resume) {
    const { token, data } = spec.resume;
    if (lostFrom(data.clusterTime)) throw historyLostError();
    if (data.fromInvalidate) {
      // startAfter an invalidate: the new stream begins after the invalidating operation.
      return { after: data.clusterTime, initialToken: token };
    }
    const after = previousTimestamp(data.clusterTime);
    if (isHighWaterMark(data)) return { after, initialToken: token };
    return { after, initialToken: token, mustFind: { token, data } };
  }
  if (spec.startAtOperationTime) {
    const at = spec.startAtOperationTime;
    if (lostFrom(at)) throw historyLostError();
    return { after: previousTimestamp(at), initialToken: highWaterMarkToken(at) };
  }
  // No start point: the stream begins just after the last applied operation (mongod starts at
  // lastApplied + 1 tick, not at a cluster time a client may have gossiped further).
  const now = ctx.node.oplog.newest()?.ts ?? ctx.node.clock.current();
  return {
    after: now,
    initialToken: highWaterMarkToken(new Timestamp({ t: now.t, i: now.i + 1 })),
  };
}
