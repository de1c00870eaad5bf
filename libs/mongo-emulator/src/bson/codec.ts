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
 * `encode` for documents of any size: js-bson serialises into a fixed 17 MB scratch buffer and
 * throws a RangeError beyond it, but a stored document may outgrow that (an update can enlarge
 * it). Larger documents are assembled field by field (sub-documents and arrays recursively).
 */
export function encodeAnySize(doc: Document): Uint8Array {
  try {
    return encode(doc);
  } catch (err) {
    if (!isOutOfRange(err)) throw err;
    return Buffer.concat(encodeElements(doc));
  }
}

/** Node's buffer RangeError (checked by name: it may come from another realm). */
function isOutOfRange(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as Error).name === 'RangeError';
}

/** BSON of `doc` as a list of chunks: size, elements, terminating zero. */
function encodeElements(doc: Document): Uint8Array[] {
  const parts: Uint8Array[] = [new Uint8Array(4)];
  let size = 5;
  for (const key of Object.keys(doc)) {
    const value = doc[key];
    let element: Uint8Array[];
    try {
      const single = encode({ [key]: value });
      element = [single.subarray(4, single.length - 1)];
    } catch (err) {
      const nested =
        value !== null && typeof value === 'object' && !('_bsontype' in value)
          ? Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype
          : false;
      if (!isOutOfRange(err) || !nested) throw err;
      const head = Buffer.from(`\u0000${key}\u0000`, 'utf8');
      head[0] = Array.isArray(value) ? 0x04 : 0x03;
      element = [head, ...encodeElements(value as Document)];
    }
    for (const chunk of element) size += chunk.length;
    parts.push(...element);
  }
  parts.push(new Uint8Array(1));
  new DataView(parts[0].buffer, parts[0].byteOffset, 4).setInt32(0, size, true);
  return parts;
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
