import { bsonTypeOf } from '../../bson/compare';
import { CommandError } from '../../errors';
import { checkCollectionName } from '../../storage/catalog';
import { optBool, writeOptions } from '../crud/args';
import type { CommandDefinition } from '../types';

function parseNs(field: string, value: unknown): { db: string; coll: string } {
  if (typeof value !== 'string') {
    throw new CommandError(
      'TypeMismatch',
      `BSON field 'renameCollection.${field}' is the wrong type '${bsonTypeOf(value)}', expected type 'string'`,
    );
  }
  const dot = value.indexOf('.');
  if (dot <= 0 || dot === value.length - 1)
    throw new CommandError('InvalidNamespace', `Invalid namespace specified '${value}'`);
  const ns = { db: value.slice(0, dot), coll: value.slice(dot + 1) };
  checkCollectionName(ns.db, ns.coll);
  return ns;
}

/** renameCollection {renameCollection: 'db.a', to: 'db2.b', dropTarget}: an admin command, also across databases. */
export const renameCollectionCommand: CommandDefinition = {
  name: 'renameCollection',
  access: 'write',
  userWrite: true,
  adminOnly: true,
  run(ctx) {
    if (ctx.db !== 'admin') {
      throw new CommandError(
        'Unauthorized',
        'renameCollection may only be run against the admin database.',
      );
    }
    const from = parseNs('renameCollection', ctx.cmd.renameCollection);
    const to = parseNs('to', ctx.cmd.to);
    const dropTarget = optBool(ctx, 'dropTarget') ?? false;
    if (from.coll.startsWith('system.') || to.coll.startsWith('system.')) {
      throw new CommandError('IllegalOperation', 'renaming system collections is not allowed');
    }
    ctx.node.catalog.renameCollection(
      from.db,
      from.coll,
      to.db,
      to.coll,
      dropTarget,
      writeOptions(ctx),
    );
    return { ok: 1 };
  },
};
