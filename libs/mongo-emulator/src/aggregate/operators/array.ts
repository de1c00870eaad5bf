import { CommandError } from '../../errors';
import { compareValues, valuesEqual } from '../../bson/compare';
import { asDouble, fitsInt32, int32, numericKind } from './numeric';
import {
  evalArgs,
  isDocument,
  isNullish,
  typeName,
  type EvalContext,
  type OperatorTable,
} from './types';

function requireArray(v: unknown, code: number, msg: string): unknown[] {
  if (!Array.isArray(v)) throw new CommandError(code, `${msg}${typeName(v)}`);
  return v;
}

/** An integral numeric argument that must fit in 32 bits (e.g. $arrayElemAt's index). */
function int32Arg(v: unknown, numCode: number, intCode: number, msg: string): number {
  if (!numericKind(v))
    throw new CommandError(numCode, `${msg} must be a numeric value, but is ${typeName(v)}`);
  const n = asDouble(v);
  if (!Number.isInteger(n) || !fitsInt32(BigInt(n))) {
    throw new CommandError(intCode, `${msg} must be representable as a 32-bit integer: ${n}`);
  }
  return n;
}

function elemAt(name: string, arr: unknown, idx: unknown, arity: number): unknown {
  if (isNullish(arr) || isNullish(idx)) return null;
  requireArray(
    arr,
    28689,
    `${name}'s ${arity === 1 ? 'argument' : 'first argument'} must be an array, but is `,
  );
  const a = arr as unknown[];
  const i = int32Arg(idx, 28690, 28691, `${name}'s second argument`);
  const at = i < 0 ? a.length + i : i;
  return at < 0 || at >= a.length ? undefined : a[at];
}

/** Named-argument operand ({input, as, ...}) shared by $filter/$map/$reduce/$zip/$sortArray. */
function named(
  name: string,
  operand: unknown,
  allowed: string[],
  required: string[],
  code: number,
) {
  if (!isDocument(operand)) {
    throw new CommandError(code, `${name} only supports an object as its argument`);
  }
  for (const k of Object.keys(operand)) {
    if (!allowed.includes(k))
      throw new CommandError(code + 1, `Unrecognized parameter to ${name}: ${k}`);
  }
  for (const k of required) {
    if (!(k in operand)) throw new CommandError(code + 2, `Missing '${k}' parameter to ${name}`);
  }
  return operand;
}

function varName(name: string, as: unknown, dflt: string): string {
  if (as === undefined) return dflt;
  if (typeof as !== 'string' || !/^[a-z\u0080-\uffff][\w\u0080-\uffff]*$/.test(as)) {
    throw new CommandError(16866, `${name}: '${String(as)}' is not a valid variable name`);
  }
  return as;
}

function filter(operand: unknown, ctx: EvalContext): unknown {
  const spec = named(
    '$filter',
    operand,
    ['input', 'as', 'cond', 'limit'],
    ['input', 'cond'],
    28646,
  );
  const as = varName('$filter', spec.as, 'this');
  const input = ctx.evaluate(spec.input);
  if (isNullish(input)) return null;
  const arr = requireArray(input, 28651, 'input to $filter must be an array not ');
  let limit = Infinity;
  if (spec.limit !== undefined) {
    const l = ctx.evaluate(spec.limit);
    if (isNullish(l)) return null;
    limit = int32Arg(l, 327391, 327391, '$filter: limit');
    if (limit < 1)
      throw new CommandError(327392, `$filter: limit must be greater than 0: ${limit}`);
  }
  const out: unknown[] = [];
  for (const el of arr) {
    if (out.length >= limit) break;
    const v = ctx.withVars({ [as]: el }).evaluate(spec.cond);
    if (isTrue(v)) out.push(el);
  }
  return out;
}

// Local copy of coerceToBool to avoid import cycles with conditional.ts.
function isTrue(v: unknown): boolean {
  if (v === false || isNullish(v)) return false;
  if (numericKind(v))
    return numericKind(v) === 'decimal'
      ? !/^-?0(\.0*)?(E[+-]?\d+)?$/i.test(String(v))
      : asDouble(v) !== 0;
  return true;
}

function map(operand: unknown, ctx: EvalContext): unknown {
  const spec = named('$map', operand, ['input', 'as', 'in'], ['input', 'in'], 16878);
  const as = varName('$map', spec.as, 'this');
  const input = ctx.evaluate(spec.input);
  if (isNullish(input)) return null;
  const arr = requireArray(input, 16883, 'input to $map must be an array not ');
  return arr.map((el) => {
    const v = ctx.withVars({ [as]: el }).evaluate(spec.in);
    return v === undefined ? null : v;
  });
}

function reduce(operand: unknown, ctx: EvalContext): unknown {
  const spec = named(
    '$reduce',
    operand,
    ['input', 'initialValue', 'in'],
    ['input', 'initialValue', 'in'],
    40075,
  );
  const input = ctx.evaluate(spec.input);
  if (isNullish(input)) return null;
  const arr = requireArray(input, 40080, "$reduce requires that 'input' be an array, found: ");
  let acc = ctx.evaluate(spec.initialValue);
  for (const el of arr) acc = ctx.withVars({ value: acc, this: el }).evaluate(spec.in);
  return acc;
}

function slice(operand: unknown, ctx: EvalContext): unknown {
  const args = evalArgs('$slice', operand, ctx, 2, 3);
  if (args.some(isNullish)) return null;
  const arr = requireArray(
    args[0],
    28724,
    'First argument to $slice must be an array, but is of type: ',
  );
  const second = args[1];
  if (!numericKind(second) || !Number.isInteger(asDouble(second))) {
    throw new CommandError(
      28725,
      `Second argument to $slice must be a numeric value, but is of type: ${typeName(second)}`,
    );
  }
  const n = asDouble(second);
  if (args.length === 2) return n >= 0 ? arr.slice(0, n) : arr.slice(Math.max(0, arr.length + n));
  const third = args[2];
  if (!numericKind(third) || !Number.isInteger(asDouble(third))) {
    throw new CommandError(
      28726,
      `Third argument to $slice must be numeric, but is of type: ${typeName(third)}`,
    );
  }
  const count = asDouble(third);
  if (count <= 0)
    throw new CommandError(28729, `Third argument to $slice must be positive: ${count}`);
  const start = n >= 0 ? Math.min(n, arr.length) : Math.max(0, arr.length + n);
  return arr.slice(start, start + count);
}

function range(operand: unknown, ctx: EvalContext): unknown {
  const [s, e, st] = evalArgs('$range', operand, ctx, 2, 3);
  const check = (v: unknown, what: string, c1: number, c2: number): number => {
    if (!numericKind(v))
      throw new CommandError(
        c1,
        `$range requires a numeric ${what}, found value of type: ${typeName(v)}`,
      );
    const n = asDouble(v);
    if (!Number.isInteger(n) || !fitsInt32(BigInt(n))) {
      throw new CommandError(
        c2,
        `$range requires a ${what} that can be represented as a 32-bit integer, found value: ${n}`,
      );
    }
    return n;
  };
  const start = check(s, 'starting value', 34443, 34444);
  const end = check(e, 'ending value', 34445, 34446);
  const step = st === undefined ? 1 : check(st, 'step value', 34447, 34448);
  if (step === 0) throw new CommandError(34449, '$range requires a non-zero step value');
  const out: unknown[] = [];
  for (let i = start; step > 0 ? i < end : i > end; i += step) out.push(int32(i));
  return out;
}

function indexOfArray(operand: unknown, ctx: EvalContext): unknown {
  const [a, x, s, e] = evalArgs('$indexOfArray', operand, ctx, 2, 4);
  if (isNullish(a)) return null;
  const arr = requireArray(
    a,
    40090,
    '$indexOfArray requires an array as a first argument, found: ',
  );
  const bound = (v: unknown, dflt: number): number => {
    if (v === undefined) return dflt;
    if (!numericKind(v) || !Number.isInteger(asDouble(v))) {
      throw new CommandError(
        40096,
        `$indexOfArray requires an integral starting index, found a value of type: ${typeName(v)}`,
      );
    }
    if (asDouble(v) < 0)
      throw new CommandError(
        40097,
        `$indexOfArray requires a nonnegative starting index, found: ${asDouble(v)}`,
      );
    return asDouble(v);
  };
  const start = bound(s, 0);
  const end = Math.min(bound(e, arr.length), arr.length);
  for (let i = start; i < end; i++) if (valuesEqual(arr[i], x)) return int32(i);
  return int32(-1);
}

function zip(operand: unknown, ctx: EvalContext): unknown {
  const spec = named(
    '$zip',
    operand,
    ['inputs', 'useLongestLength', 'defaults'],
    ['inputs'],
    34460,
  );
  const inputs = ctx.evaluate(spec.inputs);
  if (isNullish(inputs)) return null;
  const arrays: unknown[][] = [];
  for (const v of requireArray(inputs, 34461, 'inputs must be an array of expressions, found ')) {
    if (isNullish(v)) return null;
    arrays.push(requireArray(v, 34468, '$zip found a non-array expression in input: '));
  }
  const longest = spec.useLongestLength === true;
  const defaults =
    spec.defaults === undefined ? undefined : (ctx.evaluate(spec.defaults) as unknown[]);
  if (defaults !== undefined && !longest) {
    throw new CommandError(34466, 'cannot specify defaults unless useLongestLength is true');
  }
  if (defaults !== undefined && (!Array.isArray(defaults) || defaults.length !== arrays.length)) {
    throw new CommandError(34467, 'defaults and inputs must have the same length');
  }
  const lens = arrays.map((a) => a.length);
  const n = arrays.length === 0 ? 0 : longest ? Math.max(...lens) : Math.min(...lens);
  const out: unknown[][] = [];
  for (let i = 0; i < n; i++) {
    out.push(arrays.map((a, j) => (i < a.length ? a[i] : defaults ? defaults[j] : null)));
  }
  return out;
}

function sortArray(operand: unknown, ctx: EvalContext): unknown {
  const spec = named('$sortArray', operand, ['input', 'sortBy'], ['input', 'sortBy'], 2942500);
  const input = ctx.evaluate(spec.input);
  if (isNullish(input)) return null;
  const arr = requireArray(
    input,
    2942504,
    'The input argument to $sortArray must be an array, but was of type: ',
  );
  const sortBy = spec.sortBy;
  let cmp: (a: unknown, b: unknown) => number;
  if (isDocument(sortBy)) {
    const keys = Object.entries(sortBy).map(([path, dir]) => ({
      path,
      dir: asDouble(dir) < 0 ? -1 : 1,
    }));
    const get = (v: unknown, path: string): unknown =>
      path.split('.').reduce<unknown>((o, p) => (isDocument(o) ? o[p] : undefined), v);
    cmp = (a, b) => {
      for (const { path, dir } of keys) {
        const c = compareValues(get(a, path) ?? null, get(b, path) ?? null);
        if (c) return c * dir;
      }
      return 0;
    };
  } else {
    const dir = numericKind(sortBy) && asDouble(sortBy) < 0 ? -1 : 1;
    cmp = (a, b) => compareValues(a, b) * dir;
  }
  return [...arr].sort(cmp); // Array.prototype.sort is stable
}

export const arrayOperators: OperatorTable = {
  $size: (operand, ctx) => {
    const [v] = evalArgs('$size', operand, ctx, 1);
    return int32(
      requireArray(v, 17124, 'The argument to $size must be an array. Type of the argument was: ')
        .length,
    );
  },
  $arrayElemAt: (operand, ctx) => {
    const [a, i] = evalArgs('$arrayElemAt', operand, ctx, 2);
    return elemAt('$arrayElemAt', a, i, 2);
  },
  $first: (operand, ctx) => elemAt('$first', evalArgs('$first', operand, ctx, 1)[0], int32(0), 1),
  $last: (operand, ctx) => elemAt('$last', evalArgs('$last', operand, ctx, 1)[0], int32(-1), 1),
  $filter: filter,
  $map: map,
  $reduce: reduce,
  $in: (operand, ctx) => {
    const [x, a] = evalArgs('$in', operand, ctx, 2);
    const arr = requireArray(a, 40081, '$in requires an array as a second argument, found: ');
    return arr.some((el) => valuesEqual(el, x));
  },
  $concatArrays: (operand, ctx) => {
    const out: unknown[] = [];
    for (const v of evalArgs('$concatArrays', operand, ctx, 0, Infinity)) {
      if (isNullish(v)) return null;
      out.push(...requireArray(v, 28664, '$concatArrays only supports arrays, not '));
    }
    return out;
  },
  $slice: slice,
  $reverseArray: (operand, ctx) => {
    const [v] = evalArgs('$reverseArray', operand, ctx, 1);
    if (isNullish(v)) return null;
    return [
      ...requireArray(
        v,
        34435,
        'The argument to $reverseArray must be an array, but was of type: ',
      ),
    ].reverse();
  },
  $range: range,
  $isArray: (operand, ctx) => Array.isArray(evalArgs('$isArray', operand, ctx, 1)[0]),
  $indexOfArray: indexOfArray,
  $zip: zip,
  $sortArray: sortArray,
};
