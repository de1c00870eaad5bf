import type { Document } from 'bson';
import { CommandError } from '../errors';
import { isDocument, typeName } from './operators/types';
import type { PipelineEnv } from './pipeline-env';
import { count, limit, match, sample, skip, sort } from './stages/basic';
import { facet } from './stages/facet';
import { bucket, bucketAuto, group, sortByCount } from './stages/group';
import { lookup, unwind } from './stages/lookup';
import { merge, out } from './stages/output';
import { addFields, project, replaceRoot, replaceWithStage, unset } from './stages/project';
import { redact } from './stages/redact';
import { collStats, documents, indexStats } from './stages/sources';
import { unionWith } from './stages/union-with';
import type { PipelineScope, StageBuilder, StageContext, StageFn } from './stages/types';

export type { PipelineEnv } from './pipeline-env';

const STAGES: Record<string, StageBuilder> = {
  $match: match,
  $project: project,
  $addFields: addFields('$addFields'),
  $set: addFields('$set'),
  $unset: unset,
  $replaceRoot: replaceRoot,
  $replaceWith: replaceWithStage,
  $group: group,
  $sort: sort,
  $limit: limit,
  $skip: skip,
  $sample: sample,
  $bucket: bucket,
  $bucketAuto: bucketAuto,
  $count: count,
  $lookup: lookup,
  $unwind: unwind,
  $facet: facet,
  $sortByCount: sortByCount,
  $out: out,
  $merge: merge,
  $collStats: collStats,
  $indexStats: indexStats,
  $documents: documents,
  $redact: redact,
  $unionWith: unionWith,
};

/** Stages that must come last / first (DocumentSource position requirements). */
const MUST_BE_LAST = new Set(['$out', '$merge']);
const MUST_BE_FIRST = new Set(['$collStats', '$indexStats', '$documents']);
/** Stages a sub-pipeline may not contain. */
const NOT_IN_FACET = new Set([
  '$out',
  '$merge',
  '$facet',
  '$collStats',
  '$indexStats',
  '$documents',
]);
const NOT_IN_LOOKUP = new Set(['$out', '$merge']);
const NOT_IN_UNION = new Set(['$out', '$merge']);

/**
 * Validates and compiles a pipeline, then runs it over `input`. Validation errors surface
 * before any document is read; streaming stages ($match, $project, $limit, ...) stay lazy.
 */
export function runPipeline(
  input: Iterable<Document>,
  pipeline: Document[],
  env: PipelineEnv,
): Iterable<Document> {
  const vars = { NOW: env.now(), CLUSTER_TIME: env.clusterTime(), ...(env.variables ?? {}) };
  return compile(pipeline, env, vars, 'top')(input);
}

/** The same environment aggregating `coll` instead (its methods still reach the original). */
function onCollection(env: PipelineEnv, coll: string): PipelineEnv {
  return Object.create(env, { coll: { value: coll, enumerable: true } }) as PipelineEnv;
}

function compile(
  pipeline: unknown,
  env: PipelineEnv,
  vars: Record<string, unknown>,
  scope: PipelineScope,
): StageFn {
  if (!Array.isArray(pipeline)) {
    throw new CommandError(14, `'pipeline' option must be specified as an array`);
  }
  const ctx: StageContext = {
    env,
    vars,
    scope,
    runSub: (subInput, sub, subScope, extra, collection) =>
      compile(
        sub,
        collection === undefined ? env : onCollection(env, collection),
        { ...vars, ...(extra ?? {}) },
        subScope,
      )(subInput),
  };
  const fns: StageFn[] = pipeline.map((stage, i) => {
    if (!isDocument(stage)) {
      throw new CommandError(
        14,
        `Each element of the 'pipeline' array must be an object, but found ${typeName(stage)}`,
      );
    }
    const keys = Object.keys(stage);
    if (keys.length !== 1) {
      throw new CommandError(
        40323,
        'A pipeline stage specification object must contain exactly one field.',
      );
    }
    const name = keys[0];
    const builder = STAGES[name];
    if (!builder) throw new CommandError(40324, `Unrecognized pipeline stage name: '${name}'`);
    if (scope === 'facet' && NOT_IN_FACET.has(name)) {
      throw new CommandError(40600, `${name} is not allowed to be used within a $facet stage`);
    }
    if (scope === 'lookup' && NOT_IN_LOOKUP.has(name)) {
      throw new CommandError(51047, `${name} is not allowed to be used within a $lookup stage`);
    }
    if (scope === 'unionWith' && NOT_IN_UNION.has(name)) {
      throw new CommandError(31441, `${name} is not allowed within a $unionWith's sub-pipeline`);
    }
    if (MUST_BE_LAST.has(name) && i !== pipeline.length - 1) {
      throw new CommandError(40601, `${name} can only be the final stage in the pipeline`);
    }
    if (MUST_BE_FIRST.has(name) && i !== 0) {
      throw new CommandError(40602, `${name} is only valid as the first stage in a pipeline`);
    }
    return builder(stage[name], ctx);
  });
  // Deferred so that even buffering stages ($sort, $group) read nothing until iterated.
  return (input) => ({
    [Symbol.iterator]: () =>
      fns.reduce<Iterable<Document>>((stream, fn) => fn(stream), input)[Symbol.iterator](),
  });
}
