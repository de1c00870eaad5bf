import { createHash, type Hash } from 'node:crypto';
import { Decimal128, Long, serialize, type Document } from 'bson';

/**
 * mongod's BSONElementHasher::hash64 with the default seed 0 (src/mongo/db/hasher.cpp), the
 * value `convertShardKeyToHashed` returns and hashed indexes / hashed shard keys store:
 * md5 over the little-endian int32 seed, then for the element its canonical type (int32 LE),
 * numbers squashed to an int64 (safeNumberLongForHash), other scalars as their raw BSON value
 * bytes, embedded documents and arrays as their elements (type, field name with its NUL,
 * value) followed by an EOO element; the first 8 digest bytes read as a little-endian int64.
 */
export function hashShardKeyValue(value: unknown): Long {
  const h = createHash('md5');
  const seed = Buffer.alloc(4);
  seed.writeInt32LE(0);
  h.update(seed);
  hashElement(h, value, undefined);
  const digest = h.digest();
  return Long.fromBytesLE([...digest.subarray(0, 8)]);
}

/** BSON type byte → canonicalizeBSONType (bsontypes.h). */
const CANONICAL: Record<number, number> = {
  0xff: -1, // MinKey
  0x7f: 127, // MaxKey
  0x06: 0, // Undefined
  0x0a: 5, // null
  0x01: 10,
  0x10: 10,
  0x12: 10,
  0x13: 10,
  0x02: 15, // string
  0x0e: 15, // symbol
  0x03: 20,
  0x04: 25,
  0x05: 30,
  0x07: 35,
  0x08: 40,
  0x09: 45,
  0x11: 47,
  0x0b: 50,
  0x0c: 55,
  0x0d: 60,
  0x0f: 65,
};

const TWO_63 = 2 ** 63;

/** BSONElement::safeNumberLongForHash. */
function numberForHash(type: number, raw: Buffer): Long {
  switch (type) {
    case 0x10:
      return Long.fromInt(raw.readInt32LE(0));
    case 0x12:
      return Long.fromBytesLE([...raw.subarray(0, 8)]);
    case 0x01: {
      const d = raw.readDoubleLE(0);
      if (Number.isNaN(d)) return Long.ZERO;
      if (d === TWO_63) return Long.MIN_VALUE;
      if (d >= TWO_63) return Long.MAX_VALUE;
      if (d < -TWO_63) return Long.MIN_VALUE;
      return Long.fromBigInt(BigInt(Math.trunc(d)));
    }
    default: {
      // Decimal128: safeNumberLongForHash goes through Decimal128::toLong(), which rounds half
      // to even (the default rounding mode); approximated via the string form (exact for
      // integral values and for halves).
      const n = Number(raw.length ? decimalString(raw) : 0);
      if (Number.isNaN(n)) return Long.ZERO;
      if (n >= TWO_63) return Long.MAX_VALUE;
      if (n < -TWO_63) return Long.MIN_VALUE;
      const floor = Math.floor(n);
      const rest = n - floor;
      const rounded = rest > 0.5 || (rest === 0.5 && floor % 2 !== 0) ? floor + 1 : floor;
      return Long.fromBigInt(BigInt(rounded));
    }
  }
}

function decimalString(raw: Buffer): string {
  return new Decimal128(raw).toString();
}

/** The element `{"": value}` serialized: its type byte and raw value bytes. */
function encodeElement(value: unknown): { type: number; raw: Buffer } {
  const buf = serialize({ '': value } as Document, { ignoreUndefined: false });
  return { type: buf[4], raw: Buffer.from(buf.buffer, buf.byteOffset + 6, buf.length - 7) };
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32LE(n);
  return b;
}

function hashElement(h: Hash, value: unknown, fieldName: string | undefined): void {
  const { type, raw } = encodeElement(value);
  const canonical = CANONICAL[type];
  if (canonical === undefined) throw new Error(`cannot hash BSON type ${type}`);
  h.update(int32(canonical));
  if (fieldName !== undefined)
    h.update(Buffer.concat([Buffer.from(fieldName, 'utf8'), Buffer.from([0])]));
  if (type === 0x03 || type === 0x04) {
    const entries: Array<[string, unknown]> = Array.isArray(value)
      ? value.map((v, i) => [String(i), v])
      : Object.entries(value as Document).filter(([, v]) => v !== undefined);
    for (const [k, v] of entries) hashElement(h, v, k);
    // EOO: canonical type 0, and a default-constructed BSONElement has an empty field name.
    h.update(int32(0));
    return;
  }
  if (type === 0x0f) throw new Error('cannot hash code with scope');
  if (canonical === 10) {
    const n = numberForHash(type, raw);
    h.update(Buffer.from(n.toBytesLE()));
    return;
  }
  h.update(raw);
}
