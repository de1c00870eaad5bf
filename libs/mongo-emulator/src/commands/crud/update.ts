import { optLetVariables } from './let-vars';
import type { Document } from 'bson';
import type { CommandDefinition } from '../types';
import { collectionName, optBool, reqArray, writeOptions } from './args';
import { checkCollectionUuid, optCollectionUuid } from './collection-uuid';
import { parseUpdateStatement, performUpdate, runStatements, writeReply } from './write-ops';

export const updateCommand: CommandDefinition = {
  name: 'update',
  access: 'write',
  userWrite: true,
  retryableWrite: true,
  run(ctx) {
    const name = collectionName(ctx);
    const statements = reqArray(ctx, 'updates');
    const ordered = optBool(ctx, 'ordered') ?? true;
    const variables = optLetVariables(ctx);
    const collectionUuid = optCollectionUuid(ctx);
    const specs = statements.map((s, i) => parseUpdateStatement(s, i));
    const catalog = ctx.node.catalog;
    catalog.assertNotView(ctx.db, name);
    const wopts = writeOptions(ctx);
    const upserted: Document[] = [];
    let n = 0;
    let nModified = 0;
    const writeErrors = runStatements(specs.length, ordered, (i) => {
      const spec = specs[i];
      if (variables) spec.variables = { ...variables, ...(spec.variables ?? {}) };
      // Checked per statement, before an upsert could create the collection.
      if (collectionUuid) checkCollectionUuid(ctx, name, collectionUuid);
      let coll = catalog.getCollection(ctx.db, name);
      if (!coll) {
        // Nothing to match; only an upsert creates the collection.
        if (!spec.upsert) return;
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
    });
    return writeReply(upserted.length ? { n, nModified, upserted } : { n, nModified }, writeErrors);
  },
};
