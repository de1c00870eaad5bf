import type { Document } from 'bson';
import { isDocument } from '../../bson/paths';
import { CommandError, writeErrorFrom, type WriteErrorEntry } from '../../errors';
import { applyUpdate } from '../../query/update';
import { upsertSeed } from '../../query/upsert';
import { checkIdNotDollarPrefixed } from '../../query/update-replace';
import {
  prepareInsert,
  type Collection,
  type StoredRecord,
  type WriteOptions,
} from '../../storage/collection';
import { executeQuery } from '../../storage/query-exec';
import type { CommandContext } from '../types';
import { pipelineUpdateRunner } from './pipeline';

/** One update as the update command and findAndModify describe it. */
export interface UpdateSpec {
  q: Document;
  u: Document | Document[];
  upsert: boolean;
  multi: boolean;
  arrayFilters?: Document[];
  hint?: string | Document;
  collation?: Document;
  sort?: Document;
  variables?: Record<string, unknown>;
}

export interface UpdateOutcome {
  n: number;
  nModified: number;
  upsertedId?: unknown;
  /** Pre-image of the (last) matched document, for findAndModify. */
  before?: Document;
  /** Post-image of the (last) updated or upserted document. */
  after?: Document;
}

/** True for a replacement document (no update operators). */
export function isReplacement(u: Document | Document[]): boolean {
  if (Array.isArray(u)) return false;
  const keys = Object.keys(u);
  return keys.length === 0 || !keys[0].startsWith('$');
}

/**
 * The records a write targets. Matches are collected before any write so an update that moves
 * a document within the scanned index never visits it twice.
 */
export function targetRecords(
  coll: Collection,
  q: Document,
  opts: {
    hint?: string | Document;
    collation?: Document;
    sort?: Document;
    one: boolean;
    variables?: Record<string, unknown>;
  },
): StoredRecord[] {
  const id = pointIdOf(q);
  if (id !== undefined && opts.hint === undefined && !hasKeys(opts.sort)) {
    // `{_id: <number or ObjectId>}`: the plan the planner would pick (a point IXSCAN on the
    // unique `_id_` index, whose match is exactly the filter), without planning.
    const rec = coll.recordById(id);
    if (!rec) return [];
    coll.metrics.keysExamined++;
    coll.metrics.docsExamined++;
    return [rec];
  }
  const { records } = executeQuery(coll, {
    filter: q,
    hint: opts.hint,
    collation: opts.collation,
    sort: opts.sort,
    limit: opts.one ? 1 : undefined,
    variables: opts.variables,
  });
  return [...records];
}

const POINT_ID_TYPES = new Set(['Long', 'Int32', 'Double', 'ObjectId']);

/**
 * The `_id` of a filter that is exactly `{_id: v}` with `v` a number or an ObjectId (values whose
 * index comparison is the filter's equality under any collation); undefined otherwise.
 */
function pointIdOf(q: Document): unknown {
  let id: unknown;
  let fields = 0;
  for (const key in q) {
    if (key !== '_id' || ++fields > 1) return undefined;
    id = q[key];
  }
  if (fields !== 1) return undefined;
  if (typeof id === 'number') return Number.isNaN(id) ? undefined : id;
  const tag = (id as { _bsontype?: unknown } | null)?._bsontype;
  if (typeof tag !== 'string' || !POINT_ID_TYPES.has(tag)) return undefined;
  if (tag === 'Double' && Number.isNaN((id as { value: number }).value)) return undefined;
  return id;
}

function hasKeys(doc: Document | undefined): boolean {
  if (!doc) return false;
  for (const _ in doc) return true;
  return false;
}

/** Applies one update spec; throws CommandError for per-statement failures. */
export function performUpdate(
  ctx: CommandContext,
  coll: Collection,
  spec: UpdateSpec,
  wopts: WriteOptions,
): UpdateOutcome {
  if (spec.multi && isReplacement(spec.u)) {
    throw new CommandError(
      'FailedToParse',
      'multi update is not supported for replacement-style update',
    );
  }
  const runPipeline = pipelineUpdateRunner(ctx, spec.variables);
  const targets = targetRecords(coll, spec.q, { ...spec, one: !spec.multi });
  const outcome: UpdateOutcome = { n: 0, nModified: 0 };
  const replacement = isReplacement(spec.u);
  for (const target of targets) {
    const rec = coll.record(target.rid);
    if (!rec) continue;
    outcome.n++;
    const before = rec.doc;
    const applied = applyUpdate(before, spec.u, {
      arrayFilters: spec.arrayFilters,
      query: spec.q,
      runPipeline,
    });
    const after = applied.doc;
    outcome.before = before;
    outcome.after = before;
    if (!applied.changed) continue;
    // Modifier updates report what each operator logged (v2 log builder), pipeline updates the
    // diff of the original and the pipeline's output, as mongod does (see applyUpdate).
    const description = replacement ? undefined : applied.description;
    coll.replace(rec, after, replacement ? 'replace' : 'update', description, wopts);
    // The collection keeps bytes only: `after` is this caller's own object.
    outcome.after = after;
    outcome.nModified++;
  }
  if (outcome.n === 0 && spec.upsert) {
    const seed = upsertSeed(spec.q);
    const { doc } = applyUpdate(seed, spec.u, {
      isUpsert: true,
      arrayFilters: spec.arrayFilters,
      query: spec.q,
      runPipeline,
    });
    checkIdNotDollarPrefixed(doc._id);
    const toInsert = prepareInsert(doc);
    coll.insert(toInsert, wopts);
    outcome.upsertedId = toInsert._id;
    outcome.after = toInsert;
  }
  return outcome;
}

/** The fields of MongoDB 7.0's UpdateOpEntry (write_ops.idl). */
const UPDATE_OP_ENTRY_FIELDS = new Set([
  'q',
  'u',
  'c',
  'upsert',
  'multi',
  'arrayFilters',
  'hint',
  'collation',
  'upsertSupplied',
  'sampleId',
  '$_allowShardKeyUpdatesWithoutFullShardKeyInQuery',
]);

/** Validates and normalises one update statement of the update command. */
export function parseUpdateStatement(stmt: unknown, i: number): UpdateSpec {
  if (!isDocument(stmt)) {
    throw new CommandError(
      'TypeMismatch',
      `BSON field 'update.updates.${i}' is the wrong type, expected type 'object'`,
    );
  }
  const q = stmt.q;
  if (!isDocument(q)) {
    throw new CommandError(
      'TypeMismatch',
      `BSON field 'update.updates.q' is the wrong type, expected type 'object'`,
    );
  }
  for (const key of Object.keys(stmt)) {
    if (!UPDATE_OP_ENTRY_FIELDS.has(key)) {
      // MongoDB 7.0's UpdateOpEntry IDL is strict: `sort` (added in 8.0) and any other unknown
      // field fail the whole command with 40415.
      throw new CommandError(
        'Location40415',
        `BSON field 'update.updates.${key}' is an unknown field.`,
      );
    }
  }
  const u = stmt.u;
  if (!isDocument(u) && !Array.isArray(u)) {
    throw new CommandError('FailedToParse', 'Update argument must be either an object or an array');
  }
  return {
    q,
    u: u as Document | Document[],
    upsert: stmt.upsert === true,
    multi: stmt.multi === true,
    arrayFilters: stmt.arrayFilters as Document[] | undefined,
    hint: stmt.hint as string | Document | undefined,
    collation: stmt.collation as Document | undefined,
    variables: stmt.c as Record<string, unknown> | undefined,
  };
}

/**
 * Runs the statements of an insert/update/delete batch: a statement's CommandError becomes
 * its `writeErrors` entry (the command itself still succeeds), and an ordered batch stops at
 * the first one, as mongod does.
 */
export function runStatements(
  count: number,
  ordered: boolean,
  run: (index: number) => void,
): WriteErrorEntry[] {
  const writeErrors: WriteErrorEntry[] = [];
  for (let i = 0; i < count; i++) {
    try {
      run(i);
    } catch (err) {
      if (!(err instanceof CommandError)) throw err;
      writeErrors.push(writeErrorFrom(i, err));
      if (ordered) break;
    }
  }
  return writeErrors;
}

/** A write command's reply: its counters, then writeErrors when any, then ok. */
export function writeReply(fields: Document, writeErrors: WriteErrorEntry[]): Document {
  const reply: Document = { ...fields };
  if (writeErrors.length) reply.writeErrors = writeErrors;
  reply.ok = 1;
  return reply;
}
