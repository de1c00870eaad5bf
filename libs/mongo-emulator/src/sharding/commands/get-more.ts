import { Long, type Document } from 'bson';
import { CommandError, ErrorCodes } from '../../errors';
import { asNumber, bsonTypeName } from '../../server/values';
import { isDocument } from './util';
import type { RouterCommandDefinition } from './types';

/** getMore on a merged change stream, a router-merged result, or a shard cursor. */
export const getMoreCommand: RouterCommandDefinition = {
  name: 'getMore',
  async run({ router, body, conn }) {
    const id = body.getMore;
    if (!(id instanceof Long)) {
      throw new CommandError(
        'TypeMismatch',
        `BSON field 'getMore.getMore' is the wrong type '${bsonTypeName(id)}', expected type 'long'`,
      );
    }
    const stream = router.streams.get(id.toString());
    if (stream) {
      const reply = await stream.getMore(body, conn);
      if (reply.cursor === undefined) {
        router.streams.delete(id.toString());
        return reply;
      }
      (reply.cursor as Document).id = id;
      return router.local(reply);
    }
    const merged = router.merged.get(id.toString());
    if (merged) {
      const size = asNumber(body.batchSize) ?? 0;
      const nextBatch = merged.docs.slice(merged.pos, size > 0 ? merged.pos + size : undefined);
      merged.pos += nextBatch.length;
      let outId = id;
      if (merged.pos >= merged.docs.length) {
        router.merged.delete(id.toString());
        outId = Long.ZERO;
      }
      return router.local({ cursor: { nextBatch, id: outId, ns: merged.ns }, ok: 1 });
    }
    const entry = router.cursors.get(id.toString());
    if (!entry) throw new CommandError('CursorNotFound', `cursor id ${id.toString()} not found`);
    const reply = await entry.shard.executor.execute({ ...body, getMore: entry.remoteId }, conn);
    const cursor = reply.cursor;
    if (isDocument(cursor) && cursor.id instanceof Long) {
      if (cursor.id.isZero()) router.cursors.delete(id.toString());
      else cursor.id = id;
    } else if (asNumber(reply.ok) === 0 && reply.code === ErrorCodes.CursorNotFound) {
      router.cursors.delete(id.toString());
    }
    return reply;
  },
};
