import * as net from 'node:net';
import { BSON, type Document } from 'bson';
import { TestCluster } from './helpers/cluster';
import { decodeMessage } from '../src/wire/protocol';
import { describeEmulatorOnly } from './helpers/real-server';

/** Raw wire-protocol client: sends bytes, reads whole replies or notices the close. */
class RawClient {
  private buffer = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  closed = false;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => undefined);
  }

  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => resolve(new RawClient(socket)));
      socket.once('error', reject);
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  send(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** Next reply: {opCode, flags, doc}, or 'closed'. */
  async read(
    timeoutMs = 3000,
  ): Promise<{ opCode: number; flags: number; responseTo: number; doc: Document } | 'closed'> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.buffer.length >= 4) {
        const len = this.buffer.readInt32LE(0);
        if (this.buffer.length >= len) {
          const msg = this.buffer.subarray(0, len);
          this.buffer = this.buffer.subarray(len);
          const opCode = msg.readInt32LE(12);
          const responseTo = msg.readInt32LE(8);
          if (opCode === 2013)
            return {
              opCode,
              responseTo,
              flags: msg.readUInt32LE(16),
              doc: BSON.deserialize(msg.subarray(21)),
            };
          return {
            opCode,
            responseTo,
            flags: msg.readInt32LE(16),
            doc: BSON.deserialize(msg.subarray(36)),
          };
        }
      }
      if (this.closed) return 'closed';
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('timed out waiting for a reply');
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

function header(length: number, requestId: number, opCode: number): Buffer {
  const h = Buffer.alloc(16);
  h.writeInt32LE(length, 0);
  h.writeInt32LE(requestId, 4);
  h.writeInt32LE(0, 8);
  h.writeInt32LE(opCode, 12);
  return h;
}

function opMsg(sections: Buffer[], requestId = 1, flags = 0, checksum = false): Buffer {
  const flagBuf = Buffer.alloc(4);
  flagBuf.writeUInt32LE((flags | (checksum ? 1 : 0)) >>> 0);
  const body = Buffer.concat([flagBuf, ...sections, checksum ? Buffer.alloc(4) : Buffer.alloc(0)]);
  return Buffer.concat([header(16 + body.length, requestId, 2013), body]);
}

const kind0 = (doc: Document) => Buffer.concat([Buffer.from([0]), BSON.serialize(doc)]);
function kind1(id: string, docs: Document[]): Buffer {
  const payload = Buffer.concat([
    Buffer.from(`${id}\0`, 'utf8'),
    ...docs.map((d) => BSON.serialize(d)),
  ]);
  const size = Buffer.alloc(4);
  size.writeInt32LE(4 + payload.length);
  return Buffer.concat([Buffer.from([1]), size, payload]);
}

function opQuery(ns: string, doc: Document, requestId = 7): Buffer {
  const body = Buffer.concat([
    Buffer.alloc(4),
    Buffer.from(`${ns}\0`, 'utf8'),
    Buffer.from([0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]),
    BSON.serialize(doc),
  ]);
  return Buffer.concat([header(16 + body.length, requestId, 2004), body]);
}

const suite = describeEmulatorOnly(
  "raw wire-protocol edge cases (malformed input, OP_QUERY) sent to the emulator's port",
);

suite('wire protocol', () => {
  let cluster: TestCluster;
  const clients: RawClient[] = [];
  const open = async () => {
    const c = await RawClient.connect(cluster.rs.port);
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    cluster = await TestCluster.start();
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await cluster.close();
  });

  /** After every abuse the server must still answer a well-formed ping. */
  async function expectAlive(): Promise<void> {
    const c = await open();
    c.send(opMsg([kind0({ ping: 1, $db: 'admin' })], 99));
    const reply = await c.read();
    expect(reply).not.toBe('closed');
    expect((reply as { doc: Document }).doc.ok).toBe(1);
  }

  it('answers OP_MSG with the requestID as responseTo, accepting a checksum', async () => {
    const c = await open();
    c.send(opMsg([kind0({ ping: 1, $db: 'admin' })], 42, 0, true));
    const reply = await c.read();
    expect(reply).toMatchObject({ opCode: 2013, responseTo: 42, doc: { ok: 1 } });
  });

  it('merges kind-1 document sequences into the body', async () => {
    const decoded = decodeMessage(
      opMsg([kind0({ insert: 'c', $db: 'app' }), kind1('documents', [{ a: 1 }, { a: 2 }])], 3),
    );
    expect(decoded).toMatchObject({ kind: 'msg', body: { insert: 'c', $db: 'app' } });
    const body = (decoded as { body: Document }).body;
    expect(body.documents).toHaveLength(2);
    expect(body.documents[1].a.valueOf()).toBe(2);
    // Exact types survive: the Int32 stays an Int32.
    expect(body.documents[0].a._bsontype).toBe('Int32');

    const c = await open();
    c.send(
      opMsg([kind0({ ping: 1, $db: 'admin', documents: [] }), kind1('documents', [{ a: 1 }])], 4),
    );
    expect(await c.read()).toMatchObject({ responseTo: 4, doc: { ok: 0, code: 40413 } });
  });

  it('answers a legacy OP_QUERY isMaster with OP_REPLY and refuses other OP_QUERY commands', async () => {
    const c = await open();
    c.send(opQuery('admin.$cmd', { isMaster: 1 }));
    const reply = await c.read();
    expect(reply).toMatchObject({
      opCode: 1,
      responseTo: 7,
      doc: { ismaster: true, maxWireVersion: 21, ok: 1 },
    });
    c.send(opQuery('admin.$cmd', { ping: 1 }, 8));
    expect(await c.read()).toMatchObject({ opCode: 1, doc: { ok: 0, code: 352 } });
  });

  it('requires $db', async () => {
    const c = await open();
    c.send(opMsg([kind0({ ping: 1 })]));
    expect(await c.read()).toMatchObject({ doc: { ok: 0, code: 40571 } });
  });

  it('replies with an error to OP_COMPRESSED', async () => {
    const c = await open();
    const body = Buffer.alloc(9);
    c.send(Buffer.concat([header(25, 5, 2012), body]));
    expect(await c.read()).toMatchObject({ opCode: 2013, doc: { ok: 0 } });
  });

  it('survives malformed input', async () => {
    // Invalid BSON inside a well-framed OP_MSG: error reply.
    const c1 = await open();
    const bad = Buffer.from([0, 12, 0, 0, 0, 0x10, 0x61, 0, 1, 0, 0, 0, 0]);
    c1.send(opMsg([bad]));
    expect(await c1.read()).toMatchObject({ doc: { ok: 0 } });

    // A length below the header size or above 48 MB: connection closed.
    for (const length of [3, 48_000_001, -1]) {
      const c = await open();
      c.send(header(length, 1, 2013));
      expect(await c.read()).toBe('closed');
    }

    // Unknown section kind, unknown required flag bit, empty body: error replies.
    const c2 = await open();
    c2.send(opMsg([Buffer.from([7, 1, 2, 3])]));
    expect(await c2.read()).toMatchObject({ doc: { ok: 0 } });
    c2.send(opMsg([kind0({ ping: 1, $db: 'admin' })], 2, 1 << 5));
    expect(await c2.read()).toMatchObject({ doc: { ok: 0 } });
    c2.send(opMsg([]));
    expect(await c2.read()).toMatchObject({ doc: { ok: 0 } });

    // A removed legacy opcode (OP_INSERT): connection closed.
    const c3 = await open();
    c3.send(Buffer.concat([header(20, 1, 2002), Buffer.alloc(4)]));
    expect(await c3.read()).toBe('closed');

    // Random garbage and a half message followed by a hang-up.
    const c4 = await open();
    c4.send(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    expect(await c4.read()).toBe('closed');
    const c5 = await open();
    c5.send(opMsg([kind0({ ping: 1, $db: 'admin' })]).subarray(0, 20));
    c5.close();

    await expectAlive();
  });

  it('does not answer moreToCome requests', async () => {
    const c = await open();
    c.send(opMsg([kind0({ ping: 1, $db: 'admin' })], 1, 2));
    c.send(opMsg([kind0({ buildInfo: 1, $db: 'admin' })], 2));
    const reply = await c.read();
    expect(reply).toMatchObject({ responseTo: 2, doc: { version: '7.0.14' } });
  });

  it('streams awaitable hello replies with moreToCome', async () => {
    const c = await open();
    c.send(opMsg([kind0({ hello: 1, $db: 'admin' })], 1));
    const first = (await c.read()) as { doc: Document };
    const tv = first.doc.topologyVersion;
    c.send(
      opMsg(
        [kind0({ hello: 1, $db: 'admin', topologyVersion: tv, maxAwaitTimeMS: 200 })],
        2,
        1 << 16,
      ),
    );
    const started = Date.now();
    const a = await c.read();
    const b = await c.read();
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    expect(a).toMatchObject({ responseTo: 2, flags: 2, doc: { isWritablePrimary: true } });
    expect(b).toMatchObject({ flags: 2 });
  });
});
