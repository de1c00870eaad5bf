import type { BSONRegExp, Decimal128, Document, ObjectId, Timestamp } from 'bson';
import { bsonTypeOf, toNumber } from '../bson/compare';

/**
 * Renders values the way mongod's BSONObj::toString does inside error messages
 * (`{ a: 1, b: "x" }`, `1.0` for doubles), so errmsg strings match the server's.
 */
export function formatValue(value: unknown): string {
  switch (bsonTypeOf(value)) {
    case 'undefined':
      return 'undefined';
    case 'null':
      return 'null';
    case 'string':
      return JSON.stringify(value);
    case 'symbol':
      return JSON.stringify(String((value as { value: string }).value));
    case 'bool':
      return String(value);
    case 'int':
    case 'long':
      return String(
        typeof value === 'object' ? (value as { toString(): string }).toString() : value,
      );
    case 'double': {
      const n = toNumber(value);
      return Number.isInteger(n) ? `${n}.0` : String(n);
    }
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
