import type { Document } from 'bson';
import { CommandError } from '../../errors';
import { collectionStats } from '../../storage/stats';
import { collectionFootprint } from '../../storage/stats';
import { collectionName, optNumber } from '../crud/args';
import type { CommandDefinition } from '../types';

function scaleOf(ctx: Parameters<CommandDefinition['run']>[0]): number {
  const scale = optNumber(ctx, 'scale') ?? 1;
  if (scale < 1) throw new CommandError('BadValue', 'scale has to be >= 1');
  return Math.trunc(scale);
}

export const collStatsCommand: CommandDefinition = {
  name: 'collStats',
  access: 'read',
  run(ctx) {
    const name = collectionName(ctx);
    const scale = scaleOf(ctx);
    const catalog = ctx.node.catalog;
    catalog.assertNotView(ctx.db, name);
    const coll = catalog.getCollection(ctx.db, name);
    if (!coll) {
      // Since 4.2 a missing namespace answers ok with zero sizes.
      return {
        ns: `${ctx.db}.${name}`,
        size: 0,
        count: 0,
        storageSize: 0,
        totalSize: 0,
        nindexes: 0,
        totalIndexSize: 0,
        indexSizes: {},
        scaleFactor: scale,
        ok: 1,
      };
    }
    return { ...collectionStats(coll, scale), ok: 1 };
  },
};

export const dbStatsCommand: CommandDefinition = {
  name: 'dbStats',
  aliases: ['dbstats'],
  access: 'read',
  run(ctx) {
    const scale = scaleOf(ctx);
    const s = (n: number) => Math.trunc(n / scale);
    const catalog = ctx.node.catalog;
    const colls = catalog.collections(ctx.db);
    const views = catalog.namespaces(ctx.db).length - colls.length;
    const objects = colls.reduce((n, c) => n + c.count, 0);
    const dataSize = colls.reduce((n, c) => n + c.dataSize, 0);
    const indexSize = colls.reduce((n, c) => n + c.totalIndexSize, 0);
    const total = colls.reduce((n, c) => n + collectionFootprint(c), 0);
    const reply: Document = {
      db: ctx.db,
      collections: colls.length,
      views,
      objects,
      avgObjSize: objects ? dataSize / objects : 0,
      dataSize: s(dataSize),
      storageSize: s(total - indexSize),
      indexes: colls.reduce((n, c) => n + c.indexes.length, 0),
      indexSize: s(indexSize),
      totalSize: s(total),
      scaleFactor: scale,
      fsUsedSize: 0,
      fsTotalSize: 0,
      ok: 1,
    };
    return reply;
  },
};
