import type { Document } from 'bson';
import { CommandError } from '../../errors';
import { canonicalRank, compareValues } from '../../bson/compare';
import { groupAccumulatorFactory, type GroupAccumulator } from '../accumulators';
import { makeContext } from '../expressions';
import { asDouble, double, int32, numericKind } from '../operators/numeric';
import { isDocument, typeName } from '../operators/types';
import { groupKey } from './group-key';
import type { StageBuilder, StageContext, StageFn } from './types';

type Factories = [string, () => GroupAccumulator][];

function parseOutputs(spec: Document, skip: string[]): Factories {
  const out: Factories = [];
  for (const [field, acc] of Object.entries(spec)) {
    if (skip.includes(field)) continue;
    if (field.includes('.')) {
      throw new CommandError(40235, `The field name '${field}' cannot contain '.'`);
    }
    if (field.startsWith('$')) {
      throw new CommandError(40236, `The field name '${field}' cannot be an operator name`);
    }
    out.push([field, groupAccumulatorFactory(field, acc)]);
  }
  return out;
}

/** Groups documents by an _id expression; groups are emitted in first-seen order. */
function groupBy(ctx: StageContext, idExpr: unknown, outputs: Factories) {
  return function* (input: Iterable<Document>): Iterable<Document> {
    const groups = new Map<string, { id: unknown; accs: GroupAccumulator[] }>();
    for (const doc of input) {
      const ec = makeContext(doc, { ...ctx.vars, ROOT: doc, CURRENT: doc });
      let id = ec.evaluate(idExpr);
      if (id === undefined) id = null;
      const key = groupKey(id);
      let g = groups.get(key);
      if (!g) {
        g = { id, accs: outputs.map(([, f]) => f()) };
        groups.set(key, g);
      }
      for (const acc of g.accs) acc.process(ec);
    }
    for (const g of groups.values()) {
      const out: Document = { _id: g.id };
      outputs.forEach(([field], i) => (out[field] = g.accs[i].result()));
      yield out;
    }
  };
}

export const group: StageBuilder = (spec, ctx) => {
  if (!isDocument(spec))
    throw new CommandError(15947, "a group's fields must be specified in an object");
  if (!('_id' in spec)) throw new CommandError(15955, 'a group specification must include an _id');
  return groupBy(ctx, spec._id, parseOutputs(spec, ['_id']));
};

function requireGroupByExpression(stage: string, v: unknown): void {
  const ok =
    (typeof v === 'string' && v.startsWith('$')) || (isDocument(v) && Object.keys(v).length > 0);
  if (!ok) {
    throw new CommandError(
      stage === '$bucket' ? 40202 : 40239,
      `The $${stage.slice(1)} 'groupBy' field must be defined as a $-prefixed path or an expression object, but found: ${JSON.stringify(v)}.`,
    );
  }
}

export const bucket: StageBuilder = (spec, ctx) => {
  if (!isDocument(spec))
    throw new CommandError(
      40201,
      `Argument to $bucket stage must be an object, but found type: ${typeName(spec)}.`,
    );
  for (const k of Object.keys(spec)) {
    if (!['groupBy', 'boundaries', 'default', 'output'].includes(k)) {
      throw new CommandError(40197, `Unrecognized option to $bucket: ${k}.`);
    }
  }
  if (!('groupBy' in spec) || !('boundaries' in spec)) {
    throw new CommandError(40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.");
  }
  requireGroupByExpression('$bucket', spec.groupBy);
  const bounds = spec.boundaries;
  if (!Array.isArray(bounds) || bounds.length < 2) {
    throw new CommandError(
      40192,
      `The $bucket 'boundaries' field must be an array of values, but found type: ${typeName(bounds)}.`,
    );
  }
  for (let i = 1; i < bounds.length; i++) {
    if (canonicalRank(bounds[i]) !== canonicalRank(bounds[0])) {
      throw new CommandError(
        40193,
        `All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types ${typeName(bounds[0])} and ${typeName(bounds[i])}.`,
      );
    }
    if (compareValues(bounds[i - 1], bounds[i]) >= 0) {
      throw new CommandError(
        40194,
        "The 'boundaries' option to $bucket must be sorted in ascending order, but elements " +
          (i - 1) +
          ' and ' +
          i +
          ' are not in ascending order.',
      );
    }
  }
  const hasDefault = 'default' in spec;
  if (
    hasDefault &&
    compareValues(spec.default, bounds[0]) >= 0 &&
    compareValues(spec.default, bounds[bounds.length - 1]) < 0 &&
    canonicalRank(spec.default) === canonicalRank(bounds[0])
  ) {
    throw new CommandError(
      40199,
      "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary.",
    );
  }
  const outputSpec = isDocument(spec.output) ? spec.output : { count: { $sum: 1 } };
  const outputs = parseOutputs(outputSpec, []);
  // $bucket is $group on the containing lower boundary followed by $sort on _id.
  const byBucket: StageFn = function* (input) {
    const withBucket = function* (): Iterable<Document> {
      for (const doc of input) {
        const ec = makeContext(doc, { ...ctx.vars, ROOT: doc, CURRENT: doc });
        const v = ec.evaluate(spec.groupBy);
        let idx = -1;
        if (canonicalRank(v) === canonicalRank(bounds[0])) {
          for (let i = 0; i < bounds.length - 1; i++) {
            if (compareValues(v, bounds[i]) >= 0 && compareValues(v, bounds[i + 1]) < 0) idx = i;
          }
        }
        if (idx < 0 && !hasDefault) {
          throw new CommandError(
            40066,
            '$switch could not find a matching branch for an input, and no default was specified.',
          );
        }
        yield { doc, id: idx < 0 ? spec.default : bounds[idx] } as unknown as Document;
      }
    };
    const groups = new Map<string, { id: unknown; accs: GroupAccumulator[] }>();
    for (const { doc, id } of withBucket() as Iterable<{ doc: Document; id: unknown }>) {
      const key = groupKey(id);
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { id, accs: outputs.map(([, f]) => f()) }));
      const ec = makeContext(doc, { ...ctx.vars, ROOT: doc, CURRENT: doc });
      for (const acc of g.accs) acc.process(ec);
    }
    const out = [...groups.values()].sort((a, b) => compareValues(a.id, b.id));
    for (const g of out) {
      const d: Document = { _id: g.id };
      outputs.forEach(([field], i) => (d[field] = g.accs[i].result()));
      yield d;
    }
  };
  return byBucket;
};

/** Preferred-number series for $bucketAuto granularity. */
const SERIES: Record<string, number[]> = {
  R5: [1.0, 1.6, 2.5, 4.0, 6.3],
  R10: [1.0, 1.25, 1.6, 2.0, 2.5, 3.15, 4.0, 5.0, 6.3, 8.0],
  R20: [
    1.0, 1.12, 1.25, 1.4, 1.6, 1.8, 2.0, 2.24, 2.5, 2.8, 3.15, 3.55, 4.0, 4.5, 5.0, 5.6, 6.3, 7.1,
    8.0, 9.0,
  ],
  E6: [1.0, 1.5, 2.2, 3.3, 4.7, 6.8],
  E12: [1.0, 1.2, 1.5, 1.8, 2.2, 2.7, 3.3, 3.9, 4.7, 5.6, 6.8, 8.2],
  '1-2-5': [1, 2, 5],
};

/** Smallest series value >= x (roundUp) or largest <= x (roundDown); strict versions for edges. */
function granular(g: string, x: number, up: boolean): number {
  if (x === 0) return 0;
  if (g === 'POWERSOF2') {
    const p = up ? 2 ** Math.ceil(Math.log2(x)) : 2 ** Math.floor(Math.log2(x));
    if (up && p === x) return x * 2;
    if (!up && p === x) return x / 2;
    return p;
  }
  const series = SERIES[g];
  const mag = 10 ** Math.floor(Math.log10(x));
  const candidates: number[] = [];
  for (let k = -1; k <= 1; k++) for (const s of series) candidates.push(s * mag * 10 ** k);
  candidates.push(series[0] * mag * 100);
  const eps = 1e-12;
  return up
    ? candidates.filter((c) => c > x * (1 + eps)).reduce((a, b) => Math.min(a, b), Infinity)
    : candidates.filter((c) => c < x * (1 - eps)).reduce((a, b) => Math.max(a, b), -Infinity);
}

export const bucketAuto: StageBuilder = (spec, ctx) => {
  if (!isDocument(spec))
    throw new CommandError(
      40240,
      `The argument to $bucketAuto must be an object, but found type: ${typeName(spec)}.`,
    );
  for (const k of Object.keys(spec)) {
    if (!['groupBy', 'buckets', 'output', 'granularity'].includes(k)) {
      throw new CommandError(40245, `Unrecognized option to $bucketAuto: ${k}.`);
    }
  }
  if (!('groupBy' in spec) || !('buckets' in spec)) {
    throw new CommandError(40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified");
  }
  requireGroupByExpression('$bucketAuto', spec.groupBy);
  if (
    !numericKind(spec.buckets) ||
    !Number.isInteger(asDouble(spec.buckets)) ||
    asDouble(spec.buckets) <= 0
  ) {
    throw new CommandError(
      40243,
      `The $bucketAuto 'buckets' field must be greater than 0, but found: ${JSON.stringify(spec.buckets)}`,
    );
  }
  const nBuckets = asDouble(spec.buckets);
  const granularity = spec.granularity as string | undefined;
  if (granularity !== undefined && granularity !== 'POWERSOF2' && !SERIES[granularity]) {
    throw new CommandError(40257, `Rounding granularity not recognized: ${String(granularity)}`);
  }
  const outputs = parseOutputs(isDocument(spec.output) ? spec.output : { count: { $sum: 1 } }, []);
  return function* (input) {
    const items: { key: unknown; doc: Document }[] = [];
    for (const doc of input) {
      const ec = makeContext(doc, { ...ctx.vars, ROOT: doc, CURRENT: doc });
      const key = ec.evaluate(spec.groupBy);
      if (granularity && !(numericKind(key) && asDouble(key) >= 0)) {
        throw new CommandError(
          40258,
          `$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a value with type: ${typeName(key)}`,
        );
      }
      items.push({ key: key === undefined ? null : key, doc });
    }
    if (items.length === 0) return;
    items.sort((a, b) => compareValues(a.key, b.key));
    const perBucket = Math.ceil(items.length / nBuckets);
    // Buckets hold ~perBucket items, extended so that equal keys never straddle a boundary.
    const buckets: { min: unknown; max: unknown; docs: Document[] }[] = [];
    let i = 0;
    while (i < items.length) {
      let end = Math.min(i + perBucket, items.length);
      while (end < items.length && compareValues(items[end].key, items[end - 1].key) === 0) end++;
      if (granularity && buckets.length > 0) {
        // With granularity a bucket may absorb items below the previous rounded max.
        const prevMax = buckets[buckets.length - 1].max;
        while (i < items.length && compareValues(items[i].key, prevMax) < 0) {
          buckets[buckets.length - 1].docs.push(items[i].doc);
          i++;
        }
        if (i >= items.length) break;
        end = Math.max(end, i + 1);
      }
      const slice = items.slice(i, end);
      let min = slice[0].key;
      let max = end < items.length ? items[end].key : slice[slice.length - 1].key;
      if (granularity) {
        min = buckets.length
          ? buckets[buckets.length - 1].max
          : double(granular(granularity, asDouble(min), false) || 0);
        max = double(
          granular(
            granularity,
            asDouble(end < items.length ? items[end - 1].key : slice[slice.length - 1].key),
            true,
          ),
        );
        if (buckets.length === 0 && asDouble(min) === 0) min = double(0);
      }
      buckets.push({ min, max, docs: slice.map((s) => s.doc) });
      i = end;
    }
    for (const b of buckets) {
      const accs = outputs.map(([, f]) => f());
      for (const doc of b.docs) {
        const ec = makeContext(doc, { ...ctx.vars, ROOT: doc, CURRENT: doc });
        for (const acc of accs) acc.process(ec);
      }
      const d: Document = { _id: { min: b.min, max: b.max } };
      outputs.forEach(([field], k) => (d[field] = accs[k].result()));
      yield d;
    }
  };
};

export const sortByCount: StageBuilder = (spec, ctx) => {
  const ok =
    (typeof spec === 'string' && spec.startsWith('$')) ||
    (isDocument(spec) && Object.keys(spec)[0]?.startsWith('$'));
  if (!ok) {
    throw new CommandError(
      40148,
      '$sortByCount requires a $-prefixed path or an expression object',
    );
  }
  const grouped = groupBy(ctx, spec, [
    [
      'count',
      () => {
        let n = 0;
        return { process: () => void n++, result: () => int32(n) };
      },
    ],
  ]);
  return (input) => [...grouped(input)].sort((a, b) => compareValues(b.count, a.count));
};
