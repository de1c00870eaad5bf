import { Long } from 'bson';
import { isNumeric, toNumber } from '../../bson/compare';
import { CommandError } from '../../errors';
import type { CommandDefinition } from '../types';
import { collectionName, reqArray } from './args';

export const killCursorsCommand: CommandDefinition = {
  name: 'killCursors',
  access: 'read',
  run(ctx) {
    // Cursors of collectionless aggregates (database/cluster change streams) live on
    // `<db>.$cmd.aggregate`, which drivers name in killCursors.
    if (ctx.cmd.killCursors !== '$cmd.aggregate') collectionName(ctx);
    const ids = reqArray(ctx, 'cursors').map((v, i) => {
      if (v instanceof Long) return v;
      if (isNumeric(v)) return Long.fromNumber(toNumber(v));
      throw new CommandError(
        'TypeMismatch',
        `BSON field 'killCursors.cursors.${i}' is the wrong type, expected type 'long'`,
      );
    });
    return { ...ctx.node.cursors.kill(ids), ok: 1 };
  },
};
