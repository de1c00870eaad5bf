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
