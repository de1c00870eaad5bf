import { BSON, Binary, Int32, Long, Timestamp, type Document } from 'bson';
import { bsonSize, decodeExact, encode, rememberStoredBytes } from '../bson/codec';
import { decodeMessage, encodeOpMsg, HEADER_SIZE, OpCode, WireProtocolError } from './protocol';

/** An OP_MSG with a body section and one document sequence, as a driver sends an insert. */
function opMsg(body: Document, id: string, documents: Uint8Array[]): Buffer {
  const name = Buffer.from(`${id}\0`, 'utf8');
  const sequenceSize = 4 + name.length + documents.reduce((n, d) => n + d.length, 0);
  const sequenceHeader = Buffer.alloc(4);
  sequenceHeader.writeInt32LE(sequenceSize, 0);
  const parts = [
    Buffer.alloc(HEADER_SIZE),
    Buffer.alloc(4), // flagBits
    Buffer.from([0]),
    Buffer.from(BSON.serialize(body)),
    Buffer.from([1]),
    sequenceHeader,
    name,
    ...documents.map((d) => Buffer.from(d)),
  ];
  const message = Buffer.concat(parts);
  message.writeInt32LE(message.length, 0);
  message.writeInt32LE(7, 4);
  message.writeInt32LE(0, 8);
  message.writeInt32LE(OpCode.OP_MSG, 12);
  return message;
}

describe('OP_MSG document sequences', () => {
  const documents = [
    { _id: new Int32(1), blob: new Binary(Buffer.from('first'), 0), n: Long.fromNumber(5) },
    { _id: 'two', nested: { a: [new Int32(1), 2.5] }, blob: new Binary(Buffer.from('x'), 4) },
    { _id: Long.fromNumber(3) },
  ].map((d) => BSON.serialize(d));

  it('decodes every document of a sequence into the body, each byte for byte', () => {
    const request = decodeMessage(opMsg({ insert: 'c', $db: 'd' }, 'documents', documents));
    if (request.kind !== 'msg') throw new Error(`decoded as ${request.kind}`);
    const decoded = request.body.documents as Document[];
    expect(decoded).toHaveLength(3);
    // Exact types: re-encoding each gives the bytes that were sent.
    decoded.forEach((doc, i) =>
      expect(Buffer.from(BSON.serialize(doc))).toEqual(Buffer.from(documents[i]!)),
    );
  });

  it('keeps no view of the message: values decoded stay as sent when its buffer is reused', () => {
    const message = opMsg({ insert: 'c', $db: 'd' }, 'documents', documents);
    const request = decodeMessage(message);
    if (request.kind !== 'msg') throw new Error(`decoded as ${request.kind}`);
    message.fill(0); // the wire server reuses its read buffers
    const first = (request.body.documents as Document[])[0]!;
    expect(Buffer.from((first.blob as Binary).buffer).toString()).toBe('first');
  });

  it('refuses a document that runs past the end of its sequence, by name', () => {
    const truncated = Buffer.from(documents[2]!);
    truncated.writeInt32LE(truncated.length + 8, 0); // declares more bytes than the sequence holds
    expect(() =>
      decodeMessage(opMsg({ insert: 'c', $db: 'd' }, 'documents', [documents[0]!, truncated])),
    ).toThrow(WireProtocolError);
  });
});

describe('cursor replies of stored documents', () => {
  /** A stored document as a collection holds it: its bytes, and their shared decoding. */
  const stored = (bytes: Uint8Array): Document => {
    const doc = decodeExact(bytes);
    rememberStoredBytes(doc, bytes);
    return doc;
  };
  /** The reply's body: the OP_MSG after its header, flags and section kind. */
  const body = (message: Buffer): Buffer => message.subarray(HEADER_SIZE + 5);

  it('encode as the whole reply would, for first and later batches, beside other documents', () => {
    const docs = [
      stored(encode({ _id: new Int32(1), blob: new Binary(Buffer.from('x'), 4), n: 2.5 })),
      { _id: 'not stored', at: new Timestamp({ t: 5, i: 1 }) },
      stored(encode({ _id: Long.fromNumber(3), nested: { a: [new Int32(1), null] } })),
    ];
    for (const key of ['firstBatch', 'nextBatch']) {
      const reply = {
        cursor: { [key]: docs, postBatchResumeToken: { _data: '82' }, id: Long.ZERO, ns: 'd.c' },
        ok: 1,
        operationTime: new Timestamp({ t: 9, i: 2 }),
        $clusterTime: { clusterTime: new Timestamp({ t: 9, i: 2 }), signature: {} },
      };
      expect(body(encodeOpMsg(reply, 1, 2))).toEqual(Buffer.from(encode(reply)));
    }
    // An empty batch, and one without stored documents, take the plain encoder.
    const empty = { cursor: { firstBatch: [], id: Long.ZERO, ns: 'd.c' }, ok: 1 };
    expect(body(encodeOpMsg(empty, 1, 2))).toEqual(Buffer.from(encode(empty)));
  });

  it('hand out each stored document byte for byte, as mongod does', () => {
    // A string that is not valid UTF-8: decoding replaces the byte, encoding again would differ.
    const bytes = Buffer.from(encode({ _id: 1, s: 'ab' }));
    bytes[bytes.indexOf('ab', 0, 'latin1')] = 0xff;
    const doc = stored(bytes);
    expect(Buffer.from(encode(doc))).not.toEqual(bytes);
    expect(bsonSize(doc)).toBe(bytes.length);
    const reply = body(
      encodeOpMsg({ cursor: { firstBatch: [doc], id: Long.ZERO, ns: 'd.c' }, ok: 1 }, 1, 2),
    );
    expect(reply.includes(bytes)).toBe(true);
    const decoded = decodeExact(reply) as { cursor: { firstBatch: Document[] } };
    expect(decoded.cursor.firstBatch).toHaveLength(1);
    expect(decoded.cursor.firstBatch[0]!.s).toBe('\ufffdb');
  });
});
