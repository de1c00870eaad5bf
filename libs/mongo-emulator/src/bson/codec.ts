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

export function bsonSize(doc: Document): number {
  return BSON.calculateObjectSize(doc, { ignoreUndefined: false });
}

/** Deep copy that preserves every BSON type (round trip through the exact codec). */
export function cloneExact<T extends Document>(doc: T): T {
  return decodeExact(encode(doc)) as T;
}
