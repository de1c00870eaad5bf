import { CommandError } from '../../errors';

/**
 * Time-zone and date-string helpers shared by the date operators and $convert.
 * Offsets are minutes east of UTC.
 */

const OFFSET_RE = /^([+-])(\d{2})(?::?(\d{2}))?$/;

export function isValidTimezone(tz: string): boolean {
  if (tz === 'UTC' || tz === 'GMT' || tz === 'Z' || OFFSET_RE.test(tz)) return true;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** Offset of `tz` at instant `date` (Olson names through Intl, so DST is respected). */
export function timezoneOffsetMinutes(tz: string | undefined, date: Date): number {
  if (tz === undefined || tz === 'UTC' || tz === 'GMT' || tz === 'Z') return 0;
  const m = OFFSET_RE.exec(tz);
  if (m) return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3] ?? 0));
  if (!isValidTimezone(tz)) {
    throw new CommandError(40485, `unrecognized time zone identifier: "${tz}"`);
  }
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: tz,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  }).formatToParts(date);
  const get = (type: string): number => Number(parts.find((p) => p.type === type)?.value ?? 0);
  const asUtc = Date.UTC(
    get('year'),
    get('month') - 1,
    get('day'),
    get('hour'),
    get('minute'),
    get('second'),
  );
  const whole = Math.floor(date.getTime() / 1000) * 1000;
  return Math.round((asUtc - whole) / 60000);
}

/** Interprets local wall-clock milliseconds in `tz` as an instant. */
export function localToUtc(localMs: number, tz: string | undefined): number {
  let guess = localMs - timezoneOffsetMinutes(tz, new Date(localMs)) * 60000;
  // A second pass settles instants near DST transitions.
  guess = localMs - timezoneOffsetMinutes(tz, new Date(guess)) * 60000;
  return guess;
}

const ISO_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/;

/** ISO-8601 style date strings as $dateFromString/$toDate accept them without a format. */
export function parseIsoDate(s: string, mkError: (msg: string) => Error, tz?: string): Date {
  const m = ISO_RE.exec(s.trim());
  if (!m) throw mkError(`Error parsing date string '${s}'`);
  const [, y, mo, d, h, mi, sec, frac, zone] = m;
  const local = Date.UTC(
    Number(y),
    Number(mo) - 1,
    Number(d),
    Number(h ?? 0),
    Number(mi ?? 0),
    Number(sec ?? 0),
    Number((frac ?? '0').padEnd(3, '0').slice(0, 3)),
  );
  if (Number(mo) < 1 || Number(mo) > 12 || Number(d) < 1 || Number(d) > 31) {
    throw mkError(`Error parsing date string '${s}'`);
  }
  if (zone) {
    if (tz !== undefined && tz !== 'UTC') {
      throw mkError(
        `Error parsing date string '${s}'; you cannot pass in a date/time string with time zone information ('${zone}') together with a timezone argument`,
      );
    }
    return new Date(
      local - timezoneOffsetMinutes(zone === 'Z' ? 'UTC' : zone, new Date(local)) * 60000,
    );
  }
  return new Date(localToUtc(local, tz));
}
