import type { Document } from 'bson';
import type { PipelineEnv } from '../pipeline-env';

/** A compiled stage: transforms a document stream (generators keep it lazy). */
export type StageFn = (input: Iterable<Document>) => Iterable<Document>;

/** Where a pipeline runs: sub-pipelines forbid some stages. */
export type PipelineScope = 'top' | 'facet' | 'lookup' | 'unionWith' | 'mergeUpdate';

export interface StageContext {
  readonly env: PipelineEnv;
  /** Variables for expressions: NOW, CLUSTER_TIME, `let` variables (ROOT/CURRENT are per doc). */
  readonly vars: Record<string, unknown>;
  readonly scope: PipelineScope;
  /**
   * Compiles and runs a sub-pipeline (for $lookup/$facet/$unionWith) with extra variables; on
   * `collection` when given (a source stage of it, `$indexStats` or `$collStats`, reads that
   * collection, as on the server), else on the pipeline's own.
   */
  runSub(
    input: Iterable<Document>,
    pipeline: unknown,
    scope: PipelineScope,
    extraVars?: Record<string, unknown>,
    collection?: string,
  ): Iterable<Document>;
}

export type StageBuilder = (spec: unknown, ctx: StageContext) => StageFn;

/**
 * The documents a stage that names another namespace reads ($unionWith, $lookup): a collection's,
 * or a view's — its base collection's documents through the view's stages (mongod resolves views
 * there since 3.4 for $lookup, 4.4 for $unionWith).
 */
export function namespaceDocuments(
  ctx: StageContext,
  db: string,
  coll: string,
  scope: PipelineScope,
): Iterable<Document> {
  const read = ctx.env.readNamespace?.(db, coll);
  if (!read) return ctx.env.readCollection(db, coll);
  return read.stages.length > 0
    ? ctx.runSub(read.documents, read.stages, scope, undefined, coll)
    : read.documents;
}
