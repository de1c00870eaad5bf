import type { Document } from 'bson';
import { compareDocuments } from '../../bson/compare';
import { isDocument } from '../../bson/paths';
import { CommandError } from '../../errors';
import { formatDocument } from '../../query/format';
import type { Index } from '../../storage/index';
import { collectionName, writeOptions } from '../crud/args';
import type { CommandDefinition } from '../types';

export const dropIndexesCommand: CommandDefinition = {
  name: 'dropIndexes',
  aliases: ['deleteIndexes'],
  access: 'write',
  userWrite: true,
  run(ctx) {
    const name = collectionName(ctx);
    const catalog = ctx.node.catalog;
    catalog.assertNotView(ctx.db, name);
    const coll = catalog.getCollection(ctx.db, name);
    if (!coll) throw new CommandError('NamespaceNotFound', `ns not found ${ctx.db}.${name}`);
    const target = ctx.cmd.index;
    const nIndexesWas = coll.indexes.length;
    let victims: Index[];
    if (target === '*') {
      victims = coll.indexes.slice(1);
    } else if (typeof target === 'string') {
      victims = [byName(coll.indexes, target, coll.ns)];
    } else if (Array.isArray(target)) {
      victims = target.map((n) => {
        if (typeof n !== 'string')
          throw new CommandError('TypeMismatch', 'dropIndexes index names must be strings');
        return byName(coll.indexes, n, coll.ns);
      });
    } else if (isDocument(target)) {
      const matches = coll.indexes.filter((i) => compareDocuments(i.key, target) === 0);
      if (matches.length === 0) {
        throw new CommandError(
          'IndexNotFound',
          `can't find index with key: ${formatDocument(target as Document)}`,
        );
      }
      if (matches.length > 1) {
        throw new CommandError(
          'BadValue',
          `${matches.length} indexes found for key: ${formatDocument(target as Document)}, identify by name instead. Conflicting indexes: ${matches.map((m) => formatDocument(m.spec)).join(', ')}`,
        );
      }
      victims = matches;
    } else {
      throw new CommandError(
        'TypeMismatch',
        "BSON field 'dropIndexes.index' is the wrong type, expected types '[string, object, array]'",
      );
    }
    for (const v of victims) {
      if (v.isIdIndex) throw new CommandError('InvalidOptions', 'cannot drop _id index');
    }
    const wopts = writeOptions(ctx);
    for (const v of victims) catalog.dropIndex(coll, v, wopts);
    const reply: Document = { nIndexesWas };
    if (target === '*') reply.msg = 'non-_id indexes dropped for collection';
    reply.ok = 1;
    return reply;
  },
};

function byName(indexes: Index[], name: string, ns: string): Index {
  const idx = indexes.find((i) => i.name === name);
  if (!idx) throw new CommandError('IndexNotFound', `index not found with name [${name}]`);
  void ns;
  return idx;
}
