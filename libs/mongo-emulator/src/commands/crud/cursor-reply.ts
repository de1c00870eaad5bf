import { Long, type Document } from 'bson';
import { IteratorCursor } from '../../cursors/cursor-manager';
import type { CommandContext } from '../types';

export function cursorOwner(ctx: CommandContext): { lsidKey?: string; user?: string } {
  const owner: { lsidKey?: string; user?: string } = {};
  if (ctx.session) owner.lsidKey = ctx.session.key;
  if (ctx.conn.users.length) owner.user = ctx.conn.users[0].user;
  return owner;
}

export interface CursorReplyOptions {
  /** undefined → the default first batch (101). */
  batchSize?: number;
  singleBatch?: boolean;
  /** Checked before every getMore (see ServerCursor.checkValid). */
  guard?: () => void;
}

/**
 * Opens a cursor over a lazy document iterator and answers with the first batch, in the
 * `{cursor: {firstBatch, id, ns}, ok: 1}` shape of find/aggregate/listCollections/listIndexes.
 */
export async function cursorReply(
  ctx: CommandContext,
  ns: string,
  docs: Iterator<Document>,
  options: CursorReplyOptions = {},
): Promise<Document> {
  const cursor = new IteratorCursor(ns, docs, options.guard);
  const cursors = ctx.node.cursors;
  if (options.batchSize === 0 && !options.singleBatch) {
    // batchSize 0 opens the cursor without returning anything yet (mongod does the same).
    const id = cursors.register(cursor, cursorOwner(ctx));
    return { cursor: { firstBatch: [], id, ns }, ok: 1 };
  }
  const batchSize = options.batchSize === 0 ? undefined : options.batchSize;
  const reply = await cursors.firstBatch(
    cursor,
    { batchSize, signal: ctx.conn.closed },
    cursorOwner(ctx),
  );
  if (options.singleBatch && !(reply.id as Long).isZero()) {
    cursors.kill([reply.id as Long]);
    reply.id = Long.ZERO;
  }
  return { cursor: reply, ok: 1 };
}
