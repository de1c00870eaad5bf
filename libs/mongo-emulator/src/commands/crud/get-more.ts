import { Long } from 'bson';
import { bsonTypeOf, isNumeric, toNumber } from '../../bson/compare';
import { CommandError } from '../../errors';
import type { CommandDefinition } from '../types';
import { optNonNegative, optNumber } from './args';
import { cursorOwner } from './cursor-reply';
import { ChangeStreamCursor, changeStreamErrorLabels } from '../../changes/change-stream-cursor';
import type { ServerCursor } from '../../cursors/cursor-manager';
import type { CommandContext } from '../types';
import { asNumber } from '../../server/values';

/** getMore: pulls the next batch of any cursor (query or change stream) from the node's cursor manager. */
export const getMoreCommand: CommandDefinition = {
  name: 'getMore',
  access: 'read',
  async run(ctx) {
    const raw = ctx.cmd.getMore;
    if (!isNumeric(raw)) {
      throw new CommandError(
        'TypeMismatch',
        `BSON field 'getMore.getMore' is the wrong type '${bsonTypeOf(raw)}', expected type 'long'`,
      );
    }
    const id = raw instanceof Long ? raw : Long.fromNumber(toNumber(raw));
    const collection = ctx.cmd.collection;
    if (typeof collection !== 'string') {
      throw new CommandError(
        'TypeMismatch',
        `BSON field 'getMore.collection' is the wrong type '${bsonTypeOf(collection)}', expected type 'string'`,
      );
    }
    const batchSize = optNonNegative(ctx, 'batchSize');
    const maxTimeMS = optNumber(ctx, 'maxTimeMS');
    const cursor = await ctx.node.cursors.getMore(
      id,
      `${ctx.db}.${collection}`,
      {
        batchSize: batchSize || undefined,
        maxTimeMS,
        signal: ctx.conn.closed,
        afterCheckout: (cursor) => failGetMoreAfterCursorCheckout(ctx, cursor),
      },
      cursorOwner(ctx),
    );
    return { cursor, ok: 1 };
  },
};

/**
 * mongod's `failGetMoreAfterCursorCheckout` fail point (getmore_cmd.cpp): once the cursor is
 * pinned, a getMore fails with `data.errorCode` (1 InternalError when absent) and
 * "Hit the 'failGetMoreAfterCursorCheckout' failpoint". It is matched like a failCommand on
 * `getMore` (shouldActivateFailCommandFailPoint: `appName`, `namespace`). The failed getMore
 * deletes the cursor (mongod's cursorDeleter guard). On a change stream the error gets the
 * labels mongod computes for a change-stream getMore (ResumableChangeStreamError for
 * resumable codes), which is what the drivers' resume tests rely on.
 */
function failGetMoreAfterCursorCheckout(ctx: CommandContext, cursor: ServerCursor): void {
  const data = ctx.node.failPoints.evaluate('failGetMoreAfterCursorCheckout', (d) => {
    if (typeof d.appName === 'string' && d.appName !== ctx.conn.appName) return false;
    if (typeof d.namespace === 'string' && d.namespace !== cursor.ns) return false;
    return true;
  });
  if (!data) return;
  const code = asNumber(data.errorCode) ?? 1;
  const labels = cursor instanceof ChangeStreamCursor ? changeStreamErrorLabels(code, true) : [];
  throw new CommandError(code, "Hit the 'failGetMoreAfterCursorCheckout' failpoint", { labels });
}
