import { CommandError } from '../../errors';
import { executeQuery, queryDocumentArray } from '../../storage/query-exec';
import { shardFilterOf } from '../../server/shard-filter';
import { rejectUnknownField } from './collection-uuid';
import type { CommandDefinition } from '../types';
import {
  collectionName,
  optCollation,
  optDocument,
  optHint,
  optNumber,
  optNonNegative,
} from './args';
import { committedSnapshotDocuments, runOnView } from './pipeline';

export const countCommand: CommandDefinition = {
  name: 'count',
  access: 'read',
  readConcern: true,
  run(ctx) {
    const name = collectionName(ctx);
    // count's IDL is strict and has no collectionUUID (MongoDB 7.0).
    rejectUnknownField(ctx, 'collectionUUID');
    const query = optDocument(ctx, 'query') ?? {};
    let limit = optNumber(ctx, 'limit') ?? 0;
    limit = Math.abs(Math.trunc(limit));
    const skip = optNonNegative(ctx, 'skip') ?? 0;
    const hint = optHint(ctx);
    const collation = optCollation(ctx);
    if (ctx.cmd.skip !== undefined && (optNumber(ctx, 'skip') ?? 0) < 0) {
      throw new CommandError('BadValue', 'skip value is negative in count query');
    }
    const catalog = ctx.node.catalog;
    const view = catalog.getView(ctx.db, name);
    if (view) {
      const stages = [
        { $match: query },
        ...(skip ? [{ $skip: skip }] : []),
        ...(limit ? [{ $limit: limit }] : []),
      ];
      let n = 0;
      for (const _ of runOnView(ctx, view, stages, collation)) n++;
      return { n, ok: 1 };
    }
    const coll = catalog.getCollection(ctx.db, name);
    if (!coll) return { n: 0, ok: 1 };
    const ownership = shardFilterOf(ctx.cmd);
    const snapshot = committedSnapshotDocuments(ctx, coll);
    if (snapshot) {
      let n = 0;
      for (const _ of queryDocumentArray(snapshot, {
        filter: query,
        collation,
        skip,
        limit,
        ownership,
      }))
        n++;
      return { n, ok: 1 };
    }
    if (Object.keys(query).length === 0 && hint === undefined) {
      // Metadata count, as mongod answers an unfiltered count. Like mongod's "fast count" it
      // is not shard-filtered: through a router it includes orphans (SERVER-33753); a count
      // with a predicate is filtered (SERVER-3645).
      const n = Math.max(0, coll.count - skip);
      return { n: limit ? Math.min(n, limit) : n, ok: 1 };
    }
    let n = 0;
    for (const _ of executeQuery(coll, { filter: query, hint, collation, skip, limit, ownership })
      .records)
      n++;
    return { n, ok: 1 };
  },
};
