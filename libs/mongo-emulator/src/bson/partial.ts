import type { Document } from 'bson';
import { isDocument } from './paths';
import { decodeExact } from './codec';

/**
 * Partial decoding: the top-level fields of a stored document that a predicate reads, without
 * decoding the rest. A collection scan with a filter on one field then builds a handful of
 * values per document instead of the whole object graph; only matching documents are decoded
 * in full.
 */

/**
 * The top-level field names a query filter reads (`a.b` reads `a`), or undefined when it may
 * read the whole document (`$expr`, `$jsonSchema`, or anything not recognised here).
 */
export function filterFields(filter: Document): Set<string> | undefined {
  const out = new Set<string>();
  const visit = (f: Document): boolean => {
    for (const key of Object.keys(f)) {
      if (!key.startsWith('$')) {
        const dot = key.indexOf('.');
        out.add(dot < 0 ? key : key.slice(0, dot));
        continue;
      }
      switch (key) {
        case '$and':
        case '$or':
        case '$nor': {
          const branches: unknown = f[key];
          if (!Array.isArray(branches)) return false;
          for (const branch of branches) if (!isDocument(branch) || !visit(branch)) return false;
          break;
        }
        case '$comment':
          break;
        default:
          return false;
      }
    }
    return true;
  };
  return visit(filter) ? out : undefined;
}

/** A compiled set of field names, matched against element names without decoding them. */
export class FieldSet {
  private readonly names: Uint8Array[];

  constructor(fields: Iterable<string>) {
    this.names = [...new Set(fields)].map((f) => new Uint8Array(Buffer.from(f, 'utf8')));
  }

  get size(): number {
    return this.names.length;
  }

  /** True when bytes[start, end) is one of the names. */
  has(bytes: Uint8Array, start: number, end: number): boolean {
    const len = end - start;
    outer: for (const name of this.names) {
      if (name.length !== len) continue;
      for (let i = 0; i < len; i++) if (name[i] !== bytes[start + i]) continue outer;
      return true;
    }
    return false;
  }
}

/** The little-endian int32 at `i` (a BSON length or Int32). */
export function int32At(bytes: Uint8Array, i: number): number {
  return bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24);
}

function cstringEnd(bytes: Uint8Array, i: number, end: number): number {
  while (i < end && bytes[i] !== 0) i++;
  return i;
}

/** Bytes taken by the value of an element of `type` starting at `i`; -1 for an unknown type. */
function valueSize(bytes: Uint8Array, type: number, i: number, end: number): number {
  switch (type) {
    case 0x01: // double
    case 0x09: // UTC datetime
    case 0x11: // timestamp
    case 0x12: // int64
      return 8;
    case 0x02: // string
    case 0x0d: // JavaScript code
    case 0x0e: // symbol
      return 4 + int32At(bytes, i);
    case 0x03: // document
    case 0x04: // array
    case 0x0f: // code with scope
      return int32At(bytes, i);
    case 0x05: // binary
      return 5 + int32At(bytes, i);
    case 0x06: // undefined
    case 0x0a: // null
    case 0xff: // MinKey
    case 0x7f: // MaxKey
      return 0;
    case 0x07: // ObjectId
      return 12;
    case 0x08: // boolean
      return 1;
    case 0x0b: {
      // regular expression: pattern and options, two C strings
      const patternEnd = cstringEnd(bytes, i, end);
      return cstringEnd(bytes, patternEnd + 1, end) + 1 - i;
    }
    case 0x0c: // DBPointer
      return 4 + int32At(bytes, i) + 12;
    case 0x10: // int32
      return 4;
    case 0x13: // decimal128
      return 16;
    default:
      return -1;
  }
}

/** One element of a BSON document's bytes: its type, where its name and its value lie. */
export interface BsonElement {
  type: number;
  nameStart: number;
  nameEnd: number;
  valueStart: number;
  valueEnd: number;
}

/**
 * The elements of the document (or array) whose bytes start at `at` in `bytes`, in order. Stops
 * early at an element it cannot size (a type this scanner does not know): callers that must see
 * every element compare what they got with what they expect.
 */
export function* elementsOf(bytes: Uint8Array, at = 0): Generator<BsonElement> {
  const end = at + int32At(bytes, at) - 1; // the document's terminating zero
  let i = at + 4;
  while (i < end) {
    const type = bytes[i];
    const nameEnd = cstringEnd(bytes, i + 1, end);
    const size = valueSize(bytes, type, nameEnd + 1, end);
    if (size < 0 || nameEnd >= end) return;
    const valueStart = nameEnd + 1;
    yield { type, nameStart: i + 1, nameEnd, valueStart, valueEnd: valueStart + size };
    i = valueStart + size;
  }
}

/**
 * The top-level elements of `bytes` whose names are in `fields`, decoded exactly as a document
 * (in their stored order); fields the document lacks are absent. Falls back to decoding the
 * whole document when an element cannot be sized (a type this scanner does not know).
 */
export function decodeFields(bytes: Uint8Array, fields: FieldSet): Document {
  if (fields.size === 0) return {};
  const end = bytes.length - 1; // the document's terminating zero
  const ranges: number[] = [];
  let total = 0;
  let i = 4;
  while (i < end) {
    const start = i;
    const type = bytes[i];
    const nameEnd = cstringEnd(bytes, i + 1, end);
    const size = valueSize(bytes, type, nameEnd + 1, end);
    if (size < 0 || nameEnd >= end) return decodeExact(bytes);
    i = nameEnd + 1 + size;
    if (fields.has(bytes, start + 1, nameEnd)) {
      ranges.push(start, i);
      total += i - start;
      if (ranges.length / 2 === fields.size) break;
    }
  }
  if (total === 0) return {};
  const out = new Uint8Array(total + 5);
  out[0] = (total + 5) & 0xff;
  out[1] = ((total + 5) >> 8) & 0xff;
  out[2] = ((total + 5) >> 16) & 0xff;
  out[3] = ((total + 5) >> 24) & 0xff;
  let at = 4;
  for (let r = 0; r < ranges.length; r += 2) {
    out.set(bytes.subarray(ranges[r], ranges[r + 1]), at);
    at += ranges[r + 1] - ranges[r];
  }
  return decodeExact(out);
}
