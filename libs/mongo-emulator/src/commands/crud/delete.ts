import type { Document } from 'bson';
import { isNumeric, toNumber } from '../../bson/compare';
import { isDocument } from '../../bson/paths';
import { CommandError, writeErrorFrom, type WriteErrorEntry } from '../../errors';
import type { CommandDefinition } from '../types';
import { collectionName, optBool, optDocument, reqArray, writeOptions } from './args';
import { targetRecords } from './write-ops';

export const deleteCommand: CommandDefinition = {
  name: 'delete',
  access: 'write',
  userWrite: true,
  retryableWrite: true,
  run(ctx) {
    const name = collectionName(ctx);
    const statements = reqArray(ctx, 'deletes');
    const ordered = optBool(ctx, 'ordered') ?? true;
    const variables = optDocument(ctx, 'let');
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
    if (catalog.getView(ctx.db, name)) {
      throw new CommandError(
        'CommandNotSupportedOnView',
        `Namespace ${ctx.db}.${name} is a view, not a collection`,
      );
    }
    const wopts = writeOptions(ctx);
    const writeErrors: WriteErrorEntry[] = [];
    let n = 0;
    const coll = catalog.getCollection(ctx.db, name);
    for (let i = 0; i < statements.length && coll; i++) {
      const s = statements[i] as Document;
      try {
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
      } catch (err) {
        if (!(err instanceof CommandError)) throw err;
        writeErrors.push(writeErrorFrom(i, err));
        if (ordered) break;
      }
    }
    const reply: Document = { n };
    if (writeErrors.length) reply.writeErrors = writeErrors;
    reply.ok = 1;
    return reply;
  },
};
