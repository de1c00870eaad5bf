import { parseCollation } from '../../query/collation';
import type { Document } from 'bson';
import { bsonTypeOf, isNumeric, toNumber, type BsonTypeName } from '../../bson/compare';
import { CommandError } from '../../errors';
import { checkCollectionName } from '../../storage/catalog';
import type { WriteOptions } from '../../storage/collection';
import type { CommandContext } from '../types';

/**
 * Argument parsing shared by CRUD and DDL commands, producing mongod's IDL error messages:
 * "BSON field 'insert.documents' is the wrong type 'string', expected type 'array'".
 */

const NUMERIC_TYPES = '[long, int, decimal, double]';

function wrongType(
  cmd: string,
  field: string,
  value: unknown,
  expected: string,
  plural = false,
): CommandError {
  return new CommandError(
    'TypeMismatch',
    `BSON field '${cmd}.${field}' is the wrong type '${bsonTypeOf(value)}', expected type${plural ? 's' : ''} '${expected}'`,
  );
}

export function optString(
  ctx: CommandContext,
  field: string,
  doc: Document = ctx.cmd,
  prefix = ctx.name,
): string | undefined {
  const v = doc[field];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw wrongType(prefix, field, v, 'string');
  return v;
}

export function optDocument(
  ctx: CommandContext,
  field: string,
  doc: Document = ctx.cmd,
  prefix = ctx.name,
): Document | undefined {
  const v = doc[field];
  if (v === undefined) return undefined;
  if (bsonTypeOf(v) !== 'object') throw wrongType(prefix, field, v, 'object');
  return v as Document;
}

export function optArray(
  ctx: CommandContext,
  field: string,
  doc: Document = ctx.cmd,
  prefix = ctx.name,
): unknown[] | undefined {
  const v = doc[field];
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) throw wrongType(prefix, field, v, 'array');
  return v;
}

export function reqArray(
  ctx: CommandContext,
  field: string,
  doc: Document = ctx.cmd,
  prefix = ctx.name,
): unknown[] {
  const v = optArray(ctx, field, doc, prefix);
  if (v === undefined) {
    throw new CommandError(
      40414 as number,
      `BSON field '${prefix}.${field}' is missing but a required field`,
    );
  }
  return v;
}

/** Booleans: mongod's IDL also accepts numbers for bool fields. */
export function optBool(
  ctx: CommandContext,
  field: string,
  doc: Document = ctx.cmd,
  prefix = ctx.name,
): boolean | undefined {
  const v = doc[field];
  if (v === undefined) return undefined;
  if (typeof v === 'boolean') return v;
  if (isNumeric(v)) return toNumber(v) !== 0;
  throw wrongType(prefix, field, v, 'bool');
}

export function optNumber(
  ctx: CommandContext,
  field: string,
  doc: Document = ctx.cmd,
  prefix = ctx.name,
): number | undefined {
  const v = doc[field];
  if (v === undefined || v === null) return undefined;
  if (!isNumeric(v)) throw wrongType(prefix, field, v, NUMERIC_TYPES, true);
  return toNumber(v);
}

/** A non-negative integer option such as batchSize/skip/limit. */
export function optNonNegative(
  ctx: CommandContext,
  field: string,
  doc: Document = ctx.cmd,
  prefix = ctx.name,
): number | undefined {
  const n = optNumber(ctx, field, doc, prefix);
  if (n === undefined) return undefined;
  if (n < 0) {
    throw new CommandError(
      51024 as number,
      `BSON field '${field}' value must be >= 0, actual value '${n}'`,
    );
  }
  return Math.trunc(n);
}

/** `hint` is a string (index name) or a document (key pattern or {$natural}). */
export function optHint(
  ctx: CommandContext,
  doc: Document = ctx.cmd,
  prefix = ctx.name,
): string | Document | undefined {
  const v = doc.hint;
  if (v === undefined) return undefined;
  const t = bsonTypeOf(v);
  if (t === 'string' || t === 'object') return v as string | Document;
  throw new CommandError('FailedToParse', `${prefix}.hint must be a string or an object, got ${t}`);
}

/** The target collection name: the value of the command's first field. */
export function collectionName(ctx: CommandContext): string {
  const v = ctx.cmd[ctx.name];
  if (typeof v !== 'string') {
    throw new CommandError('InvalidNamespace', `collection name has invalid type ${bsonTypeOf(v)}`);
  }
  checkCollectionName(ctx.db, v);
  return v;
}

export function typeOf(v: unknown): BsonTypeName {
  return bsonTypeOf(v);
}

/** Oplog/session data and validation bypass for writes made by this command. */
export function writeOptions(ctx: CommandContext): WriteOptions {
  const opts: WriteOptions = {};
  if (ctx.txn) {
    // A transaction's operations carry no lsid/txnNumber: its applyOps entry does.
    opts.sink = ctx.txn.sink;
  } else if (ctx.session) {
    opts.lsid = ctx.session.lsid;
    if (ctx.session.txnNumber) opts.txnNumber = ctx.session.txnNumber;
  }
  if (ctx.cmd.bypassDocumentValidation === true) opts.bypassValidation = true;
  return opts;
}

/** The `collation` option as given, validated to be a document. */
export function optCollation(
  ctx: CommandContext,
  doc: Document = ctx.cmd,
  prefix = ctx.name,
): Document | undefined {
  const c = optDocument(ctx, 'collation', doc, prefix);
  if (c && typeof c.locale !== 'string') {
    throw new CommandError(40414 as number, "BSON field 'locale' is missing but a required field");
  }
  // Validated up front, as mongod parses the collation before running the command.
  if (c) parseCollation(c);
  return c;
}
