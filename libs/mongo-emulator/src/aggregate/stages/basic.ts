import type { Document } from 'bson';
import { CommandError } from '../../errors';
import { compileFilter } from '../../query/matcher';
import { compileSort } from '../../query/sort';
import { asDouble, int32, numericKind } from '../operators/numeric';
import { isDocument } from '../operators/types';
import type { StageBuilder } from './types';

export const match: StageBuilder = (spec, ctx) => {
  if (!isDocument(spec))
    throw new CommandError(15959, 'the match filter must be an expression in an object');
  const pred = compileFilter(spec, { variables: ctx.vars });
  return function* (input) {
    for (const doc of input) if (pred(doc)) yield doc;
  };
};

function nonNegativeInteger(v: unknown, what: string, codes: [number, number]): number {
  if (!numericKind(v)) throw new CommandError(codes[0], `${what} must be specified as a number`);
  const n = asDouble(v);
  if (!Number.isInteger(n))
    throw new CommandError(codes[0], `${what} must be specified as an integer`);
  if (n < 0) throw new CommandError(codes[1], `${what} cannot be negative`);
  return n;
}

export const limit: StageBuilder = (spec) => {
  if (!numericKind(spec)) throw new CommandError(15957, 'the limit must be specified as a number');
  const n = asDouble(spec);
  if (!Number.isInteger(n))
    throw new CommandError(
      2107201,
      `invalid argument to $limit stage: Expected an integer: $limit: ${n}`,
    );
  if (n <= 0) throw new CommandError(15958, 'the limit must be positive');
  return function* (input) {
    let i = 0;
    for (const doc of input) {
      yield doc;
      if (++i >= n) return; // stop pulling: upstream stays lazy
    }
  };
};

export const skip: StageBuilder = (spec) => {
  if (!numericKind(spec)) throw new CommandError(15972, 'Argument to $skip must be a number.');
  const n = nonNegativeInteger(spec, 'the number to skip', [5107200, 15956]);
  return function* (input) {
    let i = 0;
    for (const doc of input) if (i++ >= n) yield doc;
  };
};

export const sort: StageBuilder = (spec) => {
  if (!isDocument(spec))
    throw new CommandError(15973, 'the $sort key specification must be an object');
  if (Object.keys(spec).length === 0)
    throw new CommandError(15976, '$sort stage must have at least one sort key');
  for (const [k, v] of Object.entries(spec)) {
    const ok = (numericKind(v) && [1, -1].includes(asDouble(v))) || (isDocument(v) && '$meta' in v);
    if (!ok) {
      throw new CommandError(
        15975,
        `$sort key ordering must be 1 (for ascending) or -1 (for descending)`,
        {
          extra: { field: k },
        },
      );
    }
  }
  const cmp = compileSort(spec);
  return (input) => [...input].sort(cmp); // Array.prototype.sort is stable
};

/** The validated `size` of a `$sample` stage's specification (the server's errors otherwise). */
export function sampleSize(spec: unknown): number {
  if (!isDocument(spec))
    throw new CommandError(28745, 'the $sample stage specification must be an object');
  for (const k of Object.keys(spec)) {
    if (k !== 'size') throw new CommandError(28748, `unrecognized option to $sample: ${k}`);
  }
  if (!('size' in spec)) throw new CommandError(28749, '$sample stage must specify a size');
  if (!numericKind(spec.size))
    throw new CommandError(28746, 'size argument to $sample must be a number');
  const size = asDouble(spec.size);
  if (size < 0) throw new CommandError(28747, 'size argument to $sample must not be negative');
  return size;
}

export const sample: StageBuilder = (spec) => {
  const size = sampleSize(spec);
  return (input) => {
    const all = [...input];
    // Partial Fisher-Yates: the first `size` slots become a uniform sample without repeats.
    const n = Math.min(Math.trunc(size), all.length);
    for (let i = 0; i < n; i++) {
      const j = i + Math.floor(Math.random() * (all.length - i));
      [all[i], all[j]] = [all[j], all[i]];
    }
    return all.slice(0, n);
  };
};

export const count: StageBuilder = (spec) => {
  if (typeof spec !== 'string' || spec === '') {
    throw new CommandError(40156, 'the count field must be a non-empty string');
  }
  if (spec.startsWith('$'))
    throw new CommandError(40158, 'the count field cannot be a $-prefixed path');
  if (spec.includes('.')) throw new CommandError(40160, "the count field cannot contain '.'");
  return function* (input) {
    let n = 0;
    for (const _ of input) n++;
    if (n > 0) yield { [spec]: int32(n) } as Document;
  };
};
