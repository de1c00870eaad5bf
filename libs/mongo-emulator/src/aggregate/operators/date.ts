import type { ObjectId, Timestamp } from 'bson';
import { CommandError } from '../../errors';
import { bsonTypeOf } from '../../bson/compare';
import { localToUtc, parseIsoDate, timezoneOffsetMinutes } from './date-parse';
import { int32 } from './numeric';
import {
  isDocument,
  isNullish,
  operandList,
  typeName,
  type EvalContext,
  type OperatorTable,
} from './types';

/** Value::coerceToDate: dates, timestamps and ObjectIds carry an instant. */
export function coerceToDate(v: unknown): Date {
  switch (bsonTypeOf(v)) {
    case 'date':
      return v as Date;
    case 'timestamp':
      return new Date((v as Timestamp).high * 1000);
    case 'objectId':
      return (v as ObjectId).getTimestamp();
  }
  throw new CommandError(16006, `can't convert from BSON type ${typeName(v)} to Date`);
}

function evalTimezone(tzExpr: unknown, ctx: EvalContext): string | null | undefined {
  if (tzExpr === undefined) return undefined;
  const tz = ctx.evaluate(tzExpr);
  if (isNullish(tz)) return null;
  if (typeof tz !== 'string') {
    throw new CommandError(40517, `timezone must evaluate to a string, found ${typeName(tz)}`);
  }
  return tz;
}

/** Broken-down local time of an instant in a time zone. */
interface Parts {
  year: number;
  month: number; // 1-12
  day: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
  dayOfWeek: number; // 1 (Sunday) .. 7
  dayOfYear: number; // 1-based
  offsetMinutes: number;
}

function partsOf(date: Date, tz: string | undefined): Parts {
  const offset = timezoneOffsetMinutes(tz, date);
  const l = new Date(date.getTime() + offset * 60000);
  const startOfYear = Date.UTC(l.getUTCFullYear(), 0, 1);
  return {
    year: l.getUTCFullYear(),
    month: l.getUTCMonth() + 1,
    day: l.getUTCDate(),
    hour: l.getUTCHours(),
    minute: l.getUTCMinutes(),
    second: l.getUTCSeconds(),
    millisecond: l.getUTCMilliseconds(),
    dayOfWeek: l.getUTCDay() + 1,
    dayOfYear:
      Math.floor(
        (Date.UTC(l.getUTCFullYear(), l.getUTCMonth(), l.getUTCDate()) - startOfYear) / 86400000,
      ) + 1,
    offsetMinutes: offset,
  };
}

function isoDayOfWeek(p: Parts): number {
  return p.dayOfWeek === 1 ? 7 : p.dayOfWeek - 1;
}

/** ISO 8601 week number and week-numbering year. */
function isoWeek(p: Parts): { week: number; year: number } {
  const thursday = Date.UTC(p.year, p.month - 1, p.day + 4 - isoDayOfWeek(p));
  const year = new Date(thursday).getUTCFullYear();
  const week = Math.floor((thursday - Date.UTC(year, 0, 1)) / 86400000 / 7) + 1;
  return { week, year };
}

/** %U: weeks start on Sunday; days before the first Sunday are week 0. */
function sundayWeek(p: Parts): number {
  return Math.floor((p.dayOfYear - 1 + 7 - (p.dayOfWeek - 1)) / 7);
}

/** Date-part operators accept `<date>`, `[<date>]` or `{date, timezone}`. */
function datePart(name: string, pick: (p: Parts) => number) {
  return (operand: unknown, ctx: EvalContext): unknown => {
    let dateExpr: unknown;
    let tzExpr: unknown;
    if (isDocument(operand) && 'date' in operand) {
      for (const k of Object.keys(operand)) {
        if (k !== 'date' && k !== 'timezone') {
          throw new CommandError(40535, `unrecognized option to ${name}: "${k}"`);
        }
      }
      dateExpr = operand.date;
      tzExpr = operand.timezone;
    } else {
      const list = operandList(operand);
      if (list.length !== 1) {
        throw new CommandError(
          40536,
          `${name} takes exactly 1 argument. ${list.length} were passed in.`,
        );
      }
      dateExpr = list[0];
    }
    const v = ctx.evaluate(dateExpr);
    const tz = evalTimezone(tzExpr, ctx);
    if (isNullish(v) || tz === null) return null;
    return int32(pick(partsOf(coerceToDate(v), tz)));
  };
}

const pad = (n: number, w: number): string => String(Math.abs(n)).padStart(w, '0');

function formatOffset(minutes: number, colon: boolean): string {
  const sign = minutes < 0 ? '-' : '+';
  return `${sign}${pad(Math.floor(Math.abs(minutes) / 60), 2)}${colon ? ':' : ''}${pad(Math.abs(minutes) % 60, 2)}`;
}

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

export function formatDate(date: Date, format: string, tz: string | undefined): string {
  const p = partsOf(date, tz);
  let out = '';
  for (let i = 0; i < format.length; i++) {
    const c = format[i];
    if (c !== '%') {
      out += c;
      continue;
    }
    const spec = format[++i];
    switch (spec) {
      case 'd':
        out += pad(p.day, 2);
        break;
      case 'G':
        out += pad(isoWeek(p).year, 4);
        break;
      case 'H':
        out += pad(p.hour, 2);
        break;
      case 'j':
        out += pad(p.dayOfYear, 3);
        break;
      case 'L':
        out += pad(p.millisecond, 3);
        break;
      case 'm':
        out += pad(p.month, 2);
        break;
      case 'M':
        out += pad(p.minute, 2);
        break;
      case 'S':
        out += pad(p.second, 2);
        break;
      case 'w':
        out += String(p.dayOfWeek);
        break;
      case 'u':
        out += String(isoDayOfWeek(p));
        break;
      case 'U':
        out += pad(sundayWeek(p), 2);
        break;
      case 'V':
        out += pad(isoWeek(p).week, 2);
        break;
      case 'Y':
        out += pad(p.year, 4);
        break;
      case 'z':
        out += formatOffset(p.offsetMinutes, false);
        break;
      case 'Z':
        out += String(p.offsetMinutes);
        break;
      case 'b':
        out += MONTHS[p.month - 1].slice(0, 3);
        break;
      case 'B':
        out += MONTHS[p.month - 1];
        break;
      case '%':
        out += '%';
        break;
      case undefined:
        throw new CommandError(18535, "Unmatched '%' at end of format string");
      default:
        throw new CommandError(18536, `Invalid format character '%${spec}' in format string`);
    }
  }
  return out;
}

function dateToString(operand: unknown, ctx: EvalContext): unknown {
  if (!isDocument(operand)) {
    throw new CommandError(18629, '$dateToString only supports an object as its argument');
  }
  for (const k of Object.keys(operand)) {
    if (!['date', 'format', 'timezone', 'onNull'].includes(k)) {
      throw new CommandError(18534, `Unrecognized argument to $dateToString: ${k}`);
    }
  }
  if (!('date' in operand))
    throw new CommandError(18628, "Missing 'date' parameter to $dateToString");
  const date = ctx.evaluate(operand.date);
  const tz = evalTimezone(operand.timezone, ctx);
  let format = '%Y-%m-%dT%H:%M:%S.%LZ';
  if (operand.format !== undefined) {
    const f = ctx.evaluate(operand.format);
    if (isNullish(f)) return null;
    if (typeof f !== 'string')
      throw new CommandError(
        18533,
        `$dateToString requires that 'format' be a string, found: ${typeName(f)}`,
      );
    format = f;
  }
  if (isNullish(date)) return 'onNull' in operand ? ctx.evaluate(operand.onNull) : null;
  if (tz === null) return null;
  return formatDate(coerceToDate(date), format, tz);
}

/** Parses with an explicit format: each specifier becomes a capture group. */
function parseWithFormat(
  s: string,
  format: string,
  tz: string | undefined,
  fail: () => Error,
): Date {
  const fields: string[] = [];
  let re = '^';
  for (let i = 0; i < format.length; i++) {
    if (format[i] !== '%') {
      re += format[i].replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      continue;
    }
    const spec = format[++i];
    const groups: Record<string, string> = {
      Y: '(\\d{4})',
      m: '(\\d{1,2})',
      d: '(\\d{1,2})',
      H: '(\\d{1,2})',
      M: '(\\d{1,2})',
      S: '(\\d{1,2})',
      L: '(\\d{1,3})',
      j: '(\\d{1,3})',
      z: '([+-]\\d{2}:?\\d{2})',
      Z: '([+-]\\d+)',
    };
    if (spec === '%') {
      re += '%';
      continue;
    }
    if (!groups[spec])
      throw new CommandError(18536, `Invalid format character '%${spec}' in format string`);
    re += groups[spec];
    fields.push(spec);
  }
  const m = new RegExp(re + '$').exec(s);
  if (!m) throw fail();
  const v: Record<string, string> = {};
  fields.forEach((f, i) => (v[f] = m[i + 1]));
  let local = Date.UTC(
    Number(v.Y ?? 1970),
    Number(v.m ?? 1) - 1,
    Number(v.d ?? 1),
    Number(v.H ?? 0),
    Number(v.M ?? 0),
    Number(v.S ?? 0),
    Number(v.L ?? 0),
  );
  if (v.j)
    local = Date.UTC(
      Number(v.Y ?? 1970),
      0,
      Number(v.j),
      Number(v.H ?? 0),
      Number(v.M ?? 0),
      Number(v.S ?? 0),
      Number(v.L ?? 0),
    );
  if (v.z) return new Date(local - timezoneOffsetMinutes(v.z, new Date(local)) * 60000);
  if (v.Z) return new Date(local - Number(v.Z) * 60000);
  return new Date(localToUtc(local, tz));
}

function dateFromString(operand: unknown, ctx: EvalContext): unknown {
  if (!isDocument(operand)) {
    throw new CommandError(
      40540,
      `$dateFromString only supports an object as an argument, found: ${typeName(operand)}`,
    );
  }
  for (const k of Object.keys(operand)) {
    if (!['dateString', 'format', 'timezone', 'onError', 'onNull'].includes(k)) {
      throw new CommandError(40541, `Unrecognized argument to $dateFromString: ${k}`);
    }
  }
  if (!('dateString' in operand))
    throw new CommandError(40542, "Missing 'dateString' parameter to $dateFromString");
  const s = ctx.evaluate(operand.dateString);
  const tz = evalTimezone(operand.timezone, ctx);
  const format = operand.format === undefined ? undefined : ctx.evaluate(operand.format);
  if (isNullish(s)) return 'onNull' in operand ? ctx.evaluate(operand.onNull) : null;
  if (tz === null || format === null) return null;
  try {
    if (typeof s !== 'string') {
      throw new CommandError(
        'ConversionFailure',
        `$dateFromString requires that 'dateString' be a string, found: ${typeName(s)} with value ${String(s)}`,
      );
    }
    const fail = (msg?: string) =>
      new CommandError('ConversionFailure', msg ?? `Error parsing date string '${s}'`);
    if (typeof format === 'string') return parseWithFormat(s, format, tz, () => fail());
    return parseIsoDate(s, (m) => fail(m), tz);
  } catch (e) {
    if (e instanceof CommandError && e.code === 241 && 'onError' in operand)
      return ctx.evaluate(operand.onError);
    throw e;
  }
}

export const dateOperators: OperatorTable = {
  $year: datePart('$year', (p) => p.year),
  $month: datePart('$month', (p) => p.month),
  $dayOfMonth: datePart('$dayOfMonth', (p) => p.day),
  $hour: datePart('$hour', (p) => p.hour),
  $minute: datePart('$minute', (p) => p.minute),
  $second: datePart('$second', (p) => p.second),
  $millisecond: datePart('$millisecond', (p) => p.millisecond),
  $dayOfWeek: datePart('$dayOfWeek', (p) => p.dayOfWeek),
  $dayOfYear: datePart('$dayOfYear', (p) => p.dayOfYear),
  $week: datePart('$week', sundayWeek),
  $isoWeek: datePart('$isoWeek', (p) => isoWeek(p).week),
  $isoWeekYear: datePart('$isoWeekYear', (p) => isoWeek(p).year),
  $isoDayOfWeek: datePart('$isoDayOfWeek', isoDayOfWeek),
  $dateToString: dateToString,
  $dateFromString: dateFromString,
};
