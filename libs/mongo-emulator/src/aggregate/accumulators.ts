import type { Document } from 'bson';
import { CommandError } from '../errors';
import { compareValues, valuesEqual } from '../bson/compare';
import { compileSort } from '../query/sort';
import { NumericAccumulator } from './operators/arithmetic';
import { decDiv, double, fromDec, numericKind, toDec, asDouble } from './operators/numeric';
import { mergeInto } from './operators/object';
import { isDocument, isNullish, typeName, type EvalContext } from './operators/types';

/** Reduces a stream of already-evaluated values. */
export interface ValueReducer {
  add(v: unknown): void;
  result(): unknown;
}

/** A $group accumulator: sees each document's context and evaluates its own argument. */
export interface GroupAccumulator {
  process(ctx: EvalContext): void;
  result(): unknown;
}

class Sum implements ValueReducer {
  private acc = new NumericAccumulator('add');
  add(v: unknown): void {
    if (numericKind(v)) this.acc.push(v); // non-numeric values are ignored by $sum
  }
  result(): unknown {
    return this.acc.result();
  }
}

class Avg implements ValueReducer {
  private acc = new NumericAccumulator('add');
  private n = 0;
  add(v: unknown): void {
    if (!numericKind(v)) return;
    this.acc.push(v);
    this.n++;
  }
  result(): unknown {
    if (this.n === 0) return null;
    const total = this.acc.result();
    // $avg returns a double unless a decimal was involved.
    if (numericKind(total) === 'decimal') {
      return fromDec(decDiv(toDec(total), { kind: 'finite', coef: BigInt(this.n), exp: 0 }));
    }
    return double(asDouble(total) / this.n);
  }
}

class MinMax implements ValueReducer {
  private best: unknown = undefined;
  constructor(private readonly sign: 1 | -1) {}
  add(v: unknown): void {
    if (isNullish(v)) return; // $min/$max ignore null and missing
    if (this.best === undefined || compareValues(v, this.best) * this.sign > 0) this.best = v;
  }
  result(): unknown {
    return this.best === undefined ? null : this.best;
  }
}

class StdDev implements ValueReducer {
  private n = 0;
  private mean = 0;
  private m2 = 0;
  constructor(private readonly sample: boolean) {}
  add(v: unknown): void {
    if (!numericKind(v)) return;
    // Welford's online algorithm, as MongoDB uses.
    const x = asDouble(v);
    this.n++;
    const delta = x - this.mean;
    this.mean += delta / this.n;
    this.m2 += delta * (x - this.mean);
  }
  result(): unknown {
    const d = this.sample ? this.n - 1 : this.n;
    if (d <= 0 || this.n === 0) return null;
    return double(Math.sqrt(this.m2 / d));
  }
}

class FirstLast implements ValueReducer {
  private seen = false;
  private value: unknown = null;
  constructor(private readonly last: boolean) {}
  add(v: unknown): void {
    if (this.seen && !this.last) return;
    this.seen = true;
    this.value = v === undefined ? null : v;
  }
  result(): unknown {
    return this.value;
  }
}

class Push implements ValueReducer {
  private values: unknown[] = [];
  constructor(private readonly unique: boolean) {}
  add(v: unknown): void {
    if (v === undefined) return; // missing values are not pushed
    if (this.unique && this.values.some((x) => valuesEqual(x, v))) return;
    this.values.push(v);
  }
  result(): unknown {
    return this.values;
  }
}

class MergeObjects implements ValueReducer {
  private out: Document = {};
  add(v: unknown): void {
    mergeInto(this.out, v);
  }
  result(): unknown {
    return this.out;
  }
}

const VALUE_REDUCERS: Record<string, () => ValueReducer> = {
  $sum: () => new Sum(),
  $avg: () => new Avg(),
  $min: () => new MinMax(-1),
  $max: () => new MinMax(1),
  $first: () => new FirstLast(false),
  $last: () => new FirstLast(true),
  $push: () => new Push(false),
  $addToSet: () => new Push(true),
  $mergeObjects: () => new MergeObjects(),
  $stdDevPop: () => new StdDev(false),
  $stdDevSamp: () => new StdDev(true),
};

/** Operators usable both as accumulators and as array-reducing expressions. */
export const EXPRESSION_REDUCERS = ['$sum', '$avg', '$min', '$max', '$stdDevPop', '$stdDevSamp'];

export function makeValueReducer(op: string): ValueReducer | undefined {
  return VALUE_REDUCERS[op]?.();
}

/** Evaluates an `n` argument of the *N accumulators (must be a positive integer). */
function positiveN(op: string, ctx: EvalContext, expr: unknown): number {
  const n = ctx.evaluate(expr);
  if (!numericKind(n) || !Number.isInteger(asDouble(n))) {
    throw new CommandError(
      5787902,
      `Value for 'n' must be of integral type, but found ${typeName(n)}`,
    );
  }
  if (asDouble(n) <= 0)
    throw new CommandError(5787908, "'n' must be greater than 0, found " + asDouble(n));
  return asDouble(n);
}

/**
 * $top/$bottom/$topN/$bottomN: keep the output of the documents that sort first/last by
 * `sortBy`; ties keep arrival order.
 */
class TopBottom implements GroupAccumulator {
  private items: { doc: Document; out: unknown }[] = [];
  private n = 1;
  private readonly cmp: (a: Document, b: Document) => number;
  constructor(
    private readonly op: string,
    private readonly spec: Document,
  ) {
    if (!isDocument(spec.sortBy)) {
      throw new CommandError(5788005, `${op} requires a sortBy argument`);
    }
    if (!('output' in spec)) throw new CommandError(5788004, `${op} requires an output argument`);
    const base = compileSort(spec.sortBy);
    this.cmp = op.startsWith('$top') ? base : (a, b) => -base(a, b);
  }
  process(ctx: EvalContext): void {
    if (this.op.endsWith('N')) this.n = positiveN(this.op, ctx, this.spec.n);
    const out = ctx.evaluate(this.spec.output);
    const doc = ctx.root;
    // Insert after all items that sort before or equal (stable), keep the best n.
    let i = this.items.length;
    while (i > 0 && this.cmp(doc, this.items[i - 1].doc) < 0) i--;
    this.items.splice(i, 0, { doc, out: out === undefined ? null : out });
    if (this.items.length > this.n) this.items.length = this.n;
  }
  result(): unknown {
    const outs = this.items.map((x) => x.out);
    // $bottomN returns in sort order too: reverse the "best first" list.
    const ordered = this.op.startsWith('$bottom') ? outs.reverse() : outs;
    return this.op.endsWith('N') ? ordered : (ordered[0] ?? null);
  }
}

/** $firstN/$lastN/$maxN/$minN {input, n}. */
class NAccumulator implements GroupAccumulator {
  private values: unknown[] = [];
  private n = 1;
  constructor(
    private readonly op: string,
    private readonly spec: Document,
  ) {
    if (!isDocument(spec) || !('input' in spec) || !('n' in spec)) {
      throw new CommandError(5787901, `${op} requires 'input' and 'n' fields`);
    }
  }
  process(ctx: EvalContext): void {
    this.n = positiveN(this.op, ctx, this.spec.n);
    const v = ctx.evaluate(this.spec.input);
    if (this.op === '$maxN' || this.op === '$minN') {
      if (isNullish(v)) return;
      this.values.push(v);
      const sign = this.op === '$maxN' ? -1 : 1;
      this.values.sort((a, b) => compareValues(a, b) * sign);
      if (this.values.length > this.n) this.values.length = this.n;
      return;
    }
    const value = v === undefined ? null : v;
    if (this.op === '$firstN') {
      if (this.values.length < this.n) this.values.push(value);
    } else {
      this.values.push(value);
      if (this.values.length > this.n) this.values.shift();
    }
  }
  result(): unknown {
    return this.values;
  }
}

/** Builds a factory for one `{field: {$op: arg}}` entry of $group (or $bucket output). */
export function groupAccumulatorFactory(field: string, spec: unknown): () => GroupAccumulator {
  if (!isDocument(spec) || Object.keys(spec).length !== 1) {
    throw new CommandError(40238, `The field '${field}' must specify one accumulator`);
  }
  const op = Object.keys(spec)[0];
  const arg = spec[op];
  if (op === '$count') {
    if (!isDocument(arg) || Object.keys(arg).length !== 0) {
      throw new CommandError(40238, '$count takes no arguments, i.e. $count:{}');
    }
    return () => {
      const sum = new Sum();
      return { process: () => sum.add(1), result: () => sum.result() };
    };
  }
  if (['$top', '$bottom', '$topN', '$bottomN'].includes(op)) {
    if (!isDocument(arg))
      throw new CommandError(5788001, `specification must be an object; found ${typeName(arg)}`);
    return () => new TopBottom(op, arg);
  }
  if (['$firstN', '$lastN', '$maxN', '$minN'].includes(op)) {
    return () => new NAccumulator(op, arg as Document);
  }
  if (!VALUE_REDUCERS[op]) throw new CommandError(15952, `unknown group operator '${op}'`);
  if (Array.isArray(arg)) {
    throw new CommandError(40237, `The ${op} accumulator is a unary operator`);
  }
  return () => {
    const reducer = VALUE_REDUCERS[op]();
    return { process: (ctx) => reducer.add(ctx.evaluate(arg)), result: () => reducer.result() };
  };
}
