import type { Document } from 'bson';
import { canonicalRank, compareDocuments } from '../bson/compare';
import { isDocument } from '../bson/paths';
import { CommandError } from '../errors';
import type { Collection, StoredRecord } from './collection';
import { Index, RID_HIGH, RID_LOW, type IndexKey } from './index';
import { hashValue } from './index-keys';
import { Bound, sameCollation } from './key-compare';

/** What a read asks of the planner. */
export interface PlanRequest {
  filter?: Document;
  sort?: Document;
  hint?: string | Document;
  min?: Document;
  max?: Document;
  collation?: Document;
}

export interface PlanSummary {
  stage: 'COLLSCAN' | 'IXSCAN' | 'EOF';
  indexName?: string;
  direction: 'forward' | 'backward';
}

/** A chosen access path: records stream lazily; `sortProvided` says the order already matches. */
export interface Plan {
  records: Iterable<StoredRecord>;
  sortProvided: boolean;
  summary: PlanSummary;
}

interface Side {
  v: unknown;
  incl: boolean;
}

/** Constraint on one field implied by the filter (a superset of what the filter accepts). */
interface FieldConstraint {
  points?: unknown[];
  low?: Side;
  high?: Side;
}

/** A key-space interval [low, high] of one index, both ends given as full keys. */
interface KeyInterval {
  low: IndexKey;
  high: IndexKey;
}

interface IndexPlan {
  index: Index;
  intervals: KeyInterval[];
  /** Fields bound to a single point in every interval (skippable when matching a sort). */
  singlePoint: boolean[];
  score: number;
}

const MAX_INTERVALS = 4096;

/** True for values usable as index bounds: no regexes, arrays, or null (which also matches missing). */
function boundable(v: unknown): boolean {
  if (v === null || v === undefined || Array.isArray(v)) return false;
  if (v instanceof RegExp) return false;
  const tag = (v as { _bsontype?: string })?._bsontype;
  if (tag === 'BSONRegExp' || tag === 'MinKey' || tag === 'MaxKey') return false;
  if (typeof v === 'number' && Number.isNaN(v)) return false;
  return true;
}

function hasString(v: unknown): boolean {
  if (typeof v === 'string') return true;
  if (Array.isArray(v)) return v.some(hasString);
  if (isDocument(v)) return Object.values(v).some(hasString);
  return false;
}

/** Per-field constraints implied by the top level of a filter (and nested $and). */
export function extractConstraints(
  filter: Document | undefined,
  out = new Map<string, FieldConstraint[]>(),
) {
  if (!filter) return out;
  for (const [field, cond] of Object.entries(filter)) {
    if (field === '$and' && Array.isArray(cond)) {
      for (const sub of cond) if (isDocument(sub)) extractConstraints(sub, out);
      continue;
    }
    if (field.startsWith('$')) continue;
    const add = (c: FieldConstraint) => {
      const list = out.get(field) ?? [];
      list.push(c);
      out.set(field, list);
    };
    if (isDocument(cond) && Object.keys(cond).some((k) => k.startsWith('$'))) {
      for (const [op, v] of Object.entries(cond)) {
        switch (op) {
          case '$eq':
            if (boundable(v) && !isOperatorDoc(v)) add({ points: [v] });
            break;
          case '$in':
            if (Array.isArray(v) && v.length > 0 && v.every((x) => boundable(x)))
              add({ points: v });
            break;
          case '$gt':
          case '$gte':
            if (boundable(v)) add({ low: { v, incl: op === '$gte' } });
            break;
          case '$lt':
          case '$lte':
            if (boundable(v)) add({ high: { v, incl: op === '$lte' } });
            break;
        }
      }
    } else if (boundable(cond)) {
      add({ points: [cond] });
    }
  }
  return out;
}

function isOperatorDoc(v: unknown): boolean {
  return isDocument(v) && Object.keys(v).some((k) => k.startsWith('$'));
}

/** Merges the constraints on one field for one index into a single usable constraint. */
function mergeFor(
  index: Index,
  fieldPos: number,
  list: FieldConstraint[],
  stringsOk: boolean,
): FieldConstraint | undefined {
  const cmp = index.compareValue;
  const usable = list.filter((c) => stringsOk || !hasString(c.points ?? [c.low?.v, c.high?.v]));
  const withPoints = usable.find((c) => c.points);
  if (withPoints) {
    // Any single implied point set is a safe superset; dedupe and order it.
    const sorted = [...withPoints.points!].sort(cmp);
    const pts: unknown[] = [];
    for (const p of sorted) if (!pts.length || cmp(pts[pts.length - 1], p) !== 0) pts.push(p);
    return { points: pts };
  }
  if (index.hashed[fieldPos]) return undefined;
  let low: Side | undefined;
  let high: Side | undefined;
  for (const c of usable) {
    if (c.low && (!low || cmp(c.low.v, low.v) > 0 || (cmp(c.low.v, low.v) === 0 && !c.low.incl)))
      low = c.low;
    if (
      c.high &&
      (!high || cmp(c.high.v, high.v) < 0 || (cmp(c.high.v, high.v) === 0 && !c.high.incl))
    )
      high = c.high;
  }
  // A multikey field can satisfy $gt and $lt with different elements: keep one side only.
  if (index.multikey && low && high) high = undefined;
  if (!low && !high) return undefined;
  // Type bracketing: a range only matches values of its bound's canonical type.
  const rank = canonicalRank((low ?? high)!.v);
  return {
    low: low ?? { v: new Bound(rank, -1), incl: true },
    high: high ?? { v: new Bound(rank, 1), incl: true },
  };
}

function fillTail(key: unknown[], index: Index, from: number, side: 'low' | 'high'): IndexKey {
  for (let i = from; i < index.fields.length; i++)
    key.push(side === 'low' ? index.lowFor(i) : index.highFor(i));
  key.push(side === 'low' ? RID_LOW : RID_HIGH);
  return key;
}

/** Turns value-space constraints into ordered key-space intervals for an index. */
function planIndex(
  index: Index,
  constraints: Map<string, FieldConstraint[]>,
  collation: Document | undefined,
): IndexPlan {
  const stringsOk = sameCollation(index.spec.collation as Document | undefined, collation);
  let prefixes: unknown[][] = [[]];
  let range: { low: Side; high: Side } | undefined;
  let score = 0;
  const singlePoint: boolean[] = [];
  for (let i = 0; i < index.fields.length; i++) {
    const list = constraints.get(index.fields[i]);
    const c = list && mergeFor(index, i, list, stringsOk);
    if (!c) break;
    if (c.points) {
      if (prefixes.length * c.points.length > MAX_INTERVALS) break;
      // Sparse indexes lack documents where the field is missing: only non-null points are safe.
      const pts = index.hashed[i] ? c.points.map((p) => hashValue(p)) : c.points;
      singlePoint[i] = pts.length === 1;
      const next: unknown[][] = [];
      for (const p of prefixes) for (const v of pts) next.push([...p, v]);
      prefixes = next;
      score += 2;
      continue;
    }
    range = { low: c.low!, high: c.high! };
    score += 1;
    break;
  }
  const intervals: KeyInterval[] = prefixes.map((prefix) => {
    const k = prefix.length;
    if (!range || k >= index.fields.length) {
      return {
        low: fillTail([...prefix], index, k, 'low'),
        high: fillTail([...prefix], index, k, 'high'),
      };
    }
    const [first, last] = index.dirs[k] > 0 ? [range.low, range.high] : [range.high, range.low];
    return {
      low: fillTail([...prefix, first.v], index, k + 1, first.incl ? 'low' : 'high'),
      high: fillTail([...prefix, last.v], index, k + 1, last.incl ? 'high' : 'low'),
    };
  });
  intervals.sort((a, b) => index.compareKeys(a.low, b.low));
  return { index, intervals, singlePoint, score };
}

/** Whether scanning this plan's intervals in order (or reverse) yields `sort`'s order. */
function sortDirection(
  plan: IndexPlan,
  sort: Document | undefined,
  collation: Document | undefined,
): 1 | -1 | 0 {
  if (!sort) return 0;
  const idx = plan.index;
  const sortFields = Object.keys(sort);
  if (sortFields.length === 0) return 0;
  if (idx.multikey || idx.isHashed || idx.isPartial || idx.sparse) return 0;
  if (!sameCollation(idx.spec.collation as Document | undefined, collation)) return 0;
  let s = 0;
  let direction: 1 | -1 | 0 = 0;
  for (let i = 0; i < idx.fields.length && s < sortFields.length; i++) {
    if (sortFields[s] === idx.fields[i]) {
      const sd = Number(sort[sortFields[s]]) < 0 ? -1 : 1;
      const d = (sd * idx.dirs[i]) as 1 | -1;
      if (direction !== 0 && d !== direction) return 0;
      direction = d;
      s++;
    } else if (!plan.singlePoint[i]) {
      return 0;
    }
  }
  return s === sortFields.length ? direction : 0;
}

function findHinted(coll: Collection, hint: string | Document): Index | undefined {
  if (typeof hint === 'string') return coll.indexes.find((i) => i.name === hint && !i.hidden);
  return coll.indexes.find(
    (i) => !i.hidden && compareDocuments(i.key, hint) === 0 && sameKeyOrder(i.key, hint),
  );
}

function sameKeyOrder(a: Document, b: Document): boolean {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i]);
}

function isNaturalHint(hint: string | Document | undefined): hint is Document {
  return isDocument(hint) && Object.keys(hint).length === 1 && '$natural' in hint;
}

const CHUNK = 256;

/**
 * Streams the records of key intervals in index order (or reverse). Reads in chunks and
 * re-seeks after each, so writes between getMores never break the iteration.
 */
function* scanIntervals(
  coll: Collection,
  index: Index,
  intervals: KeyInterval[],
  reverse: boolean,
): Generator<StoredRecord> {
  const seen = index.multikey ? new Set<number>() : undefined;
  const ordered = reverse ? [...intervals].reverse() : intervals;
  const cmp = index.compareKeys;
  for (const { low, high } of ordered) {
    let resumeAfter: IndexKey | undefined;
    for (;;) {
      const rids: number[] = [];
      let finished = true;
      const iter = reverse
        ? index.tree.entriesReversed(resumeAfter ?? high)
        : index.tree.entries(resumeAfter ?? low);
      for (const [key, rid] of iter) {
        if (resumeAfter && cmp(key, resumeAfter) === 0) continue;
        if (reverse ? cmp(key, low) < 0 : cmp(key, high) > 0) break;
        coll.metrics.keysExamined++;
        rids.push(rid);
        resumeAfter = key;
        if (rids.length >= CHUNK) {
          finished = false;
          break;
        }
      }
      for (const rid of rids) {
        if (seen) {
          if (seen.has(rid)) continue;
          seen.add(rid);
        }
        const rec = coll.record(rid);
        if (!rec) continue;
        coll.metrics.docsExamined++;
        yield rec;
      }
      if (finished) break;
    }
  }
}

/** Chooses an access path for a read: hint, $natural, best index, or a collection scan. */
export function planQuery(coll: Collection, req: PlanRequest): Plan {
  const sort = req.sort && Object.keys(req.sort).length ? req.sort : undefined;
  const hint =
    req.hint !== undefined &&
    !(isDocument(req.hint) && Object.keys(req.hint).length === 0) &&
    req.hint !== ''
      ? req.hint
      : undefined;
  const naturalSort =
    sort && Object.keys(sort).length === 1 && '$natural' in sort
      ? Number(sort.$natural) < 0
        ? -1
        : 1
      : 0;

  if (isNaturalHint(hint) || (naturalSort && hint === undefined)) {
    const dir = isNaturalHint(hint) ? (Number(hint.$natural) < 0 ? -1 : 1) : naturalSort;
    const effective = naturalSort || dir;
    return {
      records: coll.naturalRecords(effective as 1 | -1),
      sortProvided: Boolean(naturalSort) || !sort,
      summary: { stage: 'COLLSCAN', direction: effective < 0 ? 'backward' : 'forward' },
    };
  }

  const constraints = extractConstraints(req.filter);

  if (req.min || req.max) {
    if (hint === undefined) {
      throw new CommandError(
        51173 as number,
        'When using min()/max() a hint of which index to use must be provided',
      );
    }
  }

  let chosen: IndexPlan | undefined;
  if (hint !== undefined) {
    const index = findHinted(coll, hint);
    if (!index)
      throw new CommandError('BadValue', 'hint provided does not correspond to an existing index');
    chosen = planIndex(index, constraints, req.collation);
    if (req.min || req.max)
      chosen = { ...chosen, intervals: [minMaxInterval(index, req.min, req.max)], singlePoint: [] };
  } else {
    for (const index of coll.indexes) {
      if (index.hidden || index.isPartial) continue;
      const plan = planIndex(index, constraints, req.collation);
      if (plan.score === 0) continue;
      if (index.sparse && !sparseSafe(index, constraints)) continue;
      if (!chosen || better(plan, chosen, sort, req.collation)) chosen = plan;
    }
    if (!chosen && sort) {
      // Nothing narrows the scan, but an index that yields the sort order avoids a blocking sort.
      for (const index of coll.indexes) {
        if (index.hidden || index.isPartial || index.sparse) continue;
        const plan = planIndex(index, constraints, req.collation);
        if (sortDirection(plan, sort, req.collation) !== 0) {
          chosen = plan;
          break;
        }
      }
    }
  }

  if (!chosen) {
    return {
      records: coll.naturalRecords(1),
      sortProvided: !sort,
      summary: { stage: 'COLLSCAN', direction: 'forward' },
    };
  }
  const dir = sortDirection(chosen, sort, req.collation);
  const index = chosen.index;
  const intervals = chosen.intervals.filter((iv) => index.compareKeys(iv.low, iv.high) <= 0);
  return {
    records: scanIntervals(coll, index, intervals, dir < 0),
    sortProvided: !sort || dir !== 0,
    summary: {
      stage: intervals.length ? 'IXSCAN' : 'EOF',
      indexName: index.name,
      direction: dir < 0 ? 'backward' : 'forward',
    },
  };
}

function better(
  a: IndexPlan,
  b: IndexPlan,
  sort: Document | undefined,
  collation: Document | undefined,
): boolean {
  if (a.score !== b.score) return a.score > b.score;
  const sa = sortDirection(a, sort, collation) !== 0;
  const sb = sortDirection(b, sort, collation) !== 0;
  if (sa !== sb) return sa;
  if (a.index.unique !== b.index.unique) return a.index.unique || a.index.isIdIndex;
  return a.index.fields.length < b.index.fields.length;
}

/** A sparse index lacks documents missing its fields: usable only when the predicate excludes null. */
function sparseSafe(index: Index, constraints: Map<string, FieldConstraint[]>): boolean {
  const list = constraints.get(index.fields[0]);
  return Boolean(list?.length);
}

/** min (inclusive) / max (exclusive) bounds on the hinted index, in key-pattern field order. */
function minMaxInterval(
  index: Index,
  min: Document | undefined,
  max: Document | undefined,
): KeyInterval {
  const check = (d: Document | undefined, which: string) => {
    if (
      d &&
      !sameKeyOrder(
        Object.fromEntries(Object.keys(d).map((k) => [k, 1])),
        Object.fromEntries(index.fields.map((k) => [k, 1])),
      )
    ) {
      throw new CommandError(
        51174 as number,
        `The index chosen is not equal to the ${which}() bounds`,
      );
    }
  };
  check(min, 'min');
  check(max, 'max');
  const low = min ? [...index.fields.map((f) => min[f]), RID_LOW] : fillTail([], index, 0, 'low');
  const high = max ? [...index.fields.map((f) => max[f]), RID_LOW] : fillTail([], index, 0, 'high');
  return { low, high };
}
