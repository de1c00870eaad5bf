import { Timestamp, type Document } from 'bson';
import { compareValues } from '../bson/compare';
import { cloneDeep, getPath, hasPath, isDocument } from '../bson/paths';
import { CommandError } from '../errors';
import { bsonTypeOf } from '../bson/compare';
import { applyAddToSet, applyPop, applyPull, applyPush } from './update-arrays';
import * as fields from './update-fields';
import { applyRename, renamePaths } from './update-rename';
import {
  checkConflict,
  comparePaths,
  compileArrayFilters,
  parseUpdatePath,
  resolvePositional,
} from './update-paths';
import { applyReplacement, checkIdUnchanged, validateStorage } from './update-replace';
import { computeUpdateDescription } from './update-description';
import type { UpdateDescription } from '../oplog/oplog-entry';
import { UpdateLog } from './update-log';

export interface UpdateOptions {
  /** True when the update builds a new document for an upsert ($setOnInsert applies). */
  isUpsert?: boolean;
  arrayFilters?: Document[];
  /** The query that selected the document, for the positional `$`. */
  query?: Document;
  runPipeline?: (doc: Document, pipeline: Document[]) => Document;
  /** Clock values for $currentDate (default: the wall clock, Timestamp(now, 1)). */
  now?: Date;
  timestamp?: Timestamp;
}

type Applier = (ctx: fields.ApplyContext, path: string[], arg: unknown) => boolean;

const MODIFIERS: Record<string, Applier> = {
  $set: fields.applySet,
  $setOnInsert: fields.applySet,
  $unset: (ctx, path) => fields.applyUnset(ctx, path),
  $inc: (ctx, path, arg) => fields.applyArithmetic(ctx, path, arg, '$inc'),
  $mul: (ctx, path, arg) => fields.applyArithmetic(ctx, path, arg, '$mul'),
  $min: (ctx, path, arg) => fields.applyMinMax(ctx, path, arg, '$min'),
  $max: (ctx, path, arg) => fields.applyMinMax(ctx, path, arg, '$max'),
  $currentDate: fields.applyCurrentDate,
  $bit: fields.applyBit,
  $push: applyPush,
  $addToSet: applyAddToSet,
  $pop: applyPop,
  $pull: (ctx, path, arg) => applyPull(ctx, path, arg, '$pull'),
  $pullAll: (ctx, path, arg) => applyPull(ctx, path, arg, '$pullAll'),
  $rename: applyRename,
};

export interface UpdateResult {
  doc: Document;
  changed: boolean;
  /**
   * The updateDescription mongod reports: for modifier updates, built from what each operator
   * touched (its v2 log builder); for pipelines, the diff of the original and the pipeline's
   * output. Absent for replacements.
   */
  description?: UpdateDescription;
}

/** Applies an update (modifiers, replacement or pipeline) to a copy of `doc`. */
export function applyUpdate(
  doc: Document,
  update: Document | Document[],
  options: UpdateOptions = {},
): UpdateResult {
  if (Array.isArray(update)) return applyPipeline(doc, update, options);
  if (!isDocument(update))
    throw new CommandError('FailedToParse', 'Update argument must be either an object or an array');
  const keys = Object.keys(update);
  if (keys.length === 0 || !keys[0].startsWith('$')) return applyReplacement(doc, update);
  return applyModifiers(doc, update, options);
}

function applyPipeline(doc: Document, pipeline: Document[], options: UpdateOptions) {
  if (!options.runPipeline)
    throw new CommandError('InternalError', 'pipeline updates need options.runPipeline');
  let out = options.runPipeline(cloneDeep(doc), pipeline);
  // mongod (PipelineExecutor -> ObjectReplaceExecutor::applyReplacementUpdate with
  // replacementDocContainsIdField false) keeps the original _id when the pipeline's output has
  // none, so [{$unset: '_id'}] or a $replaceWith without _id leaves _id in place.
  if (!('_id' in out) && '_id' in doc) out = { _id: cloneDeep(doc._id), ...out };
  checkIdUnchanged(doc, out);
  validateStorage(out);
  // mongod logs the diff between the original and the pipeline's output (PipelineExecutor's
  // computeDiff), then UpdateStage stores the document with `_id` first (ensureIdFieldIsFirst):
  // a $replaceWith that puts `_id` elsewhere is logged as output, stored with `_id` first.
  const description = computeUpdateDescription(doc, out);
  const changed = !fields.identical(doc, out);
  if (Object.keys(out)[0] !== '_id' && '_id' in out) {
    const { _id, ...rest } = out;
    out = { _id, ...rest };
  }
  return { doc: out, changed, description };
}

interface PlannedOp {
  op: string;
  path: string[];
  arg: unknown;
  /** Where the op sits in mongod's update tree: its path, or a $rename's destination. */
  at: string[];
}

function applyModifiers(doc: Document, update: Document, options: UpdateOptions) {
  const work = cloneDeep(doc);
  const arrayFilters = compileArrayFilters(options.arrayFilters);
  const resolveCtx = {
    doc: work,
    query: options.query,
    arrayFilters,
    isUpsertInsert: !!options.isUpsert,
  };
  const seen: string[][] = [];
  const planned: PlannedOp[] = [];
  for (const op of Object.keys(update)) {
    const apply = MODIFIERS[op];
    if (!apply) {
      throw new CommandError(
        'FailedToParse',
        `Unknown modifier: ${op}. Expected a valid update modifier or pipeline-style update specified as an array`,
      );
    }
    const args = update[op];
    if (!isDocument(args)) {
      throw new CommandError(
        'FailedToParse',
        `Modifiers operate on fields but we found type ${bsonTypeOf(args)} instead. For example: {$mod: {<field>: ...}} not {${op}: ${String(args)}}`,
      );
    }
    for (const path of Object.keys(args)) {
      const parts = parseUpdatePath(path);
      const extra = op === '$rename' ? renamePaths(path, args[path]) : [];
      checkConflict(seen, parts, path);
      for (const p of extra) checkConflict(seen, p, p.join('.'));
      if (op === '$setOnInsert' && !options.isUpsert) continue;
      for (const concrete of resolvePositional(parts, path, resolveCtx)) {
        const at = op === '$rename' ? extra[0] : concrete;
        planned.push({ op, path: concrete, arg: args[path], at });
      }
    }
  }
  for (const name of arrayFilters.matchers.keys()) {
    if (!arrayFilters.used.has(name)) {
      throw new CommandError(
        'FailedToParse',
        `The array filter for identifier '${name}' was not used in the update ${JSON.stringify(update)}`,
      );
    }
  }
  checkConcreteConflicts(planned);
  // mongod walks its update tree in field-name order, so new fields are appended sorted; a
  // $rename's node sits on its destination (the source only holds a conflict placeholder).
  planned.sort((a, b) => comparePaths(a.at, b.at));
  const now = options.now ?? new Date();
  const log = new UpdateLog();
  const ctx: fields.ApplyContext = {
    doc: work,
    now,
    timestamp: options.timestamp ?? new Timestamp({ t: Math.floor(now.getTime() / 1000), i: 1 }),
    log,
  };
  let changed = false;
  for (const step of planned) {
    guardId(doc, step, options.isUpsert);
    if (MODIFIERS[step.op](ctx, step.path, step.arg)) changed = true;
  }
  if (changed) {
    checkIdUnchanged(doc, work);
    validateStorage(work);
  }
  return { doc: changed ? work : cloneDeep(doc), changed, description: log.toDescription() };
}

/** Distinct positional expansions may land on one element ({'a.$[]': 1, 'a.0': 2}). */
function checkConcreteConflicts(planned: PlannedOp[]): void {
  const seen = new Set<string>();
  const paths = planned.flatMap((p) => (p.op === '$rename' ? [] : [p.path.join('.')]));
  for (const path of paths) {
    if (seen.has(path))
      throw new CommandError(
        'ConflictingUpdateOperators',
        `Update created a conflict at '${path}'`,
      );
    seen.add(path);
  }
}

/** _id (and its subfields) may only be "updated" to an equal value, except on upsert. */
function guardId(original: Document, step: PlannedOp, isUpsert?: boolean): void {
  if (step.path[0] !== '_id' || isUpsert || !hasPath(original, ['_id'])) return;
  const unchanged =
    step.op === '$set' &&
    compareValues(getPath(original, step.path), step.arg) === 0 &&
    hasPath(original, step.path);
  if (!unchanged) {
    throw new CommandError(
      'ImmutableField',
      "Performing an update on the path '_id' would modify the immutable field '_id'",
    );
  }
}
