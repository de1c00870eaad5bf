import type { Document } from 'bson';
import { compareValues, isNumeric, toNum, toNumber } from '../bson/compare';
import { isDocument, type QueryCandidate } from '../bson/paths';
import { CommandError } from '../errors';
import { compileBitTest, type BitOp } from './bit-tests';
import { isRegexValue, regexParts } from './regex';
import { parseTypeSpec } from './type-spec';
import {
  equalityTest,
  rangeTest,
  regexTest,
  type CandidatesTest,
  type MatchContext,
} from './value-tests';

export { equalityTest, type CandidatesTest, type MatchContext };

const whole = (c: QueryCandidate) => !c.expanded;

function inTest(op: string, arg: unknown, ctx: MatchContext): CandidatesTest {
  if (!Array.isArray(arg)) throw new CommandError('BadValue', `${op} needs an array`);
  for (const v of arg) {
    if (isDocument(v) && Object.keys(v)[0]?.startsWith('$')) {
      throw new CommandError('BadValue', `cannot nest $ under ${op}`);
    }
  }
  if (ctx.cmp !== compareValues) {
    const tests = arg.map((v) => equalityTest(v, ctx));
    return (cands) => tests.some((t) => t(cands));
  }
  // Simple collation: the list is kept sorted under MongoDB's total order and each candidate is
  // one binary search (mongod keeps $in's values in an ordered set, not a list), so a verifier's
  // read of a thousand `_id`s costs ~10 comparisons per document, not a thousand. Plain strings
  // are also one set lookup. null (which matches a missing field) and regexes (which match
  // strings) keep their own tests.
  const strings = new Set<string>();
  const special: CandidatesTest[] = [];
  const sorted: unknown[] = [];
  for (const v of arg) {
    if (v === null || v === undefined || isRegexValue(v)) special.push(equalityTest(v, ctx));
    else {
      if (typeof v === 'string') strings.add(v);
      sorted.push(v);
    }
  }
  sorted.sort((a, b) => compareValues(a, b));
  const listed = (value: unknown): boolean => {
    let lo = 0;
    let hi = sorted.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const order = compareValues(sorted[mid], value);
      if (order === 0) return true;
      if (order < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  };
  return (cands) =>
    cands.some(
      (c) => c.exists && ((typeof c.value === 'string' && strings.has(c.value)) || listed(c.value)),
    ) || special.some((t) => t(cands));
}

function sizeTest(arg: unknown): CandidatesTest {
  if (!isNumeric(arg)) throw new CommandError('BadValue', '$size needs a number');
  const n = toNumber(arg);
  if (!Number.isInteger(n)) throw new CommandError('BadValue', '$size must be a whole number');
  if (n < 0) throw new CommandError('BadValue', '$size may not be negative');
  return (cands) => cands.some((c) => whole(c) && Array.isArray(c.value) && c.value.length === n);
}

function modTest(arg: unknown): CandidatesTest {
  if (!Array.isArray(arg))
    throw new CommandError('BadValue', 'malformed mod, needs to be an array');
  if (arg.length < 2) throw new CommandError('BadValue', 'malformed mod, not enough elements');
  if (arg.length > 2) throw new CommandError('BadValue', 'malformed mod, too many elements');
  if (!isNumeric(arg[0])) throw new CommandError('BadValue', 'malformed mod, divisor not a number');
  if (!isNumeric(arg[1]))
    throw new CommandError('BadValue', 'malformed mod, remainder not a number');
  const divisor = truncToBigInt(arg[0]);
  const remainder = truncToBigInt(arg[1]);
  if (divisor === 0n) throw new CommandError('BadValue', 'divisor cannot be 0');
  return (cands) =>
    cands.some((c) => {
      if (!isNumeric(c.value) || !Number.isFinite(toNumber(c.value))) return false;
      return truncToBigInt(c.value) % divisor === remainder; // bigint % truncates like C++
    });
}

function truncToBigInt(value: unknown): bigint {
  const n = toNum(value);
  return n.kind === 'int' ? n.v : Number.isFinite(n.v) ? BigInt(Math.trunc(n.v)) : 0n;
}

function allTest(arg: unknown, ctx: MatchContext): CandidatesTest {
  if (!Array.isArray(arg)) throw new CommandError('BadValue', '$all needs an array');
  const isElemMatch = (v: unknown) => isDocument(v) && Object.keys(v)[0] === '$elemMatch';
  const elemMatches = arg.filter(isElemMatch).length;
  if (elemMatches > 0 && elemMatches < arg.length) {
    throw new CommandError('BadValue', '$all/$elemMatch has to be consistent');
  }
  if (arg.length === 0) return () => false;
  const tests = arg.map((v) =>
    isElemMatch(v) ? elemMatchTest((v as Document).$elemMatch, ctx) : equalityTest(v, ctx),
  );
  return (cands) => tests.every((t) => t(cands));
}

/** Candidates a single array element offers to a value-form predicate. */
export function elementCandidates(value: unknown): QueryCandidate[] {
  const out: QueryCandidate[] = [{ value, exists: true, expanded: false }];
  if (Array.isArray(value))
    for (const v of value) out.push({ value: v, exists: true, expanded: true });
  return out;
}

/** Whether an $elemMatch/$pull argument is a query document rather than operators on a value. */
export function isQueryDocument(arg: Document): boolean {
  const first = Object.keys(arg)[0];
  if (first === undefined || !first.startsWith('$')) return true;
  return ['$and', '$or', '$nor', '$expr', '$where', '$text', '$comment', '$jsonSchema'].includes(
    first,
  );
}

function elemMatchTest(arg: unknown, ctx: MatchContext): CandidatesTest {
  if (!isDocument(arg)) throw new CommandError('BadValue', '$elemMatch needs an Object');
  let elementTest: (v: unknown) => boolean;
  if (isQueryDocument(arg)) {
    const match = ctx.compileDoc(arg);
    elementTest = (v) => isDocument(v) && match(v);
  } else {
    const test = compileOperators(arg, ctx);
    elementTest = (v) => test(elementCandidates(v));
  }
  return (cands) =>
    cands.some((c) => whole(c) && Array.isArray(c.value) && c.value.some(elementTest));
}

/** Compiles `{$gt: 1, $lt: 5, ...}` for one path: every operator must hold. */
export function compileOperators(ops: Document, ctx: MatchContext): CandidatesTest {
  const tests: CandidatesTest[] = [];
  const keys = Object.keys(ops);
  if (keys.includes('$options') && !keys.includes('$regex')) {
    throw new CommandError('BadValue', '$options needs a $regex');
  }
  for (const op of keys) tests.push(...compileOne(op, ops[op], ops, ctx));
  return (cands) => tests.every((t) => t(cands));
}

function compileOne(op: string, arg: unknown, ops: Document, ctx: MatchContext): CandidatesTest[] {
  switch (op) {
    case '$eq':
      return [equalityTest(arg, ctx, false)];
    case '$ne': {
      const eq = equalityTest(arg, ctx, false);
      return [(c) => !eq(c)];
    }
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      if (isRegexValue(arg))
        throw new CommandError('BadValue', `Can't have RegEx as arg to predicate over field`);
      return [rangeTest(op, arg, ctx)];
    case '$in':
      return [inTest(op, arg, ctx)];
    case '$nin': {
      const t = inTest(op, arg, ctx);
      return [(c) => !t(c)];
    }
    case '$exists': {
      const want = !(arg === false || arg === null || (isNumeric(arg) && toNumber(arg) === 0));
      return [(cands) => cands.some((c) => c.exists && whole(c)) === want];
    }
    case '$type': {
      const t = parseTypeSpec(arg, 'type');
      return [(cands) => cands.some((c) => c.exists && t(c.value))];
    }
    case '$size':
      return [sizeTest(arg)];
    case '$mod':
      return [modTest(arg)];
    case '$all':
      return [allTest(arg, ctx)];
    case '$elemMatch':
      return [elemMatchTest(arg, ctx)];
    case '$regex':
      return [compileRegexOperator(arg, ops.$options)];
    case '$options':
      return [];
    case '$not':
      return [notTest(arg, ctx)];
    case '$bitsAllSet':
    case '$bitsAnySet':
    case '$bitsAllClear':
    case '$bitsAnyClear': {
      const t = compileBitTest(op as BitOp, arg);
      return [(cands) => cands.some((c) => c.exists && t(c.value))];
    }
    case '$comment':
      return [];
    default:
      throw new CommandError('BadValue', `unknown operator: ${op}`);
  }
}

function compileRegexOperator(arg: unknown, options: unknown): CandidatesTest {
  if (options !== undefined && typeof options !== 'string') {
    throw new CommandError('BadValue', '$options has to be a string');
  }
  if (typeof arg === 'string') return regexTest(arg, options ?? '');
  if (!isRegexValue(arg)) throw new CommandError('BadValue', '$regex has to be a string');
  const own = regexParts(arg).options;
  if (own && options) throw new CommandError('BadValue', 'options set in both $regex and $options');
  return regexTest(arg, options ?? own);
}

function notTest(arg: unknown, ctx: MatchContext): CandidatesTest {
  let inner: CandidatesTest;
  if (isRegexValue(arg)) inner = regexTest(arg);
  else if (isDocument(arg)) {
    if (Object.keys(arg).length === 0) throw new CommandError('BadValue', '$not cannot be empty');
    inner = compileOperators(arg, ctx);
  } else {
    throw new CommandError('BadValue', '$not needs a regex or a document');
  }
  return (cands) => !inner(cands);
}
