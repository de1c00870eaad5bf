import type { CommandDefinition } from '../types';
import { collectionName, writeOptions } from '../crud/args';

/** drop: MongoDB 7.0 answers ok for a missing collection (SERVER-43894) instead of 26 NamespaceNotFound. */
export const dropCommand: CommandDefinition = {
  name: 'drop',
  access: 'write',
  userWrite: true,
  run(ctx) {
    const name = collectionName(ctx);
    const dropped = ctx.node.catalog.dropNamespace(ctx.db, name, writeOptions(ctx));
    if (!dropped || dropped.nIndexesWas === undefined) return { ok: 1 };
    return { nIndexesWas: dropped.nIndexesWas, ns: `${ctx.db}.${name}`, ok: 1 };
  },
};
