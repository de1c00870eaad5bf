import { optLetVariables } from './let-vars';
import type { Document } from 'bson';
import { isNumeric, toNumber } from '../../bson/compare';
import { isDocument } from '../../bson/paths';
import { CommandError } from '../../errors';
import type { CommandDefinition } from '../types';
import { collectionName, optBool, reqArray, writeOptions } from './args';
import { collectionUuidMismatch, optCollectionUuid } from './collection-uuid';
import { runStatements, targetRecords, writeReply } from './write-ops';

export const deleteCommand: CommandDefinition = {
  name: 'delete',
  access: 'write',
  userWrite: true,
  retryableWrite: true,
  run(ctx) {
    const name = collectionName(ctx);
    const statements = reqArray(ctx, 'deletes');
    const ordered = optBool(ctx, 'ordered') ?? true;
    const variables = optLetVariables(ctx);
    const collectionUuid = optCollectionUuid(ctx);
    statements.forEach((s, i) => {
      if (!isDocument(s) || !isDocument(s.q)) {
        throw new CommandError(
          'TypeMismatch',
          `BSON field 'delete.deletes.${i}.q' is the wrong type, expected type 'object'`,
        );
      }
      if (!isNumeric(s.limit)) {
        throw new CommandError(
          40414 as number,
          "BSON field 'delete.deletes.limit' is missing but a required field",
        );
      }
      const limit = toNumber(s.limit);
      if (limit !== 0 && limit !== 1) {
        throw new CommandError(
          'FailedToParse',
          `The limit field in delete objects must be 0 or 1. Got ${limit}`,
        );
      }
    });
    const catalog = ctx.node.catalog;
    catalog.assertNotView(ctx.db, name);
    const wopts = writeOptions(ctx);
    let n = 0;
    const coll = catalog.getCollection(ctx.db, name);
    // mongod checks the UUID per statement when it acquires the collection.
    const mismatch = collectionUuid && collectionUuidMismatch(ctx, name, collectionUuid);
    // A missing collection has nothing to delete: every statement matches nothing.
    const writeErrors = mismatch
      ? runStatements(statements.length, ordered, () => {
          throw mismatch;
        })
      : !coll
        ? []
        : runStatements(statements.length, ordered, (i) => {
            const s = statements[i] as Document;
            const targets = targetRecords(coll, s.q as Document, {
              hint: s.hint as string | Document | undefined,
              collation: s.collation as Document | undefined,
              one: toNumber(s.limit) === 1,
              variables,
            });
            for (const rec of targets) {
              if (!coll.record(rec.rid)) continue;
              coll.delete(rec, wopts);
              n++;
            }
          });
    return writeReply({ n }, writeErrors);
  },
};
