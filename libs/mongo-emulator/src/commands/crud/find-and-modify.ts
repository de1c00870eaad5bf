import { optLetVariables } from './let-vars';
import type { Document } from 'bson';
import { isDocument } from '../../bson/paths';
import { CommandError } from '../../errors';
import { compileProjection } from '../../query/projection';
import type { CommandDefinition } from '../types';
import {
  collectionName,
  optArray,
  optBool,
  optCollation,
  optDocument,
  optHint,
  writeOptions,
} from './args';
import { performUpdate, targetRecords } from './write-ops';

export const findAndModifyCommand: CommandDefinition = {
  name: 'findAndModify',
  aliases: ['findandmodify'],
  access: 'write',
  userWrite: true,
  retryableWrite: true,
  run(ctx) {
    const name = collectionName(ctx);
    const query = optDocument(ctx, 'query') ?? {};
    const sort = optDocument(ctx, 'sort');
    const remove = optBool(ctx, 'remove') ?? false;
    const returnNew = optBool(ctx, 'new') ?? false;
    const upsert = optBool(ctx, 'upsert') ?? false;
    const fields = optDocument(ctx, 'fields');
    const arrayFilters = optArray(ctx, 'arrayFilters') as Document[] | undefined;
    const hint = optHint(ctx);
    const collation = optCollation(ctx);
    const variables = optLetVariables(ctx);
    const update = ctx.cmd.update as Document | Document[] | undefined;
    if (update !== undefined && !isDocument(update) && !Array.isArray(update)) {
      throw new CommandError(
        'FailedToParse',
        'Update argument must be either an object or an array',
      );
    }
    if (remove && update !== undefined) {
      throw new CommandError('FailedToParse', 'Cannot specify both an update and remove=true');
    }
    if (!remove && update === undefined) {
      throw new CommandError('FailedToParse', 'Either an update or remove=true must be specified');
    }
    if (remove && upsert)
      throw new CommandError('FailedToParse', 'Cannot specify both upsert=true and remove=true ');
    if (remove && returnNew) {
      throw new CommandError(
        'FailedToParse',
        "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document",
      );
    }
    const catalog = ctx.node.catalog;
    catalog.assertNotView(ctx.db, name);
    const wopts = writeOptions(ctx);
    const project =
      fields && Object.keys(fields).length ? compileProjection(fields) : (d: Document) => d;
    const out = (d: Document | undefined) => (d === undefined ? null : project(d));

    if (remove) {
      const coll = catalog.getCollection(ctx.db, name);
      const [target] = coll
        ? targetRecords(coll, query, { hint, collation, sort, one: true, variables })
        : [];
      if (!coll || !target) return { lastErrorObject: { n: 0 }, value: null, ok: 1 };
      coll.delete(target, wopts);
      return { lastErrorObject: { n: 1 }, value: out(target.doc), ok: 1 };
    }

    let coll = catalog.getCollection(ctx.db, name);
    if (!coll) {
      if (!upsert) return { lastErrorObject: { n: 0, updatedExisting: false }, value: null, ok: 1 };
      coll = catalog.ensureCollection(ctx.db, name, wopts).coll;
    }
    const result = performUpdate(
      ctx,
      coll,
      {
        q: query,
        u: update!,
        upsert,
        multi: false,
        arrayFilters,
        hint,
        collation,
        sort,
        variables,
      },
      wopts,
    );
    const lastErrorObject: Document = {
      n: result.upsertedId !== undefined ? 1 : result.n,
      updatedExisting: result.n > 0,
    };
    if (result.upsertedId !== undefined) lastErrorObject.upserted = result.upsertedId;
    const value = returnNew
      ? result.after
      : result.upsertedId !== undefined
        ? undefined
        : result.before;
    return { lastErrorObject, value: out(value), ok: 1 };
  },
};
