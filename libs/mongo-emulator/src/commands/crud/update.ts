import type { Document } from 'bson';
import { CommandError, writeErrorFrom, type WriteErrorEntry } from '../../errors';
import type { CommandDefinition } from '../types';
import { collectionName, optBool, optDocument, reqArray, writeOptions } from './args';
import { parseUpdateStatement, performUpdate } from './write-ops';

export const updateCommand: CommandDefinition = {
  name: 'update',
  access: 'write',
  userWrite: true,
  retryableWrite: true,
  run(ctx) {
    const name = collectionName(ctx);
    const statements = reqArray(ctx, 'updates');
    const ordered = optBool(ctx, 'ordered') ?? true;
    const variables = optDocument(ctx, 'let');
    const specs = statements.map((s, i) => parseUpdateStatement(s, i));
    const catalog = ctx.node.catalog;
    if (catalog.getView(ctx.db, name)) {
      throw new CommandError(
        'CommandNotSupportedOnView',
        `Namespace ${ctx.db}.${name} is a view, not a collection`,
      );
    }
    const wopts = writeOptions(ctx);
    const writeErrors: WriteErrorEntry[] = [];
    const upserted: Document[] = [];
    let n = 0;
    let nModified = 0;
    for (let i = 0; i < specs.length; i++) {
      const spec = specs[i];
      if (variables) spec.variables = { ...variables, ...(spec.variables ?? {}) };
      try {
        let coll = catalog.getCollection(ctx.db, name);
        if (!coll) {
          // Nothing to match; only an upsert creates the collection.
          if (!spec.upsert) continue;
          coll = catalog.ensureCollection(ctx.db, name, wopts).coll;
        }
        const out = performUpdate(ctx, coll, spec, wopts);
        if (out.upsertedId !== undefined) {
          n += 1;
          upserted.push({ index: i, _id: out.upsertedId });
        } else {
          n += out.n;
          nModified += out.nModified;
        }
      } catch (err) {
        if (!(err instanceof CommandError)) throw err;
        writeErrors.push(writeErrorFrom(i, err));
        if (ordered) break;
      }
    }
    const reply: Document = { n, nModified };
    if (upserted.length) reply.upserted = upserted;
    if (writeErrors.length) reply.writeErrors = writeErrors;
    reply.ok = 1;
    return reply;
  },
};
