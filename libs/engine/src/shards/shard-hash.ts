import { createHash, type Hash } from 'node:crypto';
import { BSON, Decimal128, Long } from 'bson';
import { exactNumber } from './key-order';

/**
 * mongod's `BSONElementHasher::hash64(element, seed 0)` (db/hasher.cpp): the value hashed shard
 * keys and hashed indexes store. md5 over the seed (int32 LE), then recursively per element:
 * its canonical type (int32 LE), its field name with the NUL (not for the top element), and
 * either the int64 a number squashes to (safeNumberLongForHash), the raw BSON value, or (for a
 * document or an array) each child element followed by the EOO element. The first 8 bytes of
 * the digest, little-endian, are the hash.
 *
 * This walks the serialized BSON of `{"": value}`, so the elements hashed are exactly those the
 * value is stored as. `undefined` (a missing field) hashes as null.
 */
export function hashShardKeyValue(value: unknown): Long {
  const bytes = BSON.serialize(
    { '': value === undefined ? null : value },
    { ignoreUndefined: true },
  );
  const md5 = createHash('md5').update(int32(0));
  hashElement(md5, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), 4, false);
  return Long.fromBigInt(md5.digest().readBigInt64LE(0));
}

/** BSON type byte → canonicalizeBSONType. */
const CANONICAL: Record<number, number> = {
  0x00: 0, // EOO
  0x01: 10,
  0x02: 15,
  0x03: 20,
  0x04: 25,
  0x05: 30,
  0x06: 0,
  0x07: 35,
  0x08: 40,
  0x09: 45,
  0x0a: 5,
  0x0b: 50,
  0x0c: 55,
  0x0d: 60,
  0x0e: 15,
  0x0f: 65,
  0x10: 10,
  0x11: 47,
  0x12: 10,
  0x13: 10,
  0xff: -1,
  0x7f: 127,
};

/** Fixed value sizes by type byte; others are length-prefixed or C strings. */
const FIXED: Record<number, number> = {
  0x00: 0,
  0x01: 8,
  0x06: 0,
  0x07: 12,
  0x08: 1,
  0x09: 8,
  0x0a: 0,
  0x10: 4,
  0x11: 8,
  0x12: 8,
  0x13: 16,
  0xff: 0,
  0x7f: 0,
};

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32LE(n);
  return b;
}

/** Size of the value of a `type` element starting at `at`. */
function valueSize(buf: Buffer, type: number, at: number): number {
  const fixed = FIXED[type];
  if (fixed !== undefined) return fixed;
  switch (type) {
    case 0x02:
    case 0x0d:
    case 0x0e:
      return 4 + buf.readInt32LE(at);
    case 0x03:
    case 0x04:
    case 0x0f:
      return buf.readInt32LE(at);
    case 0x05:
      return 5 + buf.readInt32LE(at);
    case 0x0b: {
      const end = buf.indexOf(0, buf.indexOf(0, at) + 1);
      return end + 1 - at;
    }
    case 0x0c:
      return 4 + buf.readInt32LE(at) + 12;
  }
  throw new Error(`cannot hash BSON type ${type}`);
}

/** Hashes the element at `at`; returns the offset after it. */
function hashElement(md5: Hash, buf: Buffer, at: number, withName: boolean): number {
  const type = buf[at]!;
  const canonical = CANONICAL[type];
  if (canonical === undefined) throw new Error(`cannot hash BSON type ${type}`);
  md5.update(int32(canonical));
  if (type === 0) return at + 1; // EOO: no name, no value
  const nameEnd = buf.indexOf(0, at + 1);
  if (withName) md5.update(buf.subarray(at + 1, nameEnd + 1));
  const start = nameEnd + 1;
  const end = start + valueSize(buf, type, start);
  if (type === 0x03 || type === 0x04) {
    // Children then EOO, hashed as elements with their names.
    for (let p = start + 4; p < end;) p = hashElement(md5, buf, p, true);
  } else if (canonical === 10) {
    md5.update(Buffer.from(squashToLong(buf, type, start).toBytesLE()));
  } else {
    if (type === 0x0f) throw new Error('cannot hash code with scope');
    md5.update(buf.subarray(start, end));
  }
  return end;
}

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

/**
 * BSONElement::safeNumberLongForHash: doubles truncate (NaN 0, saturating, and 2^63 itself
 * giving INT64_MIN as the old undefined cast did), Decimal128 rounds half to even (toLong's
 * default) and saturates.
 */
function squashToLong(buf: Buffer, type: number, at: number): Long {
  if (type === 0x10) return Long.fromInt(buf.readInt32LE(at));
  if (type === 0x12) return Long.fromBigInt(buf.readBigInt64LE(at));
  if (type === 0x01) {
    const d = buf.readDoubleLE(at);
    if (Number.isNaN(d)) return Long.ZERO;
    if (d === 2 ** 63) return Long.MIN_VALUE;
    if (d > 2 ** 63) return Long.MAX_VALUE;
    if (d < -(2 ** 63)) return Long.MIN_VALUE;
    return Long.fromBigInt(BigInt(Math.trunc(d)));
  }
  const { s, n, d } = exactNumber(new Decimal128(buf.subarray(at, at + 16)));
  if (s === -2) return Long.ZERO;
  if (s !== 0) return s < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
  let q = n / d; // truncated toward zero
  const twice = 2n * (n - q * d) * (n < 0n ? -1n : 1n); // 2 |remainder|
  if (twice > d || (twice === d && q % 2n !== 0n)) q += n < 0n ? -1n : 1n;
  return Long.fromBigInt(q > INT64_MAX ? INT64_MAX : q < INT64_MIN ? INT64_MIN : q);
}
