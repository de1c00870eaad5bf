import type { Document } from 'bson';
import { isDocument } from '../../bson/paths';
import { CommandError, writeErrorFrom, type WriteErrorEntry } from '../../errors';
import { prepareInsert } from '../../storage/collection';
import type { CommandDefinition } from '../types';
import { collectionName, optBool, reqArray, typeOf, writeOptions } from './args';

export const insertCommand: CommandDefinition = {
  name: 'insert',
  access: 'write',
  userWrite: true,
  retryableWrite: true,
  run(ctx) {
    const name = collectionName(ctx);
    const documents = reqArray(ctx, 'documents');
    const ordered = optBool(ctx, 'ordered') ?? true;
    documents.forEach((d, i) => {
      if (!isDocument(d)) {
        throw new CommandError(
          'TypeMismatch',
          `BSON field 'insert.documents.${i}' is the wrong type '${typeOf(d)}', expected type 'object'`,
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
    const opts = writeOptions(ctx);
    const writeErrors: WriteErrorEntry[] = [];
    let n = 0;
    if (documents.length > 0) {
      // Implicit creation comes first, so its `create` entry precedes the inserts in the oplog.
      const { coll } = catalog.ensureCollection(ctx.db, name, opts);
      for (let i = 0; i < documents.length; i++) {
        try {
          coll.insert(prepareInsert(documents[i] as Document), opts);
          n++;
        } catch (err) {
          if (!(err instanceof CommandError)) throw err;
          writeErrors.push(writeErrorFrom(i, err));
          if (ordered) break;
        }
      }
    }
    const reply: Document = { n };
    if (writeErrors.length) reply.writeErrors = writeErrors;
    reply.ok = 1;
    return reply;
  },
};
