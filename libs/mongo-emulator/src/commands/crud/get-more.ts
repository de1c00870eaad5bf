import { Long } from 'bson';
import { bsonTypeOf, isNumeric, toNumber } from '../../bson/compare';
import { CommandError } from '../../errors';
import type { CommandDefinition } from '../types';
import { optNonNegative, optNumber } from './args';
import { cursorOwner } from './cursor-reply';

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
      { batchSize: batchSize || undefined, maxTimeMS, signal: ctx.conn.closed },
      cursorOwner(ctx),
    );
    return { cursor, ok: 1 };
  },
};
