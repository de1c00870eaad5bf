import { Binary } from 'bson';
import { bsonTypeOf } from '../../bson/compare';
import { CommandError } from '../../errors';
import type { CommandContext } from '../types';

/** mongod's typeName(BinDataType), used in IDL "wrong binData type" messages. */
const BIN_DATA_TYPE_NAMES: Record<number, string> = {
  0: 'general',
  1: 'function',
  2: 'byte(deprecated)',
  3: 'UUID(deprecated)',
  4: 'UUID',
  5: 'MD5',
  6: 'encrypt',
  7: 'column',
  8: 'sensitive',
  9: 'vector',
  128: 'Custom',
};

/**
 * The `collectionUUID` option (MongoDB 6.0+) of find, aggregate, insert, update and delete:
 * a 16-byte BSON Binary of subtype 4, parsed like mongod's IDL `uuid` type.
 */
export function optCollectionUuid(ctx: CommandContext): Binary | undefined {
  const v = ctx.cmd.collectionUUID;
  if (v === undefined) return undefined;
  const field = `${ctx.name}.collectionUUID`;
  if (!(v instanceof Binary)) {
    throw new CommandError(
      'TypeMismatch',
      `BSON field '${field}' is the wrong type '${bsonTypeOf(v)}', expected type 'binData'`,
    );
  }
  if (v.sub_type !== Binary.SUBTYPE_UUID) {
    throw new CommandError(
      'TypeMismatch',
      `BSON field '${field}' is the wrong binData type '${BIN_DATA_TYPE_NAMES[v.sub_type] ?? 'invalid'}', expected type 'UUID'`,
    );
  }
  if (v.length() !== 16) {
    throw new CommandError(
      'InvalidUUID',
      'uuid must be a 16-byte binary field with UUID (4) subtype',
    );
  }
  return v;
}

/**
 * mongod's checkCollectionUUIDMismatch: fails with 361 CollectionUUIDMismatch unless `name`
 * is a collection (not a view) whose UUID is `uuid`. The reply carries CollectionUUIDMismatchInfo:
 * `db`, `collectionUUID`, `expectedCollection` and `actualCollection` (the collection of this
 * database that has the UUID, or null).
 */
export function checkCollectionUuid(ctx: CommandContext, name: string, uuid: Binary): void {
  const error = collectionUuidMismatch(ctx, name, uuid);
  if (error) throw error;
}

/** The CollectionUUIDMismatch error for `name`, or undefined when the UUID matches. */
export function collectionUuidMismatch(
  ctx: CommandContext,
  name: string,
  uuid: Binary,
): CommandError | undefined {
  const catalog = ctx.node.catalog;
  const coll = catalog.getCollection(ctx.db, name);
  if (coll && sameUuid(coll.uuid, uuid)) return undefined;
  const actual = catalog.collectionByUuid(uuid);
  return new CommandError(
    'CollectionUUIDMismatch',
    'Collection UUID does not match that specified',
    {
      extra: {
        db: ctx.db,
        collectionUUID: uuid,
        expectedCollection: name,
        actualCollection: actual && actual.db === ctx.db ? actual.name : null,
      },
    },
  );
}

/**
 * Rejects a field the command's strict IDL does not declare, as mongod does for
 * `collectionUUID` on count and listIndexes (40415).
 */
export function rejectUnknownField(ctx: CommandContext, field: string): void {
  if (ctx.cmd[field] !== undefined) {
    throw new CommandError(
      'Location40415',
      `BSON field '${ctx.name}.${field}' is an unknown field.`,
    );
  }
}

export function sameUuid(a: Binary, b: Binary): boolean {
  return Buffer.from(a.buffer).equals(Buffer.from(b.buffer));
}

/** A UUID as mongod prints it in messages: lower-case hex with dashes. */
export function uuidString(uuid: Binary): string {
  const hex = Buffer.from(uuid.buffer).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
