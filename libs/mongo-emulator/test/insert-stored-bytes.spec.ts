import { connect, type Socket } from 'node:net';
import { BSON, MongoClient, ObjectId, type Document } from 'mongodb';
import { HEADER_SIZE, OpCode } from '../src/wire/protocol';
import { TestCluster } from './helpers/cluster';
import { describeEmulatorOnly } from './helpers/real-server';

/**
 * An insert stores each document as the client sent its bytes (mongod does; the emulator used
 * to store the encoding of its decoding): with `_id` first, the stored bytes are the sent ones,
 * whether the documents came in the command body or in a document sequence. A document whose
 * `_id` is not first, or that has none, is stored with `_id` moved or added in front.
 */

/** `{_id: id, s: 'ab'}` with the string's first byte made invalid UTF-8 (decoding replaces it). */
function invalidUtf8(id: number): Buffer {
  const bytes = Buffer.from(BSON.serialize({ _id: id, s: 'ab' }));
  bytes[bytes.indexOf('ab', 0, 'latin1')] = 0xff;
  return bytes;
}

/** A BSON document from its elements' bytes. */
function documentOf(elements: Buffer[]): Buffer {
  const size = 5 + elements.reduce((n, e) => n + e.length, 0);
  const head = Buffer.alloc(4);
  head.writeInt32LE(size, 0);
  return Buffer.concat([head, ...elements, Buffer.from([0])]);
}

/** One element `name: value` as the encoder writes it. */
const element = (name: string, value: unknown): Buffer => {
  const bytes = Buffer.from(BSON.serialize({ [name]: value }));
  return bytes.subarray(4, bytes.length - 1);
};

/** An array element of raw documents. */
function arrayElement(name: string, documents: Buffer[]): Buffer {
  const items = documents.map((d, i) => Buffer.concat([Buffer.from(`\x03${i}\0`, 'latin1'), d]));
  return Buffer.concat([Buffer.from(`\x04${name}\0`, 'latin1'), documentOf(items)]);
}

function opMsg(body: Buffer, sequence?: { id: string; documents: Buffer[] }): Buffer {
  const parts = [Buffer.alloc(HEADER_SIZE), Buffer.alloc(4), Buffer.from([0]), body];
  if (sequence) {
    const name = Buffer.from(`${sequence.id}\0`, 'utf8');
    const size = Buffer.alloc(4);
    size.writeInt32LE(4 + name.length + sequence.documents.reduce((n, d) => n + d.length, 0), 0);
    parts.push(Buffer.from([1]), size, name, ...sequence.documents);
  }
  const message = Buffer.concat(parts);
  message.writeInt32LE(message.length, 0);
  message.writeInt32LE(1, 4);
  message.writeInt32LE(0, 8);
  message.writeInt32LE(OpCode.OP_MSG, 12);
  return message;
}

/** Sends one OP_MSG and returns its reply's body. */
async function roundTrip(socket: Socket, message: Buffer): Promise<Document> {
  socket.write(message);
  const chunks: Buffer[] = [];
  for (;;) {
    const chunk = await new Promise<Buffer>((resolve, reject) => {
      socket.once('data', resolve);
      socket.once('error', reject);
    });
    chunks.push(chunk);
    const all = Buffer.concat(chunks);
    if (all.length >= 4 && all.length >= all.readInt32LE(0))
      return BSON.deserialize(all.subarray(HEADER_SIZE + 5, all.readInt32LE(0)));
  }
}

describeEmulatorOnly('sends bytes no driver would encode (a string that is not UTF-8)')(
  'insert stores the documents as sent',
  () => {
    let cluster: TestCluster;
    let client: MongoClient;
    let socket: Socket;
    const db = 'insert_bytes';

    beforeAll(async () => {
      cluster = await TestCluster.start();
      client = await cluster.connect();
      const host = new URL(cluster.uri.replace(/^mongodb:/, 'http:')).host.split(',')[0]!;
      const [hostname, port] = host.split(':');
      socket = connect(Number(port), hostname);
      await new Promise((resolve) => socket.once('connect', resolve));
    });
    afterAll(async () => {
      socket?.destroy();
      await cluster?.close();
    });

    const rawFind = async (coll: string): Promise<Buffer[]> =>
      (
        await client
          .db(db)
          .collection(coll)
          .find({}, { raw: true, sort: { _id: 1 } })
          .toArray()
      ).map((b) => Buffer.from(b as unknown as Uint8Array));

    it('in the command body: sent bytes kept, `_id` moved or added in front', async () => {
      const sent = invalidUtf8(1);
      const idLast = BSON.serialize({ s: 'x', _id: 2 });
      const noId = BSON.serialize({ s: 'no _id' });
      const body = documentOf([
        element('insert', 'body'),
        arrayElement('documents', [sent, Buffer.from(idLast), Buffer.from(noId)]),
        element('$db', db),
      ]);
      const reply = await roundTrip(socket, opMsg(body));
      expect(reply).toMatchObject({ ok: 1, n: 3 });
      const [first, second, third] = await rawFind('body');
      expect(first).toEqual(sent);
      expect(second).toEqual(Buffer.from(BSON.serialize({ _id: 2, s: 'x' })));
      const added = BSON.deserialize(third!);
      expect(Object.keys(added)).toEqual(['_id', 's']);
      expect(added._id).toBeInstanceOf(ObjectId);
    });

    it('in a document sequence: sent bytes kept', async () => {
      const sent = [invalidUtf8(3), invalidUtf8(4)];
      const body = documentOf([element('insert', 'sequence'), element('$db', db)]);
      const reply = await roundTrip(socket, opMsg(body, { id: 'documents', documents: sent }));
      expect(reply).toMatchObject({ ok: 1, n: 2 });
      expect(await rawFind('sequence')).toEqual(sent);
    });
  },
);
