import { BSONRegExp } from 'bson';
import { CommandError } from '../../errors';
import { bsonTypeOf, compareStrings } from '../../bson/compare';
import { asDouble, int32, numericKind } from './numeric';
import {
  evalArgs,
  isDocument,
  isNullish,
  typeName,
  type EvalContext,
  type OperatorTable,
} from './types';

/** Value::coerceToString as used by $toLower, $toUpper, $substr*, $strcasecmp. */
export function coerceToString(v: unknown, op: string): string {
  if (isNullish(v)) return '';
  switch (bsonTypeOf(v)) {
    case 'string':
      return v as string;
    case 'symbol':
      return String((v as { value: string }).value);
    case 'int':
    case 'long':
    case 'double':
    case 'decimal':
      return formatNumber(v);
    case 'date':
      return (v as Date).toISOString();
    case 'timestamp':
      return String(v);
    case 'javascript':
      return String((v as { code: string }).code);
  }
  throw new CommandError(16007, `can't convert from BSON type ${typeName(v)} to String in ${op}`);
}

/** Numbers print the way MongoDB's Value does (doubles shortest round-trip). */
export function formatNumber(v: unknown): string {
  const t = bsonTypeOf(v);
  if (t === 'decimal' || t === 'long') return String(v);
  const n = asDouble(v);
  if (Number.isNaN(n)) return 'NaN';
  if (!Number.isFinite(n)) return n > 0 ? 'inf' : '-inf';
  return String(n);
}

const codePoints = (s: string): string[] => Array.from(s);

function requireString(v: unknown, code: number, msg: string): string {
  if (typeof v !== 'string') throw new CommandError(code, `${msg}${typeName(v)}`);
  return v;
}

function concat(operand: unknown, ctx: EvalContext): unknown {
  const parts: string[] = [];
  for (const v of evalArgs('$concat', operand, ctx, 0, Infinity)) {
    if (isNullish(v)) return null;
    parts.push(requireString(v, 16702, '$concat only supports strings, not '));
  }
  return parts.join('');
}

function substrBytes(name: string) {
  return (operand: unknown, ctx: EvalContext): unknown => {
    const [s, start, len] = evalArgs(name, operand, ctx, 3);
    const str = coerceToString(s, name);
    if (!numericKind(start)) {
      throw new CommandError(
        16034,
        `${name}: starting index must be a numeric type (is BSON type ${typeName(start)})`,
      );
    }
    if (!numericKind(len)) {
      throw new CommandError(
        16035,
        `${name}: length must be a numeric type (is BSON type ${typeName(len)})`,
      );
    }
    const bytes = Buffer.from(str, 'utf8');
    const lower = Math.trunc(asDouble(start));
    if (lower < 0) {
      throw new CommandError(50752, `${name}: starting index must be non-negative (got: ${lower})`);
    }
    if (lower >= bytes.length) return '';
    const l = Math.trunc(asDouble(len));
    const upper = l < 0 ? bytes.length : Math.min(bytes.length, lower + l);
    const isContinuation = (i: number): boolean => i < bytes.length && (bytes[i] & 0xc0) === 0x80;
    if (isContinuation(lower)) {
      throw new CommandError(
        28656,
        `${name}:  Invalid range, starting index is a UTF-8 continuation byte.`,
      );
    }
    if (isContinuation(upper)) {
      throw new CommandError(
        28657,
        `${name}:  Invalid range, ending index is in the middle of a UTF-8 character.`,
      );
    }
    return bytes.subarray(lower, upper).toString('utf8');
  };
}

function integralArg(v: unknown, numCode: number, intCode: number, what: string): number {
  if (!numericKind(v)) {
    throw new CommandError(
      numCode,
      `$substrCP: ${what} must be a numeric type (is BSON type ${typeName(v)})`,
    );
  }
  const n = asDouble(v);
  if (!Number.isInteger(n)) {
    throw new CommandError(intCode, `$substrCP: ${what} must be an integer (is ${n})`);
  }
  return n;
}

function substrCP(operand: unknown, ctx: EvalContext): unknown {
  const [s, idx, count] = evalArgs('$substrCP', operand, ctx, 3);
  const str = coerceToString(s, '$substrCP');
  const start = integralArg(idx, 34450, 34451, 'starting index');
  const len = integralArg(count, 34452, 34453, 'length');
  if (start < 0)
    throw new CommandError(34455, '$substrCP: the starting index must be nonnegative integer.');
  if (len < 0) throw new CommandError(34454, '$substrCP: length must be a nonnegative integer.');
  return codePoints(str)
    .slice(start, start + len)
    .join('');
}

function indexOf(name: '$indexOfCP' | '$indexOfBytes') {
  const codes = name === '$indexOfCP' ? [40093, 40094, 40096, 40097] : [40091, 40092, 40096, 40097];
  return (operand: unknown, ctx: EvalContext): unknown => {
    const [s, sub, startArg, endArg] = evalArgs(name, operand, ctx, 2, 4);
    if (isNullish(s)) return null;
    const str = requireString(
      s,
      codes[0],
      `${name} requires a string as the first argument, found: `,
    );
    const needle = requireString(
      sub,
      codes[1],
      `${name} requires a string as the second argument, found: `,
    );
    const units = name === '$indexOfCP' ? codePoints(str) : [...Buffer.from(str, 'utf8')];
    const needleUnits =
      name === '$indexOfCP' ? codePoints(needle) : [...Buffer.from(needle, 'utf8')];
    const bound = (v: unknown, dflt: number): number => {
      if (v === undefined) return dflt;
      if (!numericKind(v) || !Number.isInteger(asDouble(v))) {
        throw new CommandError(
          codes[2],
          `${name} requires an integral starting index, found a value of type: ${typeName(v)}`,
        );
      }
      if (asDouble(v) < 0) {
        throw new CommandError(
          codes[3],
          `${name} requires a nonnegative start index, found: ${asDouble(v)}`,
        );
      }
      return asDouble(v);
    };
    const start = bound(startArg, 0);
    const end = Math.min(bound(endArg, units.length), units.length);
    for (let i = start; i + needleUnits.length <= end; i++) {
      let ok = true;
      for (let j = 0; j < needleUnits.length && ok; j++) ok = units[i + j] === needleUnits[j];
      if (ok) return int32(i);
    }
    return int32(-1);
  };
}

function strLen(name: string, code: number, measure: (s: string) => number) {
  return (operand: unknown, ctx: EvalContext): unknown => {
    const [s] = evalArgs(name, operand, ctx, 1);
    return int32(measure(requireString(s, code, `${name} requires a string argument, found: `)));
  };
}

function split(operand: unknown, ctx: EvalContext): unknown {
  const [s, d] = evalArgs('$split', operand, ctx, 2);
  if (isNullish(s)) return null;
  const str = requireString(
    s,
    40085,
    '$split requires an expression that evaluates to a string as a first argument, found: ',
  );
  const delim = requireString(
    d,
    40086,
    '$split requires an expression that evaluates to a string as a second argument, found: ',
  );
  if (delim === '') throw new CommandError(40087, '$split requires a non-empty separator');
  return str.split(delim);
}

/** Default $trim characters: the whitespace set the $trim reference lists. */
const DEFAULT_TRIM = new Set(
  codePoints(
    '\uE000 \t\n\u000b\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000',
  ),
);

function trim(name: string, left: boolean, right: boolean) {
  return (operand: unknown, ctx: EvalContext): unknown => {
    if (!isDocument(operand)) {
      throw new CommandError(
        50696,
        `${name} only supports an object as an argument, found: ${typeName(operand)}`,
      );
    }
    for (const k of Object.keys(operand)) {
      if (k !== 'input' && k !== 'chars') {
        throw new CommandError(50694, `${name} found an unknown argument: ${k}`);
      }
    }
    if (!('input' in operand)) throw new CommandError(50695, `${name} requires an 'input' field`);
    const input = ctx.evaluate(operand.input);
    if (isNullish(input)) return null;
    const str = requireString(input, 50699, `${name} requires its input to be a string, got ${''}`);
    let chars = DEFAULT_TRIM;
    if ('chars' in operand) {
      const c = ctx.evaluate(operand.chars);
      if (isNullish(c)) return null;
      chars = new Set(
        codePoints(requireString(c, 50700, `${name} requires 'chars' to be a string, got `)),
      );
    }
    const cps = codePoints(str);
    let a = 0;
    let b = cps.length;
    if (left) while (a < b && chars.has(cps[a])) a++;
    if (right) while (b > a && chars.has(cps[b - 1])) b--;
    return cps.slice(a, b).join('');
  };
}

// --- regular expressions -------------------------------------------------------------------

/** PCRE → JS: flags i/m/s map directly; x (extended) is applied by stripping whitespace/comments. */
function compileRegex(name: string, pattern: string, options: string): RegExp {
  let flags = 'g';
  let source = pattern;
  for (const o of options) {
    if (o === 'i' || o === 'm' || o === 's') flags += o;
    else if (o === 'x')
      source = source
        .replace(/\\#/g, '\uE000')
        .replace(/#[^\n]*/g, '')
        .replace(/\s+/g, '')
        .replace(/\uE000/g, '\\#');
    else if (o !== 'u')
      throw new CommandError(51108, `${name} invalid flag in regex options: ${o}`);
  }
  try {
    return new RegExp(source, flags + 'u');
  } catch {
    try {
      return new RegExp(source, flags);
    } catch (e) {
      throw new CommandError(51111, `Invalid Regex in ${name}: ${(e as Error).message}`);
    }
  }
}

function regexArgs(
  name: string,
  operand: unknown,
  ctx: EvalContext,
): { input: string; re: RegExp } | null {
  if (!isDocument(operand)) {
    throw new CommandError(
      51103,
      `${name} expects an object of named arguments but found: ${typeName(operand)}`,
    );
  }
  for (const k of Object.keys(operand)) {
    if (k !== 'input' && k !== 'regex' && k !== 'options') {
      throw new CommandError(31024, `${name} found an unknown argument: ${k}`);
    }
  }
  if (!('input' in operand)) throw new CommandError(31022, `${name} requires 'input' parameter`);
  if (!('regex' in operand)) throw new CommandError(31023, `${name} requires 'regex' parameter`);
  const input = ctx.evaluate(operand.input);
  const regex = ctx.evaluate(operand.regex);
  const opts = 'options' in operand ? ctx.evaluate(operand.options) : undefined;
  if (!isNullish(input) && typeof input !== 'string') {
    throw new CommandError(51104, `${name} needs 'input' to be of type string`);
  }
  let pattern: string;
  let options = '';
  if (regex instanceof BSONRegExp || regex instanceof RegExp) {
    pattern = regex instanceof BSONRegExp ? regex.pattern : regex.source;
    options = regex instanceof BSONRegExp ? regex.options : regex.flags;
    if (!isNullish(opts) && options !== '') {
      throw new CommandError(
        51075,
        `${name}: regex option(s) specified in both 'regex' and 'option' fields`,
      );
    }
  } else if (isNullish(regex)) {
    return null;
  } else if (typeof regex === 'string') {
    pattern = regex;
  } else {
    throw new CommandError(51105, `${name} needs 'regex' to be of type string or regex`);
  }
  if (!isNullish(opts)) {
    if (typeof opts !== 'string')
      throw new CommandError(51106, `${name} needs 'options' to be of type string`);
    options += opts;
  }
  const re = compileRegex(name, pattern, options);
  if (isNullish(input)) return null;
  return { input: input as string, re };
}

function matchDoc(input: string, m: RegExpExecArray): Record<string, unknown> {
  return {
    match: m[0],
    idx: int32(codePoints(input.slice(0, m.index)).length),
    captures: m.slice(1).map((c) => (c === undefined ? null : c)),
  };
}

function* allMatches(input: string, re: RegExp): Generator<RegExpExecArray> {
  re.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(input)) !== null) {
    yield m;
    // Empty matches advance one code point so the scan terminates.
    if (m[0] === '') re.lastIndex += input.codePointAt(re.lastIndex)! > 0xffff ? 2 : 1;
  }
}

function replace(name: '$replaceOne' | '$replaceAll') {
  return (operand: unknown, ctx: EvalContext): unknown => {
    if (!isDocument(operand)) {
      throw new CommandError(
        51751,
        `${name} requires an object as an argument, found: ${typeName(operand)}`,
      );
    }
    for (const k of ['input', 'find', 'replacement']) {
      if (!(k in operand)) throw new CommandError(51748, `${name} requires '${k}' to be specified`);
    }
    for (const k of Object.keys(operand)) {
      if (!['input', 'find', 'replacement'].includes(k)) {
        throw new CommandError(51750, `${name} found an unknown argument: ${k}`);
      }
    }
    const input = ctx.evaluate(operand.input);
    const find = ctx.evaluate(operand.find);
    const repl = ctx.evaluate(operand.replacement);
    const check = (v: unknown, what: string, code: number): void => {
      if (!isNullish(v) && typeof v !== 'string') {
        throw new CommandError(
          code,
          `${name} requires that '${what}' be a string, found: ${typeName(v)}`,
        );
      }
    };
    check(input, 'input', 51746);
    check(find, 'find', 51745);
    check(repl, 'replacement', 51744);
    if (isNullish(input) || isNullish(find) || isNullish(repl)) return null;
    const [s, f, r] = [input, find, repl] as string[];
    if (name === '$replaceOne') {
      const i = s.indexOf(f);
      return i < 0 ? s : s.slice(0, i) + r + s.slice(i + f.length);
    }
    if (f === '') return r + codePoints(s).join(r) + (s === '' ? '' : r);
    return s.split(f).join(r);
  };
}

function caseConvert(name: string, upper: boolean) {
  return (operand: unknown, ctx: EvalContext): unknown => {
    const s = coerceToString(evalArgs(name, operand, ctx, 1)[0], name);
    // MongoDB changes case of ASCII letters only.
    return s.replace(upper ? /[a-z]+/g : /[A-Z]+/g, (m) =>
      upper ? m.toUpperCase() : m.toLowerCase(),
    );
  };
}

export const stringOperators: OperatorTable = {
  $concat: concat,
  $toLower: caseConvert('$toLower', false),
  $toUpper: caseConvert('$toUpper', true),
  $substr: substrBytes('$substrBytes'),
  $substrBytes: substrBytes('$substrBytes'),
  $substrCP: substrCP,
  $strLenCP: strLen('$strLenCP', 34471, (s) => codePoints(s).length),
  $strLenBytes: strLen('$strLenBytes', 34473, (s) => Buffer.byteLength(s, 'utf8')),
  $split: split,
  $trim: trim('$trim', true, true),
  $ltrim: trim('$ltrim', true, false),
  $rtrim: trim('$rtrim', false, true),
  $indexOfCP: indexOf('$indexOfCP'),
  $indexOfBytes: indexOf('$indexOfBytes'),
  $regexMatch: (operand, ctx) => {
    const a = regexArgs('$regexMatch', operand, ctx);
    if (!a) return false;
    a.re.lastIndex = 0;
    return a.re.test(a.input);
  },
  $regexFind: (operand, ctx) => {
    const a = regexArgs('$regexFind', operand, ctx);
    if (!a) return null;
    a.re.lastIndex = 0;
    const m = a.re.exec(a.input);
    return m ? matchDoc(a.input, m) : null;
  },
  $regexFindAll: (operand, ctx) => {
    const a = regexArgs('$regexFindAll', operand, ctx);
    if (!a) return [];
    return [...allMatches(a.input, a.re)].map((m) => matchDoc(a.input, m));
  },
  $replaceOne: replace('$replaceOne'),
  $replaceAll: replace('$replaceAll'),
  $strcasecmp: (operand, ctx) => {
    const [a, b] = evalArgs('$strcasecmp', operand, ctx, 2);
    const x = coerceToString(a, '$strcasecmp').toUpperCase();
    const y = coerceToString(b, '$strcasecmp').toUpperCase();
    return int32(Math.sign(compareStrings(x, y)));
  },
};
