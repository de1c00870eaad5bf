import { BSON, type Document } from 'bson';

/** Decoding that keeps every BSON type exact (no promotion). */
export const EXACT = {
  promoteValues: false,
  promoteLongs: false,
  promoteBuffers: false,
  bsonRegExp: true,
} as const;

/**
 * Decodes only the named top-level fields of a raw BSON document (e.g. the first components
 * of a shard key's paths): the other elements are skipped by their encoded size, never
 * decoded. A per-shard copy routes every document by its shard key this way at a fraction of
 * a full decode. Throws on a malformed document (the server never sends one).
 */
export function pickTopLevelFields(bytes: Uint8Array, names: readonly string[]): Document {
  const wanted = names.map((n) => Buffer.from(n, 'utf8'));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = view.getInt32(0, true) - 1;
  const parts: Uint8Array[] = [];
  let total = 5;
  let pos = 4;
  while (pos < end) {
    const start = pos;
    const type = bytes[pos++]!;
    const nameStart = pos;
    while (bytes[pos] !== 0) pos++;
    const nameEnd = pos++;
    pos += valueSize(type, bytes, view, pos);
    if (pos > end) throw new RangeError('a BSON element runs past its document');
    const length = nameEnd - nameStart;
    for (const name of wanted) {
      if (name.length !== length) continue;
      let same = true;
      for (let i = 0; i < length; i++) {
        if (bytes[nameStart + i] !== name[i]) {
          same = false;
          break;
        }
      }
      if (same) {
        const element = bytes.subarray(start, pos);
        parts.push(element);
        total += element.length;
        break;
      }
    }
  }
  const out = new Uint8Array(total);
  new DataView(out.buffer).setInt32(0, total, true);
  let at = 4;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  out[at] = 0;
  return BSON.deserialize(out, EXACT);
}

/** Encoded size of a value of BSON `type` starting at `pos`. */
function valueSize(type: number, bytes: Uint8Array, view: DataView, pos: number): number {
  switch (type) {
    case 0x01: // double
    case 0x09: // UTC datetime
    case 0x11: // timestamp
    case 0x12: // int64
      return 8;
    case 0x02: // string
    case 0x0d: // JavaScript code
    case 0x0e: // symbol
      return 4 + view.getInt32(pos, true);
    case 0x03: // document
    case 0x04: // array
    case 0x0f: // code with scope
      return view.getInt32(pos, true);
    case 0x05: // binary: length, subtype, bytes
      return 5 + view.getInt32(pos, true);
    case 0x06: // undefined
    case 0x0a: // null
    case 0x7f: // max key
    case 0xff: // min key
      return 0;
    case 0x07: // ObjectId
      return 12;
    case 0x08: // boolean
      return 1;
    case 0x0b: {
      // regex: pattern and options, two C strings
      let p = pos;
      while (bytes[p] !== 0) p++;
      p++;
      while (bytes[p] !== 0) p++;
      return p + 1 - pos;
    }
    case 0x0c: // DBPointer: string, ObjectId
      return 4 + view.getInt32(pos, true) + 12;
    case 0x10: // int32
      return 4;
    case 0x13: // decimal128
      return 16;
    default:
      throw new RangeError(`unknown BSON element type 0x${type.toString(16)}`);
  }
}
