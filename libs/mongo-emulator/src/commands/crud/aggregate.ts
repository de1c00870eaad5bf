import { Long, type Document } from 'bson';
import { bsonTypeOf, isNumeric, toNumber } from '../../bson/compare';
import { isDocument } from '../../bson/paths';
import { CommandError } from '../../errors';
import { openChangeStream } from '../../changes/open-change-stream';
import { runPipeline } from '../../aggregate/pipeline';
import { checkCollectionName } from '../../storage/catalog';
import { queryDocuments } from '../../storage/query-exec';
import type { CommandContext, CommandDefinition } from '../types';
import { optBool, optCollation, optDocument, optHint, optNonNegative, reqArray } from './args';
import { cursorReply } from './cursor-reply';
import { pipelineEnv, runOnView } from './pipeline';

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

export const aggregateCommand: CommandDefinition = {
  name: 'aggregate',
  access: 'read',
  async run(ctx: CommandContext) {
    const target = ctx.cmd.aggregate;
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
    const variables = optDocument(ctx, 'let');
    optBool(ctx, 'allowDiskUse');

    if (pipeline.length && '$changeStream' in pipeline[0]) {
      const cursor = await openChangeStream(ctx, pipeline, cursorOpts);
      return { cursor, ok: 1 };
    }

    const catalog = ctx.node.catalog;
    let ns: string;
    let docs: Iterable<Document>;
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
      const view = catalog.getView(ctx.db, target);
      if (view) {
        docs = runOnView(ctx, view, pipeline, collation, variables);
      } else {
        const coll = catalog.getCollection(ctx.db, target);
        const { filter, sort, rest } = pushDown(pipeline);
        const input = coll
          ? queryDocuments(coll, { filter, sort, hint, collation, variables })
          : [];
        docs = runPipeline(input, rest, pipelineEnv(ctx, target, variables));
      }
    }
    if (pipeline.some(isWriteStage)) {
      // $out/$merge write everything now and return an empty, closed cursor.
      for (const _ of docs) void _;
      return { cursor: { firstBatch: [], id: Long.ZERO, ns }, ok: 1 };
    }
    return cursorReply(ctx, ns, docs[Symbol.iterator](), { batchSize });
  },
};
