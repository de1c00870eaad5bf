import { Double, Int32, Long, type Document } from 'bson';
import { CommandError } from '../errors';

/**
 * Commands are decoded without promotion (bson/codec decodeExact), so numbers arrive as
 * Int32 / Double / Long wrappers. These helpers read them the way mongod's IDL parsers do.
 */
export function asNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (value instanceof Int32 || value instanceof Double) return value.valueOf();
  if (value instanceof Long) return value.toNumber();
  if (typeof value === 'bigint') return Number(value);
  return undefined;
}

export function isNumeric(value: unknown): boolean {
  return asNumber(value) !== undefined;
}

/** BSON type name as mongod prints it in "is the wrong type" errors. */
export function bsonTypeName(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'missing';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'double';
  if (value instanceof Int32) return 'int';
  if (value instanceof Double) return 'double';
  if (value instanceof Long) return 'long';
  if (Array.isArray(value)) return 'array';
  if (value instanceof Date) return 'date';
  const bsontype = (value as { _bsontype?: string })._bsontype;
  if (bsontype) {
    const names: Record<string, string> = {
      Binary: 'binData',
      ObjectId: 'objectId',
      Timestamp: 'timestamp',
      Decimal128: 'decimal',
      BSONRegExp: 'regex',
      MinKey: 'minKey',
      MaxKey: 'maxKey',
      Code: 'javascript',
      BSONSymbol: 'symbol',
    };
    return names[bsontype] ?? bsontype;
  }
  return 'object';
}

function wrongType(field: string, value: unknown, expected: string): CommandError {
  return new CommandError(
    'TypeMismatch',
    `BSON field '${field}' is the wrong type '${bsonTypeName(value)}', expected type '${expected}'`,
  );
}

/** Optional numeric field; TypeMismatch when present with another type. */
export function optionalNumber(cmd: Document, key: string, context: string): number | undefined {
  const value = cmd[key];
  if (value === undefined) return undefined;
  const n = asNumber(value);
  if (n === undefined) throw wrongType(`${context}.${key}`, value, 'number');
  return n;
}

/** Optional bool field; mongod's IDL also accepts numbers for "safeBool" fields. */
export function optionalBool(cmd: Document, key: string, context: string): boolean | undefined {
  const value = cmd[key];
  if (value === undefined) return undefined;
  if (typeof value === 'boolean') return value;
  const n = asNumber(value);
  if (n !== undefined) return n !== 0;
  throw wrongType(`${context}.${key}`, value, 'bool');
}

export function requiredBool(cmd: Document, key: string, context: string): boolean {
  const value = optionalBool(cmd, key, context);
  if (value === undefined) {
    throw new CommandError(
      40414 as number,
      `BSON field '${context}.${key}' is missing but a required field`,
    );
  }
  return value;
}

export function optionalString(cmd: Document, key: string, context: string): string | undefined {
  const value = cmd[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw wrongType(`${context}.${key}`, value, 'string');
  return value;
}

export function optionalDocument(
  cmd: Document,
  key: string,
  context: string,
): Document | undefined {
  const value = cmd[key];
  if (value === undefined) return undefined;
  if (
    value === null ||
    typeof value !== 'object' ||
    Array.isArray(value) ||
    (value as { _bsontype?: string })._bsontype
  ) {
    throw wrongType(`${context}.${key}`, value, 'object');
  }
  return value as Document;
}

export function optionalArray(cmd: Document, key: string, context: string): unknown[] | undefined {
  const value = cmd[key];
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw wrongType(`${context}.${key}`, value, 'array');
  return value;
}

export { wrongType };
