import type { Document } from 'bson';
import { asNumber } from '../../server/values';
import type { RouterCommandDefinition } from './types';

/** The figures mongos adds up over the shards' own `dbStats` replies. */
const SUMMED = [
  'collections',
  'views',
  'objects',
  'dataSize',
  'storageSize',
  'indexes',
  'indexSize',
  'totalSize',
  'fsUsedSize',
  'fsTotalSize',
] as const;

/**
 * dbStats through mongos: sent to every shard (a sharded collection's documents live on several),
 * each reply kept under `raw` by the shard's connection string, the figures summed (as the
 * server's own sharding test of dbStats checks them), `avgObjSize` recomputed from the sums.
 */
export const dbStatsCommand: RouterCommandDefinition = {
  name: 'dbStats',
  aliases: ['dbstats'],
  async run({ router, body, conn, db }) {
    const raw: Document = {};
    const sums: Record<string, number> = Object.fromEntries(SUMMED.map((k) => [k, 0]));
    let scaleFactor: unknown;
    for (const shard of router.shards) {
      const reply = await shard.executor.execute(body, conn);
      if (asNumber(reply.ok) === 0) return reply;
      const clean = { ...reply };
      delete clean.$clusterTime;
      delete clean.operationTime;
      raw[`${shard.rs.name}/${shard.rs.host}:${shard.rs.port}`] = clean;
      for (const k of SUMMED) sums[k] += asNumber(reply[k]) ?? 0;
      scaleFactor ??= reply.scaleFactor;
    }
    return router.local({
      raw,
      db,
      ...sums,
      avgObjSize:
        sums.objects > 0 ? (sums.dataSize * (asNumber(scaleFactor) ?? 1)) / sums.objects : 0,
      scaleFactor,
      ok: 1,
    });
  },
};
