import { BSON, type Document } from 'bson';
import { decodeExact, encode, rememberStoredBytes, storedBytesOf } from '../bson/codec';
import { elementsOf, int32At, type BsonElement } from '../bson/partial';

/**
 * MongoDB wire protocol framing (https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/).
 * Every message starts with a 16-byte little-endian header: messageLength, requestID, responseTo, opCode.
 */
export const OpCode = {
  OP_REPLY: 1,
  OP_QUERY: 2004,
  OP_COMPRESSED: 2012,
  OP_MSG: 2013,
} as const;

export const HEADER_SIZE = 16;
/** hello's maxMessageSizeBytes: the largest message either side may send. */
export const MAX_MESSAGE_SIZE = 48_000_000;
/** hello's maxBsonObjectSize. */
export const MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024;

/** OP_MSG flagBits. Bits 0-15 are "required": a receiver must reject unknown ones. */
export const MsgFlags = {
  checksumPresent: 1 << 0,
  moreToCome: 1 << 1,
  exhaustAllowed: 1 << 16,
} as const;
const KNOWN_REQUIRED_FLAGS = MsgFlags.checksumPresent | MsgFlags.moreToCome;

/** OP_REPLY responseFlags. */
export const ReplyFlags = { QueryFailure: 1 << 1, AwaitCapable: 1 << 3 } as const;

export interface MessageHeader {
  length: number;
  requestId: number;
  responseTo: number;
  opCode: number;
}

/** A decoded client request, ready for the command dispatcher. */
export type WireRequest =
  | {
      kind: 'msg';
      header: MessageHeader;
      /** Kind-0 body with kind-1 document sequences merged in as arrays. */
      body: Document;
      moreToCome: boolean;
      exhaustAllowed: boolean;
    }
  | {
      kind: 'query';
      header: MessageHeader;
      /** "db.collection" from OP_QUERY (commands use "<db>.$cmd"). */
      fullCollectionName: string;
      query: Document;
    }
  | { kind: 'compressed'; header: MessageHeader }
  | { kind: 'unsupported'; header: MessageHeader };

/**
 * Malformed input. `fatal` means the stream can no longer be trusted (bad framing):
 * the connection must be closed; otherwise an error reply is sent and the connection lives on.
 */
export class WireProtocolError extends Error {
  constructor(
    message: string,
    readonly fatal: boolean,
    readonly code = 17 /* ProtocolError */,
  ) {
    super(message);
    this.name = 'WireProtocolError';
  }
}

export function readHeader(buf: Buffer, offset = 0): MessageHeader {
  return {
    length: buf.readInt32LE(offset),
    requestId: buf.readInt32LE(offset + 4),
    responseTo: buf.readInt32LE(offset + 8),
    opCode: buf.readInt32LE(offset + 12),
  };
}

/**
 * Splits a byte stream into whole messages. Framing errors (a length outside
 * [16, 48,000,000]) are fatal because the next message boundary is unknown.
 */
export class MessageFramer {
  private chunks: Buffer[] = [];
  private buffered = 0;

  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const messages: Buffer[] = [];
    for (;;) {
      if (this.buffered < 4) break;
      const head = this.peek(4);
      const length = head.readInt32LE(0);
      if (length < HEADER_SIZE || length > MAX_MESSAGE_SIZE) {
        throw new WireProtocolError(
          `invalid message length ${length}: must be between ${HEADER_SIZE} and ${MAX_MESSAGE_SIZE}`,
          true,
        );
      }
      if (this.buffered < length) break;
      messages.push(this.take(length));
    }
    return messages;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0].length >= n) return this.chunks[0];
    const all = Buffer.concat(this.chunks);
    this.chunks = [all];
    return all;
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    const message = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.buffered = rest.length;
    return message;
  }
}

/**
 * Reads one BSON document at `offset`, checking its declared size against the bounds. `owned`:
 * `buf` is already a private copy (a document sequence's), decoded in place.
 */
function readDocument(
  buf: Uint8Array,
  offset: number,
  end: number,
  owned = false,
): { doc: Document; size: number; bytes: Uint8Array } {
  if (offset + 5 > end) throw new WireProtocolError('truncated BSON document', false, 22);
  const size = int32At(buf, offset);
  if (size < 5 || offset + size > end) {
    throw new WireProtocolError(`invalid BSON document size ${size}`, false, 22);
  }
  if (size > MAX_BSON_OBJECT_SIZE + 16 * 1024) {
    throw new WireProtocolError(`BSON document too large (${size} bytes)`, false, 10334);
  }
  // Decode from a private copy of the document's bytes: js-bson's Binary values are views of
  // the input, and a view of `buf` would keep the whole (up to 48 MB) message alive for as long
  // as any stored document holds one of its Binary values.
  let own = buf.subarray(offset, offset + size);
  if (!owned) {
    own = new Uint8Array(size);
    own.set(buf.subarray(offset, offset + size));
  }
  try {
    return { doc: decodeExact(own), size, bytes: own };
  } catch (err) {
    throw new WireProtocolError(
      `invalid BSON: ${(err as Error).message}`,
      false,
      22 /* InvalidBSON */,
    );
  }
}

/**
 * An `insert` body's documents remember the bytes the client sent (views of the body's private
 * copy), so the insert stores those bytes, as mongod does, instead of encoding each decoding
 * again (see `ownedBytesOf`). The decoded documents are never mutated on the way: an insert that
 * must put `_id` in front builds a new document. Anything unexpected leaves them unremembered.
 */
function rememberInsertedBytes(body: Document, bytes: Uint8Array): void {
  const documents = body.documents;
  if (!Array.isArray(documents)) return;
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let array: BsonElement | undefined;
  for (const element of elementsOf(bytes)) {
    if (text.toString('utf8', element.nameStart, element.nameEnd) !== 'documents') continue;
    array = element;
    break;
  }
  if (array?.type !== 0x04) return;
  const views: Uint8Array[] = [];
  for (const element of elementsOf(bytes, array.valueStart)) {
    if (element.type !== 0x03) return; // not a document: the insert fails on it anyway
    views.push(bytes.subarray(element.valueStart, element.valueEnd));
  }
  if (views.length !== documents.length) return;
  views.forEach((view, i) => rememberStoredBytes(documents[i] as Document, view));
}

function readCString(buf: Buffer, offset: number, end: number): { value: string; next: number } {
  const zero = buf.indexOf(0, offset);
  if (zero < 0 || zero >= end) throw new WireProtocolError('unterminated C string', false);
  return { value: buf.toString('utf8', offset, zero), next: zero + 1 };
}

/** Decodes one complete message (as returned by MessageFramer). */
export function decodeMessage(message: Buffer): WireRequest {
  const header = readHeader(message);
  switch (header.opCode) {
    case OpCode.OP_MSG:
      return decodeOpMsg(message, header);
    case OpCode.OP_QUERY:
      return decodeOpQuery(message, header);
    case OpCode.OP_COMPRESSED:
      return { kind: 'compressed', header };
    default:
      return { kind: 'unsupported', header };
  }
}

function decodeOpMsg(message: Buffer, header: MessageHeader): WireRequest {
  if (message.length < HEADER_SIZE + 5) throw new WireProtocolError('OP_MSG too short', false);
  const flags = message.readUInt32LE(HEADER_SIZE);
  const unknownRequired = flags & 0xffff & ~KNOWN_REQUIRED_FLAGS;
  if (unknownRequired) {
    throw new WireProtocolError(
      `OP_MSG contains unknown required flag bits ${unknownRequired}`,
      false,
    );
  }
  // The CRC-32C trailer is accepted but not verified: TCP already protects local traffic.
  const end = flags & MsgFlags.checksumPresent ? message.length - 4 : message.length;
  let offset = HEADER_SIZE + 4;
  let body: Document | undefined;
  const sequences: Array<{ id: string; docs: Document[] }> = [];
  while (offset < end) {
    const kind = message[offset];
    offset += 1;
    if (kind === 0) {
      if (body) throw new WireProtocolError('OP_MSG contains more than one body section', false);
      const { doc, size, bytes } = readDocument(message, offset, end);
      body = doc;
      if (Object.keys(doc)[0] === 'insert') rememberInsertedBytes(doc, bytes);
      offset += size;
    } else if (kind === 1) {
      if (offset + 4 > end) throw new WireProtocolError('truncated document sequence', false);
      const size = message.readInt32LE(offset);
      const seqEnd = offset + size;
      if (size < 5 || seqEnd > end)
        throw new WireProtocolError(`invalid document sequence size ${size}`, false);
      const { value: id, next } = readCString(message, offset + 4, seqEnd);
      // One private copy of the whole sequence, its documents decoded in place (as the body's
      // are). A copy per document cost an allocation each: inserts sent as a sequence took
      // 44-46 µs of CPU per 1 KB document against 38-39 for the same documents in the body.
      const own = new Uint8Array(seqEnd - next);
      own.set(message.subarray(next, seqEnd));
      const docs: Document[] = [];
      let p = 0;
      while (p < own.length) {
        const { doc, size: docSize } = readDocument(own, p, own.length, true);
        // An insert's documents keep the bytes they came in (see rememberInsertedBytes).
        if (id === 'documents') rememberStoredBytes(doc, own.subarray(p, p + docSize));
        docs.push(doc);
        p += docSize;
      }
      sequences.push({ id, docs });
      offset = seqEnd;
    } else {
      throw new WireProtocolError(`OP_MSG contains unknown section kind ${kind}`, false);
    }
  }
  if (!body) throw new WireProtocolError('OP_MSG does not contain a body section', false);
  for (const { id, docs } of sequences) {
    if (Object.prototype.hasOwnProperty.call(body, id)) {
      throw new WireProtocolError(
        `duplicate field '${id}' in body and document sequence`,
        false,
        40413,
      );
    }
    body[id] = docs;
  }
  return {
    kind: 'msg',
    header,
    body,
    moreToCome: (flags & MsgFlags.moreToCome) !== 0,
    exhaustAllowed: (flags & MsgFlags.exhaustAllowed) !== 0,
  };
}

function decodeOpQuery(message: Buffer, header: MessageHeader): WireRequest {
  const end = message.length;
  let offset = HEADER_SIZE + 4; // skip flags
  const { value: fullCollectionName, next } = readCString(message, offset, end);
  offset = next + 8; // numberToSkip, numberToReturn
  const { doc } = readDocument(message, offset, end);
  // Legacy drivers may wrap the command as {$query: {...}, $readPreference: ...}.
  const query = doc.$query && typeof doc.$query === 'object' ? (doc.$query as Document) : doc;
  return { kind: 'query', header, fullCollectionName, query };
}

function writeHeader(buf: Buffer, requestId: number, responseTo: number, opCode: number): void {
  buf.writeInt32LE(buf.length, 0);
  buf.writeInt32LE(requestId, 4);
  buf.writeInt32LE(responseTo, 8);
  buf.writeInt32LE(opCode, 12);
}

/**
 * A cursor reply (`{cursor: {firstBatch | nextBatch, …}, …}`) whose batch holds stored documents,
 * encoded with each such document's stored bytes copied as they are (see `storedBytesOf`): a
 * scan then never encodes what it read. Null when the reply is not one (encode it whole).
 */
function cursorReplyPieces(doc: Document): Uint8Array[] | null {
  const cursor = doc.cursor as Document | undefined;
  if (cursor === null || typeof cursor !== 'object') return null;
  const key = Array.isArray(cursor.firstBatch)
    ? 'firstBatch'
    : Array.isArray(cursor.nextBatch)
      ? 'nextBatch'
      : null;
  if (!key) return null;
  const batch = cursor[key] as Document[];
  if (!batch.some((d) => storedBytesOf(d) !== undefined)) return null;
  const cursorPieces = documentOf(
    Object.keys(cursor).map((field) =>
      field === key ? elementOf(0x04, field, arrayOf(batch)) : encodedElement(field, cursor[field]),
    ),
  );
  const pieces = documentOf(
    Object.keys(doc).map((name) =>
      name === 'cursor' ? elementOf(0x03, name, cursorPieces) : encodedElement(name, doc[name]),
    ),
  );
  // Copied once, into the message (encodeOpMsg), not at every level of nesting.
  return pieces;
}

/**
 * The documents of a batch as a BSON array, as pieces: stored bytes as they are (not copied
 * here), else encoded; the array's length, element headers and terminator are views of one small
 * buffer. The reply is copied once, into the message.
 */
function arrayOf(batch: Document[]): Uint8Array[] {
  const bytes = batch.map((d) => storedBytesOf(d) ?? encode(d));
  let glueSize = 5;
  let size = 5;
  for (let i = 0; i < bytes.length; i++) {
    const header = 2 + String(i).length;
    glueSize += header;
    size += header + bytes[i]!.length;
  }
  const glue = Buffer.allocUnsafe(glueSize);
  glue.writeInt32LE(size, 0);
  const pieces: Uint8Array[] = [glue.subarray(0, 4)];
  let at = 4;
  for (let i = 0; i < bytes.length; i++) {
    const from = at;
    glue[at++] = 0x03;
    at += glue.write(String(i), at, 'latin1');
    glue[at++] = 0;
    pieces.push(glue.subarray(from, at), bytes[i]!);
  }
  glue[at] = 0;
  pieces.push(glue.subarray(at, at + 1));
  return pieces;
}

/** One element `name: value`, encoded as the whole-document encoder would. */
function encodedElement(name: string, value: unknown): Uint8Array[] {
  const bytes = encode({ [name]: value });
  return [bytes.subarray(4, bytes.length - 1)];
}

/** One element: its type, its name, then its value's pieces. */
function elementOf(type: number, name: string, value: Uint8Array[]): Uint8Array[] {
  const header = Buffer.from(` ${name}\0`, 'utf8'); // the type byte, then the name
  header[0] = type;
  return [header, ...value];
}

/** A BSON document from its elements' pieces: its length, the elements, the terminator. */
function documentOf(elements: Uint8Array[][]): Uint8Array[] {
  let size = 5;
  for (const element of elements) for (const piece of element) size += piece.length;
  const length = Buffer.allocUnsafe(4);
  length.writeInt32LE(size, 0);
  return [length, ...elements.flat(), Buffer.from([0])];
}

/** OP_MSG reply with a single kind-0 section. */
export function encodeOpMsg(
  doc: Document,
  requestId: number,
  responseTo: number,
  flags = 0,
): Buffer {
  const pieces = cursorReplyPieces(doc) ?? [encode(doc)];
  let size = HEADER_SIZE + 4 + 1;
  for (const piece of pieces) size += piece.length;
  const buf = Buffer.allocUnsafe(size);
  writeHeader(buf, requestId, responseTo, OpCode.OP_MSG);
  buf.writeUInt32LE(flags >>> 0, HEADER_SIZE);
  buf[HEADER_SIZE + 4] = 0;
  let at = HEADER_SIZE + 5;
  for (const piece of pieces) {
    buf.set(piece, at);
    at += piece.length;
  }
  return buf;
}

/** OP_REPLY carrying one document (answer to a legacy OP_QUERY handshake). */
export function encodeOpReply(
  doc: Document,
  requestId: number,
  responseTo: number,
  responseFlags = 0,
): Buffer {
  const bson = BSON.serialize(doc, { checkKeys: false });
  const buf = Buffer.allocUnsafe(HEADER_SIZE + 20 + bson.length);
  writeHeader(buf, requestId, responseTo, OpCode.OP_REPLY);
  buf.writeInt32LE(responseFlags, HEADER_SIZE);
  buf.writeBigInt64LE(0n, HEADER_SIZE + 4); // cursorID
  buf.writeInt32LE(0, HEADER_SIZE + 12); // startingFrom
  buf.writeInt32LE(1, HEADER_SIZE + 16); // numberReturned
  buf.set(bson, HEADER_SIZE + 20);
  return buf;
}
