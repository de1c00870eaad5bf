import {
  Binary,
  BSONRegExp,
  Code,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
  type Document,
} from 'bson';
import { bsonTypeOf } from '../bson/compare';

/**
 * A subset of MongoDB's KeyString V1 format (src/mongo/db/storage/key_string.cpp), which is
 * what a resume token's `_data` hex string holds. The byte layout keeps the property change
 * streams rely on: comparing two encodings byte by byte (or their uppercase hex strings)
 * orders them like the BSON values they encode.
 *
 * Faithful for the values tokens really contain (Timestamp, small ints, bool, null, UUID
 * BinData, and documentKey values of type string/ObjectId/int/long/integral double/Date/
 * BinData/object/array). Non-integral or huge doubles and Decimal128 use a simplified
 * 8-byte form that is order-preserving and round-trips here but is not MongoDB's exact
 * bytes (a documented gap: such `_id`s are rare and only need to be unique and decodable).
 */

const enum CType {
  MinKey = 10,
  Undefined = 15,
  Nullish = 20,
  NumericNaN = 30,
  NumericNegativeLargeMagnitude = 31,
  NumericNegative8ByteInt = 32,
  NumericNegative1ByteInt = 39,
  NumericZero = 41,
  NumericPositive1ByteInt = 43,
  NumericPositive8ByteInt = 50,
  NumericPositiveLargeMagnitude = 51,
  StringLike = 60,
  Object = 70,
  Array = 80,
  BinData = 90,
  OID = 100,
  BoolFalse = 110,
  BoolTrue = 111,
  Date = 120,
  Timestamp = 130,
  RegEx = 140,
  Code = 160,
  MaxKey = 240,
}

/** Generic ctype written before each field name inside an object, so objects order by (type, name, value). */
const GENERIC_NUMERIC = 30;
const END = 4;

/** Type bits recover the exact numeric / string type (KeyString orders 1, 1.0 and 1L the same). */
const enum NumBits {
  Int = 0,
  Double = 1,
  Long = 2,
  Decimal = 3,
}

export class KeyStringError extends Error {}

class TypeBitsWriter {
  readonly bits: number[] = [];
  appendNumber(kind: NumBits): void {
    this.bits.push(kind >> 1, kind & 1);
  }
  appendString(isSymbol: boolean): void {
    this.bits.push(isSymbol ? 1 : 0);
  }
  isAllZeros(): boolean {
    return this.bits.every((b) => b === 0);
  }
  /** Short form (<= 7 bits): one byte with the high bit clear; long form: 0x80|length, bytes. */
  toBytes(): Uint8Array {
    const packed: number[] = [];
    this.bits.forEach((bit, i) => {
      if (i % 8 === 0) packed.push(0);
      if (bit) packed[packed.length - 1] |= 1 << (i % 8);
    });
    if (this.bits.length <= 7) return Uint8Array.from(packed.length ? packed : [0]);
    if (packed.length > 0x7f) throw new KeyStringError('type bits too long');
    return Uint8Array.from([0x80 | packed.length, ...packed]);
  }
}

class TypeBitsReader {
  private readonly bits: number[] = [];
  private pos = 0;
  constructor(bytes: Uint8Array | undefined) {
    if (!bytes || bytes.length === 0) return;
    let data: Uint8Array;
    if (bytes[0] & 0x80) {
      const len = bytes[0] & 0x7f;
      data = bytes.subarray(1, 1 + len);
    } else {
      data = bytes.subarray(0, 1);
    }
    for (const byte of data) for (let i = 0; i < 8; i++) this.bits.push((byte >> i) & 1);
  }
  private next(): number {
    return this.bits[this.pos++] ?? 0; // missing bits read as zero, like MongoDB's all-zero type bits
  }
  readNumber(): NumBits {
    return ((this.next() << 1) | this.next()) as NumBits;
  }
  readString(): boolean {
    return this.next() === 1;
  }
}

class Writer {
  private readonly out: number[] = [];
  readonly typeBits = new TypeBitsWriter();

  byte(b: number): void {
    this.out.push(b & 0xff);
  }
  bytes(bs: ArrayLike<number>): void {
    for (let i = 0; i < bs.length; i++) this.out.push(bs[i] & 0xff);
  }
  uint64(v: bigint): void {
    for (let shift = 56n; shift >= 0n; shift -= 8n) this.byte(Number((v >> shift) & 0xffn));
  }
  cstring(s: string): void {
    const b = Buffer.from(s, 'utf8');
    if (b.includes(0)) throw new KeyStringError('embedded NUL in a name');
    this.bytes(b);
    this.byte(0);
  }
  /** Strings escape NUL as 00 FF so that the terminating 00 still sorts first. */
  escapedString(s: string): void {
    for (const b of Buffer.from(s, 'utf8')) {
      this.byte(b);
      if (b === 0) this.byte(0xff);
    }
    this.byte(0);
  }
  result(): Uint8Array {
    return Uint8Array.from(this.out);
  }
}

function magnitudeBytes(v: bigint): number[] {
  const bytes: number[] = [];
  while (v > 0n) {
    bytes.unshift(Number(v & 0xffn));
    v >>= 8n;
  }
  return bytes.length ? bytes : [0];
}

function writeInteger(w: Writer, value: bigint, kind: NumBits): void {
  w.typeBits.appendNumber(kind);
  if (value === 0n) {
    w.byte(CType.NumericZero);
    return;
  }
  const negative = value < 0n;
  // The low bit of the shifted magnitude flags a fractional part (always 0 for integers).
  const bytes = magnitudeBytes((negative ? -value : value) << 1n);
  if (negative) {
    w.byte(CType.NumericNegative1ByteInt - (bytes.length - 1));
    w.bytes(bytes.map((b) => ~b & 0xff));
  } else {
    w.byte(CType.NumericPositive1ByteInt + (bytes.length - 1));
    w.bytes(bytes);
  }
}

function writeDouble(w: Writer, v: number, kind: NumBits): void {
  if (Number.isNaN(v)) {
    w.typeBits.appendNumber(kind);
    w.byte(CType.NumericNaN);
    return;
  }
  if (Number.isInteger(v) && Math.abs(v) < 2 ** 53 && !Object.is(v, -0)) {
    writeInteger(w, BigInt(v), kind);
    return;
  }
  // Simplified form for fractional / huge values (see the file comment).
  w.typeBits.appendNumber(kind);
  const buf = Buffer.alloc(8);
  buf.writeDoubleBE(Math.abs(v));
  if (v < 0 || Object.is(v, -0)) {
    w.byte(CType.NumericNegativeLargeMagnitude);
    w.bytes([...buf].map((b) => ~b & 0xff));
  } else {
    w.byte(CType.NumericPositiveLargeMagnitude);
    w.bytes(buf);
  }
}

function genericCType(value: unknown): number {
  switch (bsonTypeOf(value)) {
    case 'int':
    case 'long':
    case 'double':
    case 'decimal':
      return GENERIC_NUMERIC;
    case 'bool':
      return CType.BoolFalse;
    default:
      return valueCType(value);
  }
}

function valueCType(value: unknown): number {
  switch (bsonTypeOf(value)) {
    case 'minKey':
      return CType.MinKey;
    case 'undefined':
      return CType.Undefined;
    case 'null':
      return CType.Nullish;
    case 'string':
    case 'symbol':
      return CType.StringLike;
    case 'object':
      return CType.Object;
    case 'array':
      return CType.Array;
    case 'binData':
      return CType.BinData;
    case 'objectId':
      return CType.OID;
    case 'bool':
      return value ? CType.BoolTrue : CType.BoolFalse;
    case 'date':
      return CType.Date;
    case 'timestamp':
      return CType.Timestamp;
    case 'regex':
      return CType.RegEx;
    case 'javascript':
      return CType.Code;
    case 'maxKey':
      return CType.MaxKey;
    default:
      return GENERIC_NUMERIC;
  }
}

function writeValue(w: Writer, value: unknown): void {
  const type = bsonTypeOf(value);
  switch (type) {
    case 'minKey':
      return w.byte(CType.MinKey);
    case 'maxKey':
      return w.byte(CType.MaxKey);
    case 'undefined':
      return w.byte(CType.Undefined);
    case 'null':
      return w.byte(CType.Nullish);
    case 'bool':
      return w.byte(value ? CType.BoolTrue : CType.BoolFalse);
    case 'int':
      return writeInteger(
        w,
        BigInt(typeof value === 'number' ? value : (value as Int32).value),
        NumBits.Int,
      );
    case 'long':
      return writeInteger(
        w,
        typeof value === 'bigint' ? value : (value as Long).toBigInt(),
        NumBits.Long,
      );
    case 'double':
      return writeDouble(
        w,
        typeof value === 'number' ? value : (value as Double).value,
        NumBits.Double,
      );
    case 'decimal':
      return writeDouble(w, Number((value as Decimal128).toString()), NumBits.Decimal);
    case 'string':
    case 'symbol':
      w.byte(CType.StringLike);
      w.typeBits.appendString(type === 'symbol');
      return w.escapedString(
        typeof value === 'string' ? value : String((value as { value: string }).value),
      );
    case 'objectId':
      w.byte(CType.OID);
      return w.bytes((value as ObjectId).id);
    case 'binData': {
      const bin = value instanceof Binary ? value : new Binary(value as Uint8Array);
      const data = bin.buffer.subarray(0, bin.position);
      w.byte(CType.BinData);
      if (data.length < 0xff) w.byte(data.length);
      else {
        w.byte(0xff);
        w.bytes([
          (data.length >>> 24) & 0xff,
          (data.length >>> 16) & 0xff,
          (data.length >>> 8) & 0xff,
          data.length & 0xff,
        ]);
      }
      w.byte(bin.sub_type);
      return w.bytes(data);
    }
    case 'date': {
      w.byte(CType.Date);
      // Signed millis with the sign bit flipped so negative dates sort first.
      return w.uint64(BigInt.asUintN(64, BigInt((value as Date).getTime())) ^ (1n << 63n));
    }
    case 'timestamp': {
      const ts = value as Timestamp;
      w.byte(CType.Timestamp);
      return w.uint64((BigInt(ts.t) << 32n) | BigInt(ts.i));
    }
    case 'regex': {
      const re =
        value instanceof RegExp ? new BSONRegExp(value.source, value.flags) : (value as BSONRegExp);
      w.byte(CType.RegEx);
      w.cstring(re.pattern);
      return w.cstring(re.options);
    }
    case 'javascript':
      w.byte(CType.Code);
      return w.escapedString(String((value as Code).code));
    case 'object': {
      w.byte(CType.Object);
      writeObjectBody(w, value as Document);
      return;
    }
    case 'array': {
      w.byte(CType.Array);
      for (const item of value as unknown[]) writeValue(w, item);
      return w.byte(0);
    }
    default:
      throw new KeyStringError(`cannot encode BSON type ${type} in a resume token`);
  }
}

function writeObjectBody(w: Writer, doc: Document): void {
  for (const [name, v] of Object.entries(doc)) {
    if (v === undefined) continue;
    w.byte(genericCType(v));
    w.cstring(name);
    writeValue(w, v);
  }
  w.byte(0);
}

/** Encodes a list of values as a KeyString (ascending ordering, kEnd discriminator). */
export function encodeKeyString(values: unknown[]): { bytes: Uint8Array; typeBits?: Uint8Array } {
  const w = new Writer();
  for (const v of values) writeValue(w, v);
  w.byte(END);
  return {
    bytes: w.result(),
    typeBits: w.typeBits.isAllZeros() ? undefined : w.typeBits.toBytes(),
  };
}

class Reader {
  pos = 0;
  constructor(
    private readonly buf: Uint8Array,
    readonly typeBits: TypeBitsReader,
  ) {}
  get done(): boolean {
    return this.pos >= this.buf.length;
  }
  peek(): number {
    if (this.pos >= this.buf.length) throw new KeyStringError('unexpected end of KeyString');
    return this.buf[this.pos];
  }
  byte(): number {
    const b = this.peek();
    this.pos += 1;
    return b;
  }
  take(n: number): Uint8Array {
    if (this.pos + n > this.buf.length) throw new KeyStringError('unexpected end of KeyString');
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  uint64(): bigint {
    let v = 0n;
    for (const b of this.take(8)) v = (v << 8n) | BigInt(b);
    return v;
  }
  cstring(): string {
    const start = this.pos;
    while (this.peek() !== 0) this.pos += 1;
    const s = Buffer.from(this.buf.subarray(start, this.pos)).toString('utf8');
    this.pos += 1;
    return s;
  }
  escapedString(): string {
    const bytes: number[] = [];
    for (;;) {
      const b = this.byte();
      if (b !== 0) {
        bytes.push(b);
        continue;
      }
      if (!this.done && this.peek() === 0xff) {
        this.pos += 1;
        bytes.push(0);
        continue;
      }
      return Buffer.from(bytes).toString('utf8');
    }
  }
}

function numberOf(value: bigint, kind: NumBits): unknown {
  switch (kind) {
    case NumBits.Int:
      return new Int32(Number(value));
    case NumBits.Long:
      return Long.fromBigInt(value);
    case NumBits.Double:
      return new Double(Number(value));
    default:
      return Decimal128.fromString(value.toString());
  }
}

function floatOf(value: number, kind: NumBits): unknown {
  if (kind === NumBits.Decimal)
    return Decimal128.fromString(Number.isNaN(value) ? 'NaN' : String(value));
  return new Double(value);
}

function readValue(r: Reader, ctype: number): unknown {
  if (ctype >= CType.NumericNaN && ctype <= CType.NumericPositiveLargeMagnitude) {
    const kind = r.typeBits.readNumber();
    if (ctype === CType.NumericZero) return numberOf(0n, kind);
    if (ctype === CType.NumericNaN) return floatOf(NaN, kind);
    if (
      ctype === CType.NumericPositiveLargeMagnitude ||
      ctype === CType.NumericNegativeLargeMagnitude
    ) {
      const negative = ctype === CType.NumericNegativeLargeMagnitude;
      const raw = Buffer.from(r.take(8).map((b) => (negative ? ~b & 0xff : b)));
      const v = raw.readDoubleBE(0);
      return floatOf(negative ? -v : v, kind);
    }
    const positive =
      ctype >= CType.NumericPositive1ByteInt && ctype <= CType.NumericPositive8ByteInt;
    const negative =
      ctype >= CType.NumericNegative8ByteInt && ctype <= CType.NumericNegative1ByteInt;
    if (!positive && !negative)
      throw new KeyStringError(`unsupported numeric KeyString type ${ctype}`);
    const n = positive
      ? ctype - CType.NumericPositive1ByteInt + 1
      : CType.NumericNegative1ByteInt - ctype + 1;
    let shifted = 0n;
    for (const b of r.take(n)) shifted = (shifted << 8n) | BigInt(negative ? ~b & 0xff : b);
    if (shifted & 1n) throw new KeyStringError('fractional KeyString numbers are not supported');
    const magnitude = shifted >> 1n;
    return numberOf(negative ? -magnitude : magnitude, kind);
  }
  switch (ctype) {
    case CType.MinKey:
      return new MinKey();
    case CType.MaxKey:
      return new MaxKey();
    case CType.Undefined:
      return undefined;
    case CType.Nullish:
      return null;
    case CType.BoolFalse:
      return false;
    case CType.BoolTrue:
      return true;
    case CType.StringLike: {
      const isSymbol = r.typeBits.readString();
      const s = r.escapedString();
      return isSymbol ? { _bsontype: 'BSONSymbol', value: s } : s;
    }
    case CType.OID:
      return new ObjectId(Buffer.from(r.take(12)));
    case CType.BinData: {
      let len = r.byte();
      if (len === 0xff) {
        const b = r.take(4);
        len = ((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]) >>> 0;
      }
      const subType = r.byte();
      return new Binary(Buffer.from(r.take(len)), subType);
    }
    case CType.Date: {
      const v = BigInt.asIntN(64, r.uint64() ^ (1n << 63n));
      return new Date(Number(v));
    }
    case CType.Timestamp: {
      const v = r.uint64();
      return new Timestamp({ t: Number(v >> 32n), i: Number(v & 0xffffffffn) });
    }
    case CType.RegEx: {
      const pattern = r.cstring();
      return new BSONRegExp(pattern, r.cstring());
    }
    case CType.Code:
      return new Code(r.escapedString());
    case CType.Object: {
      const doc: Document = {};
      while (r.peek() !== 0) {
        r.byte(); // generic ctype, implied by the value's own ctype
        const name = r.cstring();
        doc[name] = readValue(r, r.byte());
      }
      r.byte();
      return doc;
    }
    case CType.Array: {
      const arr: unknown[] = [];
      while (r.peek() !== 0) arr.push(readValue(r, r.byte()));
      r.byte();
      return arr;
    }
    default:
      throw new KeyStringError(`unknown KeyString type byte ${ctype}`);
  }
}

/** Decodes the values of a KeyString made by `encodeKeyString` (or by MongoDB, for the supported types). */
export function decodeKeyString(bytes: Uint8Array, typeBits?: Uint8Array): unknown[] {
  const r = new Reader(bytes, new TypeBitsReader(typeBits));
  const values: unknown[] = [];
  for (;;) {
    const ctype = r.byte();
    if (ctype === END) break;
    values.push(readValue(r, ctype));
  }
  if (!r.done) throw new KeyStringError('trailing bytes after the KeyString end marker');
  return values;
}
