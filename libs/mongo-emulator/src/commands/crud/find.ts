import { optLetVariables } from './let-vars';
import { Long, type Document } from 'bson';
import { CommandError } from '../../errors';
import { compileProjection } from '../../query/projection';
import {
  queryDocumentArray,
  queryDocuments,
  queryRawDocuments,
  type QueryRequest,
} from '../../storage/query-exec';
import { fromWire } from '../../bson/codec';
import { collectionGuard } from '../../cursors/collection-guard';
import type { CommandDefinition } from '../types';
import {
  collectionName,
  optBool,
  optCollation,
  optDocument,
  optHint,
  optNonNegative,
  optNumber,
} from './args';
import { checkCollectionUuid, optCollectionUuid } from './collection-uuid';
import { cursorReply } from './cursor-reply';
import { oplogRsDocuments } from './oplog-view';
import { shardFilterOf } from '../../server/shard-filter';
import { committedSnapshotDocuments, runOnViewForCursor } from './pipeline';

function* mapDocs(docs: Iterable<Document>, fn: (d: Document) => Document): Generator<Document> {
  for (const d of docs) yield fn(d);
}

function* sliced(docs: Iterable<Document>, skip: number, limit?: number): Generator<Document> {
  let index = 0;
  for (const d of docs) {
    if (limit && index >= skip + limit) return;
    if (index++ >= skip) yield d;
  }
}

export const findCommand: CommandDefinition = {
  name: 'find',
  access: 'read',
  readConcern: true,
  async run(ctx) {
    const name = collectionName(ctx);
    const ns = `${ctx.db}.${name}`;
    const collectionUuid = optCollectionUuid(ctx);
    const filter = optDocument(ctx, 'filter') ?? {};
    const projection = optDocument(ctx, 'projection');
    const sort = optDocument(ctx, 'sort');
    const skip = optNonNegative(ctx, 'skip');
    let limit = optNumber(ctx, 'limit');
    let batchSize = optNonNegative(ctx, 'batchSize');
    let singleBatch = optBool(ctx, 'singleBatch') ?? false;
    const hint = optHint(ctx);
    const min = optDocument(ctx, 'min');
    const max = optDocument(ctx, 'max');
    const collation = optCollation(ctx);
    const variables = optLetVariables(ctx);
    optDocument(ctx, 'readConcern');
    optBool(ctx, 'allowDiskUse');
    if (limit !== undefined && limit < 0) {
      // Legacy negative limit: one batch of at most |limit| documents.
      limit = -limit;
      singleBatch = true;
    }
    if (limit !== undefined) limit = Math.trunc(limit);
    if (optBool(ctx, 'tailable')) {
      throw new CommandError(
        'BadValue',
        'error processing query: tailable cursors are not supported by the emulator',
      );
    }
    if (limit && batchSize && batchSize > limit) batchSize = limit;
    if (collectionUuid) checkCollectionUuid(ctx, name, collectionUuid);

    if (ctx.db === 'local' && name === 'oplog.rs') {
      const natural = oplogRsDocuments(ctx.node.oplog, sort);
      let docs: Iterable<Document> = Object.keys(filter).length
        ? queryDocumentArray([...natural], { filter, skip, limit, collation, variables })
        : sliced(natural, skip ?? 0, limit);
      if (projection && Object.keys(projection).length)
        docs = mapDocs(docs, compileProjection(projection));
      return cursorReply(ctx, ns, docs[Symbol.iterator](), { batchSize, singleBatch });
    }

    const view = ctx.node.catalog.getView(ctx.db, name);
    if (view) {
      const stages: Document[] = [];
      if (Object.keys(filter).length) stages.push({ $match: filter });
      if (sort && Object.keys(sort).length) stages.push({ $sort: sort });
      if (skip) stages.push({ $skip: skip });
      if (limit) stages.push({ $limit: limit });
      if (projection && Object.keys(projection).length) stages.push({ $project: projection });
      const { docs, guard } = runOnViewForCursor(ctx, view, stages);
      return cursorReply(ctx, ns, docs[Symbol.iterator](), { batchSize, singleBatch, guard });
    }

    const coll = ctx.node.catalog.getCollection(ctx.db, name);
    if (!coll) {
      // mongod validates the hint only against an existing collection.
      return { cursor: { firstBatch: [], id: Long.ZERO, ns }, ok: 1 };
    }
    const request: QueryRequest = {
      filter,
      sort,
      skip,
      limit,
      hint,
      min,
      max,
      collation,
      variables,
      ownership: shardFilterOf(ctx.cmd),
    };
    const snapshot = committedSnapshotDocuments(ctx, coll);
    const projected = !!projection && Object.keys(projection).length > 0;
    // A client's find without projection: the stored bytes go out as they are, never decoded
    // (mongod hands out what it stores). The batch then holds RawDocuments, which only the wire
    // encoder and the batch's size count read.
    let docs: Iterable<Document> = snapshot
      ? queryDocumentArray(snapshot, request)
      : !projected && fromWire(ctx.cmd)
        ? (queryRawDocuments(coll, request) as Iterable<unknown> as Iterable<Document>)
        : queryDocuments(coll, request);
    if (projected) docs = mapDocs(docs, compileProjection(projection!));
    const iterator = docs[Symbol.iterator]();
    // Planning errors (bad hint, bad filter) surface while the first batch is read, failing the command.
    return cursorReply(ctx, ns, iterator, {
      batchSize,
      singleBatch,
      guard: collectionGuard(ctx.node.catalog, coll),
    });
  },
};
