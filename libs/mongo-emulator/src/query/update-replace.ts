import type { Document } from 'bson';
import { bsonTypeOf, compareValues } from '../bson/compare';
import { cloneDeep, isDocument } from '../bson/paths';
import { CommandError } from '../errors';
import { formatElement } from './format';
import { identical } from './update-fields';

/** A replacement keeps the original _id first, then the new fields in their given order. */
export function applyReplacement(
  doc: Document,
  replacement: Document,
): { doc: Document; changed: boolean } {
  for (const key of Object.keys(replacement)) {
    if (key.startsWith('$')) {
      throw new CommandError(
        'DollarPrefixedFieldName',
        `The dollar ($) prefixed field '${key}' in '${key}' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.`,
      );
    }
  }
  const out: Document = {};
  if (doc._id !== undefined) out._id = doc._id;
  else if (replacement._id !== undefined) out._id = replacement._id;
  for (const key of Object.keys(replacement))
    if (key !== '_id') out[key] = cloneDeep(replacement[key]);
  // Storage validation (ObjectReplaceExecutor) runs before UpdateStage's immutable-field check.
  checkIdNotDollarPrefixed(replacement._id);
  if (replacement._id !== undefined) checkIdUnchanged(doc, { ...out, _id: replacement._id });
  validateStorage(out);
  return { doc: out, changed: !identical(doc, out) };
}

export function checkIdUnchanged(before: Document, after: Document): void {
  if (before._id === undefined) return;
  if (after._id === undefined || compareValues(before._id, after._id) !== 0) {
    throw new CommandError(
      'ImmutableField',
      `After applying the update, the (immutable) field '_id' was found to have been altered to ${formatElement('_id', after._id)}`,
    );
  }
}

/** The storage checks mongod runs on an updated document's _id. */
export function validateStorage(doc: Document): void {
  if (!('_id' in doc)) return;
  const t = bsonTypeOf(doc._id);
  if (t === 'array' || t === 'regex' || t === 'undefined') {
    throw new CommandError('InvalidIdField', `The '_id' value cannot be of type ${t}`);
  }
  checkIdNotDollarPrefixed(doc._id);
}

/**
 * mongod's storage_validation::storageValidIdField for an object _id: storageValidEmbedded
 * looks at every nested object and array, and a `$`-prefixed name other than the DBRef fields
 * fails with 52 DollarPrefixedFieldName
 * `_id fields may not contain '$'-prefixed fields: <name> is not valid for storage.`
 * (insert: fixDocumentForInsert; update/replace/upsert: the update's storage validation).
 */
export function checkIdNotDollarPrefixed(id: unknown): void {
  if (!isDocument(id)) return;
  const bad = findDollarField(id);
  if (bad !== undefined) {
    throw new CommandError(
      'DollarPrefixedFieldName',
      `_id fields may not contain '$'-prefixed fields: ${bad} is not valid for storage.`,
    );
  }
}

const DBREF_FIELDS = new Set(['$ref', '$id', '$db']);

function findDollarField(value: unknown): string | undefined {
  if (Array.isArray(value)) {
    for (const el of value) {
      const bad = findDollarField(el);
      if (bad !== undefined) return bad;
    }
    return undefined;
  }
  if (!isDocument(value)) return undefined;
  for (const key of Object.keys(value)) {
    if (key.startsWith('$') && !DBREF_FIELDS.has(key)) return key;
    const bad = findDollarField(value[key]);
    if (bad !== undefined) return bad;
  }
  return undefined;
}
