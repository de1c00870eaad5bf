import { CommandError } from '../../errors';
import { collectionName, optDocument, optNonNegative } from '../crud/args';
import { rejectUnknownField } from '../crud/collection-uuid';
import { cursorReply } from '../crud/cursor-reply';
import type { CommandDefinition } from '../types';

export const listIndexesCommand: CommandDefinition = {
  name: 'listIndexes',
  access: 'read',
  run(ctx) {
    const name = collectionName(ctx);
    // listIndexes' IDL is strict and has no collectionUUID (MongoDB 7.0).
    rejectUnknownField(ctx, 'collectionUUID');
    const cursorOpts = optDocument(ctx, 'cursor') ?? {};
    const batchSize = optNonNegative(ctx, 'batchSize', cursorOpts, 'listIndexes.cursor');
    const catalog = ctx.node.catalog;
    catalog.assertNotView(ctx.db, name);
    const coll = catalog.getCollection(ctx.db, name);
    if (!coll) throw new CommandError('NamespaceNotFound', `ns does not exist: ${ctx.db}.${name}`);
    const specs = coll.indexes.map((i) => ({ ...i.spec }));
    return cursorReply(ctx, `${ctx.db}.${name}`, specs[Symbol.iterator](), { batchSize });
  },
};
