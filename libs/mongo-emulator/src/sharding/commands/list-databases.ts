import type { Document } from 'bson';
import { asNumber } from '../../server/values';
import type { RouterCommandDefinition } from './types';

/** listDatabases through mongos: every shard's databases merged, sizes summed, no `local`. */
export const listDatabasesCommand: RouterCommandDefinition = {
  name: 'listDatabases',
  async run({ router, body, conn }) {
    const sizes = new Map<string, number>();
    let nameOnly = false;
    for (const shard of router.shards) {
      const reply = await shard.executor.execute(body, conn);
      if (asNumber(reply.ok) === 0) return reply;
      nameOnly = reply.totalSize === undefined;
      for (const entry of (reply.databases as Document[]) ?? []) {
        const name = entry.name as string;
        if (name === 'local') continue;
        sizes.set(name, (sizes.get(name) ?? 0) + (asNumber(entry.sizeOnDisk) ?? 0));
      }
    }
    const entries = [...sizes.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (nameOnly) return router.local({ databases: entries.map(([name]) => ({ name })), ok: 1 });
    const databases = entries.map(([name, sizeOnDisk]) => ({ name, sizeOnDisk, empty: false }));
    const totalSize = databases.reduce((s, d) => s + d.sizeOnDisk, 0);
    return router.local({
      databases,
      totalSize,
      totalSizeMb: Math.trunc(totalSize / (1024 * 1024)),
      ok: 1,
    });
  },
};
