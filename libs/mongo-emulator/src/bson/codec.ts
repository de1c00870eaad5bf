import { BSON, Binary, type Document, type DeserializeOptions } from 'bson';

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

/**
 * `encodeAnySize` into bytes that own their memory, for documents kept for a long time (stored
 * records, oplog images). js-bson returns small documents as slices of Node's shared 8 KiB
 * buffer pool: one long-lived slice would keep the whole pool chunk, and whatever else was
 * allocated from it, alive.
 */
export function encodeOwned(doc: Document): Uint8Array {
  const bytes = encodeAnySize(doc);
  if (bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.byteLength) return bytes;
  return ownCopy(bytes);
}

/** A copy of `bytes` in an ArrayBuffer of its own. */
function ownCopy(bytes: Uint8Array): Buffer {
  const own = new Uint8Array(bytes);
  return Buffer.from(own.buffer, 0, own.byteLength);
}

/**
 * `value` without views of a larger buffer, for values kept for a long time outside a stored
 * record (index keys, oplog document keys, session ids). js-bson decodes a Binary as a view of
 * its input, so a Binary taken from a decoded command would keep the whole command message (up
 * to 48 MB) alive; such Binary values are copied, inside documents and arrays too. Returns
 * `value` itself when nothing needed copying.
 */
export function detach<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  const tag = (value as { _bsontype?: string })._bsontype;
  if (tag === 'Binary') {
    const bin = value as unknown as Binary;
    const bytes = bin.buffer;
    if (bytes.byteOffset === 0 && bytes.buffer.byteLength === bin.position) return value;
    return new Binary(new Uint8Array(bytes.subarray(0, bin.position)), bin.sub_type) as T;
  }
  if (tag !== undefined || value instanceof Date || ArrayBuffer.isView(value)) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const own = detach(item);
      if (own !== item) (out ??= value.slice())[i] = own;
    }
    return (out ?? value) as T;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  let out: Document | undefined;
  for (const key of Object.keys(value)) {
    const item = (value as Document)[key];
    const own = detach(item);
    if (own !== item) (out ??= { ...(value as Document) })[key] = own;
  }
  return (out ?? value) as T;
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
  const stored = storedBytesOf(doc);
  if (stored) return stored.byteLength;
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

/**
 * The stored bytes a document was decoded from (a collection's record), by the decoded object.
 * Such a document is shared and never mutated (see storage/record.ts), so its bytes are its
 * encoding: a reply hands them out as they are, as mongod does, instead of encoding the decoded
 * document again, and its size is their length.
 */
const storedBytes = new WeakMap<Document, Uint8Array>();

/**
 * A document held as its BSON bytes only (a stored record), in a cursor batch bound for the
 * wire: nothing decodes it on the way out (see `fromWire`).
 */
export class RawDocument {
  constructor(readonly bytes: Uint8Array) {}
}

/**
 * Commands as a client sent them over the wire, by their body object. Only such a command's
 * cursor may carry RawDocuments: its replies go straight to the socket. A router running a
 * command on a shard in-process passes another object (it reads the documents of the reply).
 */
const wireCommands = new WeakSet<Document>();

export function markFromWire(body: Document): void {
  wireCommands.add(body);
}

export function fromWire(body: Document): boolean {
  return wireCommands.has(body);
}

/** `doc` is the decoding of `bytes`, and is never mutated. */
export function rememberStoredBytes(doc: Document, bytes: Uint8Array): void {
  storedBytes.set(doc, bytes);
}

/**
 * A stored document's bytes: a RawDocument's own, or those a stored document's decoding came
 * from. Undefined for any other document.
 */
export function storedBytesOf(doc: Document): Uint8Array | undefined {
  return doc instanceof RawDocument ? doc.bytes : storedBytes.get(doc);
}

/**
 * The bytes a document is stored under, owning their memory: those it was decoded from (a stored
 * record's, or an inserted document's as the client sent them, see wire/protocol.ts) copied out
 * of the buffer they are a view of, else its encoding. mongod stores an inserted document's bytes
 * as received (once its `_id` is in front): re-encoding the decoding cost a third of an insert.
 */
export function ownedBytesOf(doc: Document): Uint8Array {
  const known = storedBytesOf(doc);
  return known ? ownCopy(known) : encodeOwned(doc);
}

/** Deep copy that preserves every BSON type (round trip through the exact codec). */
export function cloneExact<T extends Document>(doc: T): T {
  return decodeExact(encode(doc)) as T;
}
