import { optLetVariables } from './let-vars';
import { Long, type Document } from 'bson';
import { bsonTypeOf, isNumeric, toNumber } from '../../bson/compare';
import { isDocument } from '../../bson/paths';
import { CommandError } from '../../errors';
import { openChangeStream } from '../../changes/open-change-stream';
import { runPipeline } from '../../aggregate/pipeline';
import { sampleSize } from '../../aggregate/stages/basic';
import type { Collection } from '../../storage/collection';
import { checkCollectionName } from '../../storage/catalog';
import { queryDocumentArray, queryDocuments } from '../../storage/query-exec';
import { shardFilterOf } from '../../server/shard-filter';
import { guardedAggregateInput } from '../../cursors/collection-guard';
import type { CommandContext, CommandDefinition } from '../types';
import { optBool, optCollation, optDocument, optHint, optNonNegative, reqArray } from './args';
import { checkCollectionUuid, optCollectionUuid } from './collection-uuid';
import { cursorReply } from './cursor-reply';
import { listLocalSessions } from './list-local-sessions';
import { committedSnapshotDocuments, pipelineEnv, runOnViewForCursor } from './pipeline';

function isWriteStage(stage: Document): boolean {
  return '$out' in stage || '$merge' in stage;
}

/**
 * Moves a leading $match (and a $sort right after it) into the planner, so aggregations over
 * `_id` ranges use the index exactly like find does. The stages are removed from the pipeline
 * because the planner applies the full filter and order.
 */
function pushDown(pipeline: Document[]): { filter?: Document; sort?: Document; rest: Document[] } {
  let i = 0;
  let filter: Document | undefined;
  let sort: Document | undefined;
  if (isDocument(pipeline[0]?.$match) && Object.keys(pipeline[0]).length === 1) {
    filter = pipeline[0].$match as Document;
    i++;
  }
  if (isDocument(pipeline[i]?.$sort) && Object.keys(pipeline[i]).length === 1) {
    sort = pipeline[i].$sort as Document;
    i++;
  }
  return { filter, sort, rest: pipeline.slice(i) };
}

/**
 * `$sample` as the first stage, asking for under 5 % of a collection of more than 100
 * documents: mongod reads it with a pseudo-random cursor (no scan, no sort), as
 * DocumentSourceSampleFromRandomCursor — distinct documents, a duplicate skipped, error 28799
 * after 100 duplicates in a row. Here: random record ids, each rounded up to the next stored
 * record (gaps left by deletes weigh on the chances, as a storage engine's random cursor
 * does). Null when mongod would sample otherwise (a scan with a random sort).
 */
function randomCursorSample(coll: Collection, pipeline: Document[]): Document[] | null {
  const stage = pipeline[0];
  if (!isDocument(stage) || Object.keys(stage).length !== 1 || !('$sample' in stage)) return null;
  const size = Math.trunc(sampleSize(stage.$sample));
  const count = coll.count;
  if (count <= 100 || size >= count * 0.05) return null;
  const low = coll.records.minKey()!;
  const high = coll.records.maxKey()!;
  const seen = new Set<number>();
  const out: Document[] = [];
  let duplicates = 0;
  while (out.length < size) {
    const rid = low + Math.floor(Math.random() * (high - low + 1));
    const [found, record] = coll.records.getPairOrNextHigher(rid)!;
    if (seen.has(found)) {
      if (++duplicates >= 100)
        throw new CommandError(
          28799,
          '$sample stage could not find a non-duplicate document after 100 while using a random cursor. This is likely a sporadic failure, please try again.',
        );
      continue;
    }
    duplicates = 0;
    seen.add(found);
    out.push(record.doc);
  }
  return out;
}

export const aggregateCommand: CommandDefinition = {
  name: 'aggregate',
  access: 'read',
  readConcern: true,
  async run(ctx: CommandContext) {
    const target = ctx.cmd.aggregate;
    const collectionUuid = optCollectionUuid(ctx);
    const pipeline = reqArray(ctx, 'pipeline') as Document[];
    pipeline.forEach((s, i) => {
      if (!isDocument(s)) {
        throw new CommandError(
          'TypeMismatch',
          `Each element of the 'pipeline' array must be an object; element ${i} is not`,
        );
      }
    });
    if (optBool(ctx, 'explain')) {
      throw new CommandError('CommandNotSupported', 'explain is not supported by the emulator');
    }
    const cursorOpts = optDocument(ctx, 'cursor');
    if (!cursorOpts) {
      throw new CommandError(
        'FailedToParse',
        "The 'cursor' option is required, except for aggregate with the explain argument",
      );
    }
    const batchSize = optNonNegative(ctx, 'batchSize', cursorOpts, 'aggregate.cursor');
    const collation = optCollation(ctx);
    const hint = optHint(ctx);
    const variables = optLetVariables(ctx);
    optBool(ctx, 'allowDiskUse');

    if (pipeline.length && '$changeStream' in pipeline[0]) {
      const cursor = await openChangeStream(ctx, pipeline, cursorOpts);
      return { cursor, ok: 1 };
    }

    const firstStage = pipeline[0] as Document | undefined;
    const listSessionsStage =
      isDocument(firstStage) && '$listLocalSessions' in firstStage
        ? firstStage.$listLocalSessions
        : undefined;
    pipeline.forEach((stage, i) => {
      if (i > 0 && isDocument(stage) && '$listLocalSessions' in stage) {
        throw new CommandError(
          40602 as number,
          '$listLocalSessions is only valid as the first stage in a pipeline',
        );
      }
    });
    if (listSessionsStage !== undefined) {
      const collectionless = isNumeric(target) && toNumber(target) === 1;
      const input = listLocalSessions(ctx, listSessionsStage, collectionless);
      const ns = `${ctx.db}.$cmd.aggregate`;
      const out = runPipeline(input, pipeline.slice(1), pipelineEnv(ctx, undefined, variables));
      return cursorReply(ctx, ns, out[Symbol.iterator](), { batchSize });
    }

    const catalog = ctx.node.catalog;
    let ns: string;
    let docs: Iterable<Document>;
    let guard: (() => void) | undefined;
    if (isNumeric(target) && toNumber(target) === 1) {
      // Database-level aggregate ($documents, $currentOp, ...): no input documents.
      ns = `${ctx.db}.$cmd.aggregate`;
      docs = runPipeline([], pipeline, pipelineEnv(ctx, undefined, variables));
    } else {
      if (typeof target !== 'string') {
        throw new CommandError(
          'InvalidNamespace',
          `collection name has invalid type ${bsonTypeOf(target)}`,
        );
      }
      checkCollectionName(ctx.db, target);
      ns = `${ctx.db}.${target}`;
      if (collectionUuid) checkCollectionUuid(ctx, target, collectionUuid);
      const view = catalog.getView(ctx.db, target);
      if (view) {
        ({ docs, guard } = runOnViewForCursor(ctx, view, pipeline, variables));
      } else {
        const coll = catalog.getCollection(ctx.db, target);
        const { filter, sort, rest } = pushDown(pipeline);
        let input: Iterable<Document> = [];
        if (coll) {
          const request = {
            filter,
            sort,
            hint,
            collation,
            variables,
            ownership: shardFilterOf(ctx.cmd),
          };
          const snapshot = committedSnapshotDocuments(ctx, coll);
          const random =
            !snapshot && request.ownership === undefined ? randomCursorSample(coll, pipeline) : null;
          if (random) {
            input = random;
            rest.splice(0, 1); // the $sample stage: done by the random cursor
          } else
            input = snapshot
              ? queryDocumentArray(snapshot, request)
              : queryDocuments(coll, request);
        }
        const guarded = guardedAggregateInput(catalog, coll, input, rest);
        guard = guarded.guard;
        docs = runPipeline(guarded.input, rest, pipelineEnv(ctx, target, variables));
      }
    }
    if (pipeline.some(isWriteStage)) {
      // $out/$merge write everything now and return an empty, closed cursor.
      for (const _ of docs) void _;
      return { cursor: { firstBatch: [], id: Long.ZERO, ns }, ok: 1 };
    }
    return cursorReply(ctx, ns, docs[Symbol.iterator](), { batchSize, guard });
  },
};
