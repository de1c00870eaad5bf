import type { Document } from 'bson';
import { compileFilter } from '../../query/matcher';
import { ID_INDEX_SPEC } from '../../storage/collection';
import { optBool, optDocument, optNonNegative } from '../crud/args';
import { cursorReply } from '../crud/cursor-reply';
import type { CommandDefinition } from '../types';

export const listCollectionsCommand: CommandDefinition = {
  name: 'listCollections',
  access: 'read',
  run(ctx) {
    const filter = optDocument(ctx, 'filter');
    const nameOnly = optBool(ctx, 'nameOnly') ?? false;
    optBool(ctx, 'authorizedCollections');
    const cursorOpts = optDocument(ctx, 'cursor') ?? {};
    const batchSize = optNonNegative(ctx, 'batchSize', cursorOpts, 'listCollections.cursor');
    const entries: Document[] = [];
    for (const ns of ctx.node.catalog.namespaces(ctx.db)) {
      if (ns.kind === 'view') {
        entries.push(
          nameOnly
            ? { name: ns.name, type: 'view' }
            : { name: ns.name, type: 'view', options: { ...ns.options }, info: { readOnly: true } },
        );
      } else {
        entries.push(
          nameOnly
            ? { name: ns.name, type: 'collection' }
            : {
                name: ns.name,
                type: 'collection',
                options: { ...ns.options },
                info: { readOnly: false, uuid: ns.uuid },
                idIndex: { ...ID_INDEX_SPEC },
              },
        );
      }
    }
    const match = filter && Object.keys(filter).length ? compileFilter(filter) : undefined;
    const out = match ? entries.filter(match) : entries;
    return cursorReply(ctx, `${ctx.db}.$cmd.listCollections`, out[Symbol.iterator](), {
      batchSize,
    });
  },
};
