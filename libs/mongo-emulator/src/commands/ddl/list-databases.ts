import type { Document } from 'bson';
import { compileFilter } from '../../query/matcher';
import { collectionFootprint } from '../../storage/stats';
import { optBool, optDocument } from '../crud/args';
import type { CommandDefinition } from '../types';

/**
 * A replica-set member always has admin (system.version), config (sessions) and local
 * (the oplog); mongod lists them with small fixed-looking sizes.
 */
const SYSTEM_DBS: Record<string, number> = { admin: 40960, config: 110592, local: 442368 };

export const listDatabasesCommand: CommandDefinition = {
  name: 'listDatabases',
  access: 'read',
  adminOnly: true,
  run(ctx) {
    const nameOnly = optBool(ctx, 'nameOnly') ?? false;
    const filter = optDocument(ctx, 'filter');
    optBool(ctx, 'authorizedDatabases');
    const catalog = ctx.node.catalog;
    const sizes = new Map<string, number>(Object.entries(SYSTEM_DBS));
    for (const db of catalog.databaseNames()) {
      const own = catalog.collections(db).reduce((s, c) => s + collectionFootprint(c), 0);
      sizes.set(db, (SYSTEM_DBS[db] ?? 0) + Math.max(own, 8192));
    }
    let entries: Document[] = [...sizes.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, sizeOnDisk]) => ({ name, sizeOnDisk, empty: false }));
    if (filter && Object.keys(filter).length) entries = entries.filter(compileFilter(filter));
    if (nameOnly) return { databases: entries.map((e) => ({ name: e.name })), ok: 1 };
    const totalSize = entries.reduce((s, e) => s + (e.sizeOnDisk as number), 0);
    return {
      databases: entries,
      totalSize,
      totalSizeMb: Math.trunc(totalSize / (1024 * 1024)),
      ok: 1,
    };
  },
};
