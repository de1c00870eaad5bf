import type { Document } from 'bson';
import { compileFilter } from '../query/matcher';
import { compileSort } from '../query/sort';
import type { Collection, StoredRecord } from './collection';
import { planQuery, type PlanRequest, type PlanSummary } from './planner';

export interface QueryRequest extends PlanRequest {
  skip?: number;
  /** 0 or undefined: no limit. */
  limit?: number;
  /** `let` variables for $expr. */
  variables?: Record<string, unknown>;
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
  let records: Iterable<StoredRecord> = match ? filterRecords(plan.records, match) : plan.records;
  if (!plan.sortProvided && req.sort) records = sortRecords(records, req.sort, req.collation);
  if (req.skip || req.limit) records = sliceRecords(records, req.skip ?? 0, req.limit ?? 0);
  return { records, summary: plan.summary };
}

/** Documents of a query, as a lazy iterator. */
export function* queryDocuments(coll: Collection, req: QueryRequest): Generator<Document> {
  for (const rec of executeQuery(coll, req).records) yield rec.doc;
}

function* filterRecords(
  records: Iterable<StoredRecord>,
  match: (doc: Document) => boolean,
): Generator<StoredRecord> {
  for (const rec of records) if (match(rec.doc)) yield rec;
}

function* sortRecords(
  records: Iterable<StoredRecord>,
  sort: Document,
  collation?: Document,
): Generator<StoredRecord> {
  const cmp = compileSort(sort, { collation });
  const all = [...records];
  // Array.prototype.sort is stable: ties keep the access path's order, as mongod's sort does.
  all.sort((a, b) => cmp(a.doc, b.doc));
  yield* all;
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
  if (req.sort && Object.keys(req.sort).length) {
    const cmp = compileSort(req.sort, { collation: req.collation });
    out = [...out].sort(cmp);
  }
  const skip = req.skip ?? 0;
  const end = req.limit ? skip + req.limit : out.length;
  yield* out.slice(skip, end);
}
