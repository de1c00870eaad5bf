import type { Document } from 'bson';
import { isDocument } from '../../bson/paths';
import { runStatements, writeReply } from './write-ops';
import { CommandError, type WriteErrorEntry } from '../../errors';
import { prepareInsert } from '../../storage/collection';
import { checkIdNotDollarPrefixed } from '../../query/update-replace';
import type { CommandDefinition } from '../types';
import { collectionName, optBool, reqArray, typeOf, writeOptions } from './args';
import { collectionUuidMismatch, optCollectionUuid } from './collection-uuid';

export const insertCommand: CommandDefinition = {
  name: 'insert',
  access: 'write',
  userWrite: true,
  retryableWrite: true,
  run(ctx) {
    const name = collectionName(ctx);
    const documents = reqArray(ctx, 'documents');
    const ordered = optBool(ctx, 'ordered') ?? true;
    const collectionUuid = optCollectionUuid(ctx);
    documents.forEach((d, i) => {
      if (!isDocument(d)) {
        throw new CommandError(
          'TypeMismatch',
          `BSON field 'insert.documents.${i}' is the wrong type '${typeOf(d)}', expected type 'object'`,
        );
      }
    });
    const catalog = ctx.node.catalog;
    catalog.assertNotView(ctx.db, name);
    const opts = writeOptions(ctx);
    let n = 0;
    let writeErrors: WriteErrorEntry[] = [];
    // mongod checks the UUID when it acquires the collection for each batch, before creating
    // it: a mismatch is a write error (every document of an unordered insert gets one).
    const mismatch = collectionUuid && collectionUuidMismatch(ctx, name, collectionUuid);
    if (mismatch) {
      writeErrors = runStatements(documents.length, ordered, () => {
        throw mismatch;
      });
    } else if (documents.length > 0) {
      // Implicit creation comes first, so its `create` entry precedes the inserts in the oplog.
      const { coll } = catalog.ensureCollection(ctx.db, name, opts);
      writeErrors = runStatements(documents.length, ordered, (i) => {
        const doc = documents[i] as Document;
        checkIdNotDollarPrefixed(doc._id);
        coll.insert(prepareInsert(doc), opts);
        n++;
      });
    }
    return writeReply({ n }, writeErrors);
  },
};
