import { BSON, type Document, type DeserializeOptions } from 'bson';

/**
 * Decode without promoting anything: Int32, Double, Int64 and Binary stay BSON wrapper
 * objects and regular expressions stay BSONRegExp, so every value keeps its exact type
 * and re-serialises to the same bytes.
 */
export const EXACT: DeserializeOptions = {
  promoteValues: false,
  promoteLongs: false,
  promoteBuffers: false,
  bsonRegExp: true,
  useBigInt64: false,
  validation: { utf8: false },
};

export function decodeExact(bytes: Uint8Array): Document {
  return BSON.deserialize(bytes, EXACT);
}

export function encode(doc: Document): Uint8Array {
  return BSON.serialize(doc, { checkKeys: false, ignoreUndefined: false });
}

/**
 * Serialized size of a document. js-bson 6's calculateObjectSize sizes an Int32 wrapper (which
 * unpromoted decoding produces) as the sub-document `{value: n}`: 12 bytes too many per Int32.
 * Those are subtracted here rather than serialising the whole document again.
 */
export function bsonSize(doc: Document): number {
  return BSON.calculateObjectSize(doc, { ignoreUndefined: false }) - 12 * countInt32(doc);
}

function countInt32(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const tag = (value as { _bsontype?: string })._bsontype;
  if (tag === 'Int32') return 1;
  if (tag !== undefined && tag !== 'DBRef' && tag !== 'Code') return 0;
  if (tag === 'Code') return countInt32((value as { scope?: unknown }).scope);
  if (value instanceof Date || ArrayBuffer.isView(value)) return 0;
  let n = 0;
  if (Array.isArray(value)) for (const item of value) n += countInt32(item);
  else for (const key in value) n += countInt32((value as Record<string, unknown>)[key]);
  return n;
}

/** Deep copy that preserves every BSON type (round trip through the exact codec). */
export function cloneExact<T extends Document>(doc: T): T {
  return decodeExact(encode(doc)) as T;
}
