import type { Binary, BSONRegExp, Code, Decimal128, Document, ObjectId, Timestamp } from 'bson';
import { bsonTypeOf } from '../bson/compare';

/**
 * Renders values the way mongod's BSONElement::toString (full = false) does inside error
 * messages: `{ a: 1, b: "x" }`, doubles through printf's `%.16g` plus `.0` when the text has
 * no '.', 'E' or 'N' (so `1.0`, `-0.0`, `inf.0`, `nan.0`, `1e+21.0`), strings unescaped and cut
 * after 150 bytes, BinData as uppercase hex, UUIDs as `UUID("…")`.
 */
export function formatValue(value: unknown): string {
  switch (bsonTypeOf(value)) {
    case 'undefined':
      return 'undefined';
    case 'null':
      return 'null';
    case 'string':
      return formatString(value as string);
    case 'symbol':
      return formatString(String((value as { value: string }).value));
    case 'bool':
      return String(value);
    case 'int':
    case 'long':
      return String(
        typeof value === 'object' ? (value as { toString(): string }).toString() : value,
      );
    case 'double':
      return formatDouble(typeof value === 'number' ? value : (value as { value: number }).value);
    case 'decimal':
      return `${(value as Decimal128).toString()}`;
    case 'array':
      return formatList((value as unknown[]).map(formatValue), '[', ']');
    case 'object':
      return formatDocument(value as Document);
    case 'objectId':
      return `ObjectId('${(value as ObjectId).toHexString()}')`;
    case 'date':
      return `new Date(${(value as Date).getTime()})`;
    case 'timestamp': {
      const ts = value as Timestamp;
      return `Timestamp(${ts.t}, ${ts.i})`;
    }
    case 'regex': {
      const re = value as BSONRegExp | RegExp;
      return re instanceof RegExp ? String(re) : `/${re.pattern}/${re.options}`;
    }
    case 'binData':
      return formatBinary(value as Binary);
    case 'javascript':
      return formatCode(String((value as Code).code));
    case 'javascriptWithScope': {
      const c = value as Code;
      return `CodeWScope( ${String(c.code)}, ${formatDocument(c.scope as Document)})`;
    }
    case 'minKey':
      return 'MinKey';
    case 'maxKey':
      return 'MaxKey';
    default:
      return String(value);
  }
}

export function formatDocument(doc: Document): string {
  return formatList(
    Object.keys(doc).map((k) => formatElement(k, doc[k])),
    '{',
    '}',
  );
}

/** `name: value`, as BSONElement::toString renders one field. */
export function formatElement(name: string, value: unknown): string {
  return `${name}: ${formatValue(value)}`;
}

function formatList(items: string[], open: string, close: string): string {
  return items.length ? `${open} ${items.join(', ')} ${close}` : `${open}${close}`;
}

/** StringBuilder::appendDoubleNice: `%.16g` (glibc spelling), then `.0` if it reads as an integer. */
export function formatDouble(x: number): string {
  const s = printfG16(x);
  return /[.EN]/.test(s) ? s : `${s}.0`;
}

function printfG16(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const [mantissa, e] = x.toExponential(15).split('e');
  const exp = Number(e);
  if (exp < -4 || exp >= 16) {
    const digits = Math.abs(exp) < 10 ? `0${Math.abs(exp)}` : String(Math.abs(exp));
    return `${trimZeros(mantissa)}e${exp < 0 ? '-' : '+'}${digits}`;
  }
  return trimZeros(x.toFixed(15 - exp));
}

function trimZeros(s: string): string {
  return s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
}

function formatString(s: string): string {
  const bytes = Buffer.from(s, 'utf8');
  // valuestrsize() counts the terminating NUL: more than 160 means more than 159 bytes.
  if (bytes.length + 1 > 160) return `"${bytes.subarray(0, 150).toString('utf8')}..."`;
  return `"${s}"`;
}

function formatCode(code: string): string {
  const bytes = Buffer.from(code, 'utf8');
  return bytes.length + 1 > 80 ? `${bytes.subarray(0, 70).toString('utf8')}...` : code;
}

function formatBinary(b: Binary): string {
  const data = Buffer.from(b.buffer.subarray(0, b.position));
  if (b.sub_type === 4 && data.length === 16) {
    const h = data.toString('hex');
    return `UUID("${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}")`;
  }
  const hex = data
    .subarray(0, data.length > 80 ? 70 : data.length)
    .toString('hex')
    .toUpperCase();
  return `BinData(${b.sub_type}, ${hex}${data.length > 80 ? '...' : ''})`;
}
