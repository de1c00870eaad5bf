import type { Document } from 'bson';
import {
  bsonTypeOf,
  compareDocuments,
  compareValues,
  isNumeric,
  toNumber,
} from '../../bson/compare';
import { isDocument } from '../../bson/paths';
import { CommandError } from '../../errors';
import { compileFilter } from '../../query/matcher';
import { formatDocument } from '../../query/format';
import type { Collection } from '../../storage/collection';
import type { Index } from '../../storage/index';
import { collectionName, reqArray, writeOptions } from '../crud/args';
import type { CommandDefinition } from '../types';
import { checkTransactionalDdl } from './common';

const ALLOWED_OPTIONS = new Set([
  'key',
  'name',
  'v',
  'unique',
  'sparse',
  'partialFilterExpression',
  'expireAfterSeconds',
  'hidden',
  'collation',
  'background',
  'prepareUnique',
  'storageEngine',
  'ns',
]);

/** The generated name mongod/drivers use: `a_1_b_-1`. */
export function defaultIndexName(key: Document): string {
  return Object.entries(key)
    .map(([f, v]) => `${f}_${isNumeric(v) ? toNumber(v) : String(v)}`)
    .join('_');
}

/** Validates a requested index spec and returns it in listIndexes form ({v, key, name, ...}). */
function normaliseSpec(raw: unknown, coll: Collection | undefined): Document {
  if (!isDocument(raw))
    throw new CommandError(
      'TypeMismatch',
      "BSON field 'createIndexes.indexes' elements must be objects",
    );
  const key = raw.key;
  if (!isDocument(key)) throw new CommandError('TypeMismatch', "The 'key' field must be an object");
  const fields = Object.keys(key);
  if (fields.length === 0)
    throw new CommandError('CannotCreateIndex', 'Index keys cannot be empty.');
  for (const f of fields) {
    const v = key[f];
    if (typeof v === 'string') {
      if (v !== 'hashed')
        throw new CommandError(
          'CannotCreateIndex',
          `Unknown index plugin '${v}' (the emulator supports ordered and hashed indexes)`,
        );
    } else if (!isNumeric(v) || toNumber(v) === 0 || Number.isNaN(toNumber(v))) {
      throw new CommandError(
        'CannotCreateIndex',
        `Values in the index key pattern can only be numbers or strings, and numbers must be non-zero; found ${f}: ${String(v)}`,
      );
    }
    if (f === '' || f.startsWith('$') || f.split('.').some((p) => p === '')) {
      throw new CommandError(
        'CannotCreateIndex',
        `Index key contains an illegal field name: '${f}'`,
      );
    }
  }
  for (const opt of Object.keys(raw)) {
    if (!ALLOWED_OPTIONS.has(opt)) {
      throw new CommandError(
        197 as number,
        `The field '${opt}' is not valid for an index specification. Specification: ${formatDocument(raw)}`,
      );
    }
  }
  if (raw.name !== undefined && typeof raw.name !== 'string') {
    throw new CommandError(
      'TypeMismatch',
      `The field 'name' must be a string, not ${bsonTypeOf(raw.name)}`,
    );
  }
  const hashedCount = fields.filter((f) => key[f] === 'hashed').length;
  if (hashedCount > 1)
    throw new CommandError(31303 as number, 'A maximum of one index field is allowed to be hashed');
  if (hashedCount && raw.unique) {
    throw new CommandError(
      'CannotCreateIndex',
      'Currently hashed indexes cannot guarantee uniqueness. Use a regular index.',
    );
  }
  if (raw.sparse && raw.partialFilterExpression !== undefined) {
    throw new CommandError(
      'CannotCreateIndex',
      'cannot mix "partialFilterExpression" and "sparse" options',
    );
  }
  if (raw.partialFilterExpression !== undefined) {
    if (!isDocument(raw.partialFilterExpression)) {
      throw new CommandError('TypeMismatch', 'partialFilterExpression must be an object');
    }
    compileFilter(raw.partialFilterExpression);
  }
  if (raw.expireAfterSeconds !== undefined) {
    if (!isNumeric(raw.expireAfterSeconds)) {
      throw new CommandError(
        'CannotCreateIndex',
        "TTL index 'expireAfterSeconds' option must be numeric",
      );
    }
    if (fields.length > 1)
      throw new CommandError(
        'CannotCreateIndex',
        'TTL indexes are single-field indexes, compound indexes do not support TTL.',
      );
    if (fields[0] === '_id')
      throw new CommandError(
        'CannotCreateIndex',
        "The field 'expireAfterSeconds' is not valid for an _id index specification.",
      );
  }
  const isId = fields.length === 1 && fields[0] === '_id' && compareValues(key._id, 1) === 0;
  if (raw.hidden && isId) throw new CommandError('CannotCreateIndex', "can't hide _id index");
  const name = (raw.name as string | undefined) ?? defaultIndexName(key);
  if (name === '*') throw new CommandError('BadValue', "The index name '*' is not valid.");
  const spec: Document = { v: raw.v ?? 2, key, name };
  for (const [k, v] of Object.entries(raw)) {
    if (k === 'key' || k === 'name' || k === 'v' || k === 'ns') continue;
    spec[k] = v;
  }
  if (spec.collation === undefined && coll?.options.collation)
    spec.collation = coll.options.collation;
  return spec;
}

function sameOptions(a: Document, b: Document): boolean {
  const strip = (d: Document) => {
    const { background: _b, v: _v, ...rest } = d;
    return rest;
  };
  return compareDocuments(strip(a), strip(b)) === 0;
}

/** Equivalent for index identity: same key pattern, collation and partial filter. */
function equivalent(existing: Index, spec: Document): boolean {
  return (
    compareDocuments(existing.key, spec.key as Document) === 0 &&
    Object.keys(existing.key).join() === Object.keys(spec.key as Document).join() &&
    compareValues(existing.spec.collation ?? null, spec.collation ?? null) === 0 &&
    compareValues(
      existing.spec.partialFilterExpression ?? null,
      spec.partialFilterExpression ?? null,
    ) === 0
  );
}

export const createIndexesCommand: CommandDefinition = {
  name: 'createIndexes',
  access: 'write',
  userWrite: true,
  run(ctx) {
    const name = collectionName(ctx);
    const requested = reqArray(ctx, 'indexes');
    if (requested.length === 0)
      throw new CommandError('BadValue', 'Must specify at least one index to create');
    checkTransactionalDdl(ctx);
    const catalog = ctx.node.catalog;
    catalog.assertNotView(ctx.db, name);
    const existingColl = catalog.getCollection(ctx.db, name);
    const specs = requested.map((r) => normaliseSpec(r, existingColl));
    const wopts = writeOptions(ctx);
    const { coll, created } = catalog.ensureCollection(ctx.db, name, wopts);
    const before = coll.indexes.length;
    const toBuild: Document[] = [];
    for (const spec of specs) {
      const sameName = coll.getIndex(spec.name as string);
      const sameKey = coll.indexes.find((i) => equivalent(i, spec));
      if (sameName && sameName === sameKey) {
        if (sameOptions(sameName.spec, spec)) continue; // identical: a no-op
        throw new CommandError(
          'IndexOptionsConflict',
          `An equivalent index already exists with the same name but different options. Requested index: ${formatDocument(spec)}, existing index: ${formatDocument(sameName.spec)}`,
        );
      }
      if (sameName) {
        throw new CommandError(
          'IndexKeySpecsConflict',
          `An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: ${formatDocument(spec)}, existing index: ${formatDocument(sameName.spec)}`,
        );
      }
      if (sameKey) {
        throw new CommandError(
          'IndexOptionsConflict',
          `Index already exists with a different name: ${sameKey.name}`,
        );
      }
      if (toBuild.some((s) => s.name === spec.name)) continue;
      toBuild.push(spec);
    }
    if (toBuild.length === 0) {
      return {
        numIndexesBefore: before,
        numIndexesAfter: before,
        note: 'all indexes already exist',
        ok: 1,
      };
    }
    const built: Index[] = [];
    try {
      for (const spec of toBuild) built.push(catalog.addIndex(coll, spec, wopts));
    } catch (err) {
      // All or nothing, like a single index build of several indexes.
      for (const idx of built) catalog.dropIndex(coll, idx, wopts);
      throw err;
    }
    return {
      numIndexesBefore: before,
      numIndexesAfter: coll.indexes.length,
      createdCollectionAutomatically: created,
      commitQuorum: 'votingMembers',
      ok: 1,
    };
  },
};
