import type { Document } from 'bson';
import { runPipeline } from '../../aggregate/pipeline';
import type { ViewDefinition } from '../../storage/catalog';
import type { Collection } from '../../storage/collection';
import { CatalogPipelineEnv } from '../../storage/pipeline-env';
import { documentsAtCommittedSnapshot } from '../../storage/snapshot-view';
import { guardedAggregateInput } from '../../cursors/collection-guard';
import { readsCommittedSnapshot } from '../../server/read-concern';
import type { CommandContext } from '../types';
import { writeOptions } from './args';

/** The PipelineEnv of a command: catalog-backed, with the command's `let` variables. */
export function pipelineEnv(
  ctx: CommandContext,
  coll: string | undefined,
  variables?: Record<string, unknown>,
): CatalogPipelineEnv {
  return new CatalogPipelineEnv(ctx.node.catalog, ctx.db, coll, variables, writeOptions(ctx), (c) =>
    committedSnapshotDocuments(ctx, c),
  );
}

/** `runPipeline` option of applyUpdate: runs an update pipeline over one document. */
export function pipelineUpdateRunner(ctx: CommandContext, variables?: Record<string, unknown>) {
  return (doc: Document, pipeline: Document[]): Document => {
    const env = pipelineEnv(ctx, undefined, variables);
    for (const out of runPipeline([doc], pipeline, env)) return out;
    return {};
  };
}

/**
 * Resolves a view (and views over views) to its base collection and the full pipeline:
 * the innermost view's stages first, then each outer view's, then `stages`.
 */
export function resolveView(
  ctx: CommandContext,
  view: ViewDefinition,
  stages: Document[],
): { base: string; pipeline: Document[]; collation?: Document } {
  const { base, stages: viewStages } = ctx.node.catalog.viewChain(ctx.db, view);
  const collation = view.options.collation as Document | undefined;
  return { base, pipeline: [...viewStages, ...stages], collation };
}

/**
 * The documents a read command sees in `coll`: as of the majority-committed snapshot for
 * readConcern majority/snapshot while that snapshot lags (see documentsAtCommittedSnapshot),
 * otherwise undefined (read the live collection).
 */
export function committedSnapshotDocuments(
  ctx: CommandContext,
  coll: Collection,
): Document[] | undefined {
  if (!readsCommittedSnapshot(ctx.readConcern)) return undefined;
  return documentsAtCommittedSnapshot(ctx.node.oplog, coll);
}

/** Runs `stages` on top of a view's pipeline over its base collection's documents. */
export function runOnView(
  ctx: CommandContext,
  view: ViewDefinition,
  stages: Document[],
  _collation?: Document,
  variables?: Record<string, unknown>,
): Iterable<Document> {
  return runOnViewForCursor(ctx, view, stages, variables).docs;
}

/**
 * runOnView for a cursor: also returns the getMore check of the base collection (a cursor over
 * a view reads the base collection, so dropping or renaming that collection kills it).
 */
export function runOnViewForCursor(
  ctx: CommandContext,
  view: ViewDefinition,
  stages: Document[],
  variables?: Record<string, unknown>,
): { docs: Iterable<Document>; guard?: () => void } {
  const { base, pipeline } = resolveView(ctx, view, stages);
  const env = pipelineEnv(ctx, view.name, variables);
  const catalog = ctx.node.catalog;
  const coll = catalog.getCollection(ctx.db, base);
  // The env reads `base` at the read concern's snapshot (committedSnapshotDocuments).
  const raw = env.readCollection(ctx.db, base);
  const { input, guard } = guardedAggregateInput(catalog, coll, raw, pipeline);
  return { docs: runPipeline(input, pipeline, env), guard };
}
