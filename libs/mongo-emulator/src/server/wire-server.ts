import * as net from 'node:net';
import type { Document } from 'bson';
import type { ConnectionContext } from '../commands/types';
import {
  decodeMessage,
  encodeOpMsg,
  encodeOpReply,
  MessageFramer,
  MsgFlags,
  readHeader,
  ReplyFlags,
  WireProtocolError,
  type MessageHeader,
  type WireRequest,
} from '../wire/protocol';
import { CloseConnection, type CommandExecutor } from './executor';
import { asNumber } from './values';
import { markFromWire } from '../bson/codec';

export interface WireServerOptions {
  host?: string;
  port?: number;
}

/** Commands the driver's streaming monitor sends with exhaustAllowed (awaitable hello). */
const EXHAUST_COMMANDS = new Set(['hello', 'isMaster', 'ismaster']);
const LEGACY_HANDSHAKE_COMMANDS = new Set(['hello', 'isMaster', 'ismaster']);

let nextRequestId = 1;
function newRequestId(): number {
  nextRequestId = nextRequestId >= 0x7fffffff ? 1 : nextRequestId + 1;
  return nextRequestId;
}

function errorDoc(code: number, errmsg: string, codeName = 'ProtocolError'): Document {
  return { ok: 0, errmsg, code, codeName };
}

/**
 * One client connection: frames the byte stream, decodes messages and runs them strictly
 * one after another (mongod processes a connection's requests in order).
 */
class WireConnection {
  private readonly framer = new MessageFramer();
  private readonly queue: Buffer[] = [];
  private running = false;
  private readonly abort = new AbortController();
  readonly ctx: ConnectionContext;

  constructor(
    readonly socket: net.Socket,
    id: number,
    private readonly executor: CommandExecutor,
    private readonly onClose: (conn: WireConnection) => void,
  ) {
    this.ctx = {
      id,
      remoteAddress: `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? 0}`,
      users: [],
      closed: this.abort.signal,
      sasl: new Map(),
    };
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => undefined); // 'close' follows; a reset client must not crash the server
    socket.on('close', () => {
      this.abort.abort();
      this.queue.length = 0;
      this.onClose(this);
    });
  }

  get closed(): boolean {
    return this.abort.signal.aborted || this.socket.destroyed;
  }

  destroy(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    let messages: Buffer[];
    try {
      messages = this.framer.push(chunk);
    } catch {
      // Broken framing: the next message boundary is unknown, so the stream is unusable.
      this.destroy();
      return;
    }
    this.queue.push(...messages);
    void this.pump();
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length && !this.closed) {
        const message = this.queue.shift()!;
        try {
          await this.handle(message);
        } catch (err) {
          if (!(err instanceof CloseConnection) && process.env.MONGO_EMULATOR_DEBUG) {
            console.error('[mongo-emulator] connection error', err);
          }
          this.destroy();
        }
      }
    } finally {
      this.running = false;
    }
  }

  private async write(buf: Buffer): Promise<void> {
    if (this.closed) return;
    if (this.socket.write(buf)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.socket.off('drain', done);
        this.socket.off('close', done);
        resolve();
      };
      this.socket.on('drain', done);
      this.socket.on('close', done);
    });
  }

  private async handle(message: Buffer): Promise<void> {
    const header = readHeader(message);
    let request: WireRequest;
    try {
      request = decodeMessage(message);
    } catch (err) {
      if (err instanceof WireProtocolError && !err.fatal) {
        const codeName =
          err.code === 22
            ? 'InvalidBSON'
            : err.code === 10334
              ? 'BSONObjectTooLarge'
              : 'ProtocolError';
        await this.write(
          encodeOpMsg(errorDoc(err.code, err.message, codeName), newRequestId(), header.requestId),
        );
        return;
      }
      throw err;
    }
    switch (request.kind) {
      case 'msg':
        return this.handleMsg(request);
      case 'query':
        return this.handleQuery(request.header, request.fullCollectionName, request.query);
      case 'compressed':
        // hello never advertises a compressor, so a compressed message breaks negotiation.
        await this.write(
          encodeOpMsg(
            errorDoc(17, 'OP_COMPRESSED is not supported: no compressor was negotiated in hello'),
            newRequestId(),
            header.requestId,
          ),
        );
        return;
      case 'unsupported':
        // Legacy opcodes (OP_INSERT, OP_GET_MORE, ...) were removed from mongod: drop the client.
        this.destroy();
        return;
    }
  }

  private async handleMsg(request: Extract<WireRequest, { kind: 'msg' }>): Promise<void> {
    const name = Object.keys(request.body)[0];
    const awaitable =
      request.body.maxAwaitTimeMS !== undefined && request.body.topologyVersion !== undefined;
    if (request.exhaustAllowed && awaitable && EXHAUST_COMMANDS.has(name) && !request.moreToCome) {
      return this.streamHello(request.body, request.header.requestId);
    }
    markFromWire(request.body);
    const reply = await this.executor.execute(request.body, this.ctx);
    // moreToCome on a request means "no reply wanted" (unacknowledged write).
    if (request.moreToCome) return;
    await this.write(encodeOpMsg(reply, newRequestId(), request.header.requestId));
  }

  /**
   * Exhaust hello (SDAM streaming protocol): each reply carries moreToCome and answers the
   * previous reply's requestID; the server re-runs hello with the topologyVersion it just sent,
   * so the next reply comes when the topology changes or after maxAwaitTimeMS.
   */
  private async streamHello(body: Document, requestId: number): Promise<void> {
    let command = body;
    let responseTo = requestId;
    while (!this.closed) {
      const reply = await this.executor.execute(command, this.ctx);
      if (this.closed) return;
      // Stop streaming on error or when the client sent something else meanwhile.
      const more = asNumber(reply.ok) === 1 && this.queue.length === 0;
      const id = newRequestId();
      await this.write(encodeOpMsg(reply, id, responseTo, more ? MsgFlags.moreToCome : 0));
      if (!more) return;
      responseTo = id;
      command = { ...command, topologyVersion: reply.topologyVersion };
    }
  }

  /** OP_QUERY survives only for the legacy handshake (`isMaster`/`hello` on admin.$cmd). */
  private async handleQuery(
    header: MessageHeader,
    fullCollectionName: string,
    query: Document,
  ): Promise<void> {
    const dot = fullCollectionName.indexOf('.');
    const db = dot > 0 ? fullCollectionName.slice(0, dot) : '';
    const coll = dot > 0 ? fullCollectionName.slice(dot + 1) : '';
    const name = Object.keys(query)[0] ?? '';
    let reply: Document;
    let flags = ReplyFlags.AwaitCapable;
    if (coll === '$cmd' && LEGACY_HANDSHAKE_COMMANDS.has(name)) {
      reply = await this.executor.execute({ ...query, $db: db }, this.ctx);
    } else if (coll === '$cmd') {
      reply = errorDoc(
        352,
        `Unsupported OP_QUERY command: ${name}. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal`,
        'UnsupportedOpQueryCommand',
      );
    } else {
      flags |= ReplyFlags.QueryFailure;
      reply = {
        $err: 'OP_QUERY is no longer supported for queries; use the find command',
        code: 5739101,
        ok: 0,
      };
    }
    await this.write(encodeOpReply(reply, newRequestId(), header.requestId, flags));
  }
}

/** A TCP server speaking the MongoDB wire protocol in front of a CommandExecutor. */
export class WireServer {
  private readonly server: net.Server;
  private readonly connections = new Set<WireConnection>();
  private listening = false;

  constructor(
    private readonly executor: CommandExecutor,
    private readonly options: WireServerOptions = {},
  ) {
    this.server = net.createServer((socket) => this.accept(socket));
    this.server.on('error', () => undefined);
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.server.once('error', onError);
      this.server.listen(this.options.port ?? 0, this.options.host ?? '127.0.0.1', () => {
        this.server.off('error', onError);
        resolve();
      });
    });
    this.listening = true;
    return this.port;
  }

  get port(): number {
    const address = this.server.address();
    return address && typeof address === 'object' ? address.port : 0;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  private accept(socket: net.Socket): void {
    const stats = this.executor.stats;
    stats.connectionsTotalCreated += 1;
    stats.connectionsCurrent += 1;
    const conn = new WireConnection(socket, stats.connectionsTotalCreated, this.executor, (c) => {
      if (this.connections.delete(c)) {
        stats.connectionsCurrent -= 1;
        this.executor.connectionClosed?.(c.ctx);
      }
    });
    this.connections.add(conn);
  }

  /** Stops accepting, closes every connection (pending awaits end via the closed signal). */
  async close(): Promise<void> {
    if (!this.listening) return;
    this.listening = false;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const conn of [...this.connections]) conn.destroy();
    await closed;
  }
}
