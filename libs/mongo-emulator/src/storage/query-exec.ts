import type { Document } from 'bson';
import { decodeFields, FieldSet, filterFields } from '../bson/partial';
import { compileFilter } from '../query/matcher';
import { compileSort } from '../query/sort';
import type { Collection } from './collection';
import { docOf, rememberDoc, type StoredRecord } from './record';
import { planQuery, type PlanRequest, type PlanSummary } from './planner';

export interface QueryRequest extends PlanRequest {
  skip?: number;
  /** 0 or undefined: no limit. */
  limit?: number;
  /** `let` variables for $expr. */
  variables?: Record<string, unknown>;
  /**
   * Shard filtering: documents outside the chunks the shard owns are dropped after the filter
   * and before sort/skip/limit (a read routed by mongos; see server/shard-filter.ts).
   */
  ownership?: (doc: Document) => boolean;
}

export interface QueryResult {
  records: Iterable<StoredRecord>;
  summary: PlanSummary;
}

/**
 * Runs a query over a collection: planner access path, residual filter, then a blocking
 * in-memory sort only when the access path does not already produce the order. Everything
 * else streams, so a cursor over a million documents holds one batch at a time.
 */
export function executeQuery(coll: Collection, req: QueryRequest): QueryResult {
  const plan = planQuery(coll, req);
  const filter = req.filter && Object.keys(req.filter).length ? req.filter : undefined;
  const match = filter
    ? compileFilter(filter, { collation: req.collation, variables: req.variables })
    : undefined;
  let records: Iterable<StoredRecord> = match
    ? filterRecords(plan.records, match, filterFieldSet(filter!))
    : plan.records;
  if (req.ownership) records = filterRecords(records, req.ownership, undefined);
  if (!plan.sortProvided && req.sort) records = sortRecords(records, req.sort, req.collation);
  if (req.skip || req.limit) records = sliceRecords(records, req.skip ?? 0, req.limit ?? 0);
  return { records, summary: plan.summary };
}

/** Documents of a query, as a lazy iterator. */
export function* queryDocuments(coll: Collection, req: QueryRequest): Generator<Document> {
  for (const rec of executeQuery(coll, req).records) yield rec.doc;
}

/**
 * The same query's documents as their stored bytes, never decoded (a filter still reads the
 * fields it tests): for a cursor whose replies go straight to the wire.
 */
export function queryRawDocuments(coll: Collection, req: QueryRequest): Iterable<StoredRecord> {
  return executeQuery(coll, req).records;
}

/** The top-level fields a filter reads, compiled for partial decoding (undefined: all). */
export function filterFieldSet(filter: Document): FieldSet | undefined {
  const fields = filterFields(filter);
  return fields && new FieldSet(fields);
}

/**
 * The records `match` accepts. With `fields`, each record is tested on just those top-level
 * fields, decoded from its bytes; the consumer decodes a match in full. Without, the whole
 * decoding stays in the record cache, so the consumer's `rec.doc` does not decode again.
 */
function* filterRecords(
  records: Iterable<StoredRecord>,
  match: (doc: Document) => boolean,
  fields: FieldSet | undefined,
): Generator<StoredRecord> {
  if (fields) {
    for (const rec of records) if (match(decodeFields(rec.bytes, fields))) yield rec;
  } else {
    for (const rec of records) if (match(docOf(rec))) yield rec;
  }
}

function* sortRecords(
  records: Iterable<StoredRecord>,
  sort: Document,
  collation?: Document,
): Generator<StoredRecord> {
  const cmp = compileSort(sort, { collation });
  // Each record is decoded once (not once per comparison).
  const all = Array.from(records, (rec) => ({ rec, doc: docOf(rec) }));
  // Array.prototype.sort is stable: ties keep the access path's order, as mongod's sort does.
  all.sort((a, b) => cmp(a.doc, b.doc));
  for (const { rec, doc } of all) {
    rememberDoc(rec, doc);
    yield rec;
  }
}

function* sliceRecords(
  records: Iterable<StoredRecord>,
  skip: number,
  limit: number,
): Generator<StoredRecord> {
  let skipped = 0;
  let taken = 0;
  if (limit > 0 && taken >= limit) return;
  for (const rec of records) {
    if (skipped < skip) {
      skipped++;
      continue;
    }
    yield rec;
    taken++;
    if (limit > 0 && taken >= limit) return;
  }
}

/**
 * The same query (filter, sort, skip, limit) over documents held in memory, such as a
 * collection as of the majority-committed snapshot. There is no index here: `hint`, `min` and
 * `max` are not applied.
 */
export function* queryDocumentArray(docs: Document[], req: QueryRequest): Generator<Document> {
  const filter = req.filter && Object.keys(req.filter).length ? req.filter : undefined;
  const match = filter
    ? compileFilter(filter, { collation: req.collation, variables: req.variables })
    : undefined;
  let out = match ? docs.filter((d) => match(d)) : docs;
  if (req.ownership) out = out.filter(req.ownership);
  if (req.sort && Object.keys(req.sort).length) {
    const cmp = compileSort(req.sort, { collation: req.collation });
    out = [...out].sort(cmp);
  }
  const skip = req.skip ?? 0;
  const end = req.limit ? skip + req.limit : out.length;
  yield* out.slice(skip, end);
}
