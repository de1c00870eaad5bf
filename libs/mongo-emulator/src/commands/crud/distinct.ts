import BTree from 'sorted-btree';
import type { Document } from 'bson';
import { queryCandidates } from '../../bson/paths';
import { CommandError } from '../../errors';
import { comparatorFor } from '../../storage/key-compare';
import { queryDocumentArray, queryDocuments } from '../../storage/query-exec';
import { shardFilterOf } from '../../server/shard-filter';
import type { CommandDefinition } from '../types';
import { collectionName, optCollation, optDocument, optHint, optString } from './args';
import { committedSnapshotDocuments, runOnView } from './pipeline';

export const distinctCommand: CommandDefinition = {
  name: 'distinct',
  access: 'read',
  readConcern: true,
  run(ctx) {
    const name = collectionName(ctx);
    const key = optString(ctx, 'key');
    if (key === undefined)
      throw new CommandError(
        40414 as number,
        "BSON field 'distinct.key' is missing but a required field",
      );
    const query = optDocument(ctx, 'query') ?? {};
    const collation = optCollation(ctx);
    const hint = optHint(ctx);
    const catalog = ctx.node.catalog;
    const view = catalog.getView(ctx.db, name);
    let docs: Iterable<Document> = [];
    if (view)
      docs = runOnView(ctx, view, Object.keys(query).length ? [{ $match: query }] : [], collation);
    else {
      const coll = catalog.getCollection(ctx.db, name);
      if (coll) {
        const snapshot = committedSnapshotDocuments(ctx, coll);
        const ownership = shardFilterOf(ctx.cmd);
        docs = snapshot
          ? queryDocumentArray(snapshot, { filter: query, collation, ownership })
          : queryDocuments(coll, { filter: query, collation, hint, ownership });
      }
    }
    // Values equal under BSON comparison (1 and 1.0) collapse to the first one seen, with its type.
    const seen = new BTree<unknown, true>(undefined, comparatorFor(collation));
    const values: unknown[] = [];
    for (const doc of docs) {
      for (const cand of queryCandidates(doc, key)) {
        if (!cand.exists) continue;
        // A leaf array contributes its elements, not itself.
        if (Array.isArray(cand.value) && !cand.expanded) continue;
        if (seen.has(cand.value)) continue;
        seen.set(cand.value, true);
        values.push(cand.value);
      }
    }
    return { values, ok: 1 };
  },
};
