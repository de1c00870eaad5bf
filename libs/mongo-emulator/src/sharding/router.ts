import { Binary, Double, Long, type Document, type Timestamp } from 'bson';
import { CommandError, ErrorCodes } from '../errors';
import type { ConnectionContext } from '../commands/types';
import { CloseConnection, type CommandExecutor } from '../server/executor';
import { isAuthorized, type RequiredPrivilege } from '../server/authorization';
import { ServerStats } from '../server/stats';
import { asNumber, bsonTypeName } from '../server/values';
import { fromWire } from '../bson/codec';
import { compileFilter } from '../query/matcher';
import { compileSort } from '../query/sort';
import { runPipeline } from '../aggregate/pipeline';
import { InMemoryPipelineEnv } from '../aggregate/testing/in-memory-env';
import type { CollectionEntry, ShardHandle, ShardingMetadata } from './metadata';
import { ShardedOps, type MergedCursor } from './sharded-ops';
import { MergedChangeStream } from './merged-change-stream';
import { RouterTransactions } from './transactions';
import { defaultRouterCommands } from './commands/registry';
import { firstKey, isDocument, namespaceDb } from './commands/util';

const ZERO_SIGNATURE_HASH = new Binary(Buffer.alloc(20), 0);

/** Sharding metadata collections mongos reads from the config server. */
const CONFIG_COLLECTIONS = new Set(['shards', 'databases', 'collections', 'chunks', 'changelog']);

/** Commands that create their database when it does not exist (and so pick its primary shard). */
const CREATES_DATABASE = new Set([
  'insert',
  'update',
  'delete',
  'findAndModify',
  'findandmodify',
  'create',
  'createIndexes',
  'collMod',
  'renameCollection',
]);

interface RouterCursor {
  shard: ShardHandle;
  remoteId: Long;
  ns: string;
}

/**
 * An emulated mongos: answers hello as a router ("isdbgrid"), keeps no data, and routes each
 * command to the shards. Every database lives on its primary shard (chosen round-robin when the
 * database is created); sharded collections keep all their chunks on the primary shard until
 * chunk migration is implemented, so routing by database is exact.
 */
export class MongosRouter implements CommandExecutor {
  readonly stats = new ServerStats();
  readonly cursors = new Map<string, RouterCursor>();
  readonly merged = new Map<string, MergedCursor>();
  private readonly retried = new Map<string, Document>();
  readonly streams = new Map<string, MergedChangeStream>();
  readonly ops: ShardedOps;
  readonly transactions: RouterTransactions;
  private nextCursorId = BigInt(Math.floor(Math.random() * 0x3fffffff)) * 1000n + 1n;
  private readonly commands = defaultRouterCommands();
  host = '127.0.0.1:0';

  constructor(readonly metadata: ShardingMetadata) {
    this.transactions = new RouterTransactions(metadata);
    this.ops = new ShardedOps(
      metadata,
      (shard, body, conn) => this.forward(shard, body, conn),
      (shard, body, conn) => shard.executor.execute(this.inTransaction(shard, body), conn),
      (cursor, batchSize) => this.openMerged(cursor, batchSize),
      (conn, work) => this.transactions.internal(conn, work),
      (shard) => this.transactions.catalogFor(shard),
    );
  }

  private newCursorId(): Long {
    const id = Long.fromBigInt(this.nextCursorId);
    this.nextCursorId += 1n;
    return id;
  }

  /** A cursor over documents the router merged itself; the first batch is returned. */
  private openMerged(cursor: MergedCursor, batchSize: number): Document {
    const size = batchSize > 0 ? batchSize : cursor.docs.length;
    const firstBatch = cursor.docs.slice(0, size);
    cursor.pos = firstBatch.length;
    let id = Long.ZERO;
    if (cursor.pos < cursor.docs.length) {
      id = this.newCursorId();
      this.merged.set(id.toString(), cursor);
    }
    return { cursor: { firstBatch, id, ns: cursor.ns }, ok: 1 };
  }

  get shards(): ShardHandle[] {
    return this.metadata.shards;
  }

  private get authEnabled(): boolean {
    return this.shards[0].rs.node.authEnabled;
  }

  async execute(body: Document, conn: ConnectionContext): Promise<Document> {
    // The name `route` counted the command under (serverStatus metrics.commands), if it did.
    const counted: { name?: string } = {};
    try {
      return await this.route(body, conn, counted);
    } catch (err) {
      if (err instanceof CloseConnection) throw err;
      if (counted.name) this.stats.countFailure(counted.name);
      let reply: Document;
      if (err instanceof CommandError) reply = err.toReply();
      else {
        if (process.env.MONGO_EMULATOR_DEBUG) console.error('[mongo-emulator] mongos error', err);
        reply = {
          ok: 0,
          errmsg: `internal error: ${err instanceof Error ? err.message : String(err)}`,
          code: ErrorCodes.InternalError,
          codeName: 'InternalError',
        };
      }
      return this.local(reply);
    }
  }

  connectionClosed(conn: ConnectionContext): void {
    conn.sasl.clear();
  }

  /** `ok` as a double plus `$clusterTime`/`operationTime` for replies the router builds itself. */
  local(reply: Document, operationTime?: Timestamp): Document {
    const now = this.metadata.clock.current();
    if (reply.ok === undefined) reply.ok = new Double(1);
    else if (typeof reply.ok === 'number') reply.ok = new Double(reply.ok);
    reply.$clusterTime = {
      clusterTime: now,
      signature: { hash: ZERO_SIGNATURE_HASH, keyId: Long.ZERO },
    };
    reply.operationTime = operationTime ?? now;
    return reply;
  }

  checkAuth(
    conn: ConnectionContext,
    name: string,
    db: string,
    required: RequiredPrivilege[],
  ): void {
    if (!this.authEnabled) return;
    if (conn.users.length === 0)
      throw new CommandError('Unauthorized', `Command ${name} requires authentication`);
    if (!isAuthorized(conn.users, required))
      throw new CommandError(
        'Unauthorized',
        `not authorized on ${db} to execute command { ${name}: ... }`,
      );
  }

  private async route(
    body: Document,
    conn: ConnectionContext,
    counted: { name?: string },
  ): Promise<Document> {
    const name = firstKey(body);
    if (!name) throw new CommandError('CommandNotFound', "no such command: ''");
    const db = body.$db;
    if (db === undefined)
      throw new CommandError(40571 as number, 'OP_MSG requests require a $db argument');
    if (typeof db !== 'string') {
      throw new CommandError(
        'TypeMismatch',
        `BSON field '$db' is the wrong type '${bsonTypeName(db)}', expected type 'string'`,
      );
    }
    this.stats.countCommand(name);
    counted.name = name;

    // Statements of a distributed transaction (and its commit/abort).
    if (body.autocommit !== undefined || body.startTransaction !== undefined) {
      const reply = await this.transactions.statement(name, body, conn, () =>
        this.dispatch(name, body, conn, db),
      );
      return reply.$clusterTime !== undefined ? reply : this.local(reply);
    }
    return this.dispatch(name, body, conn, db);
  }

  private async dispatch(
    name: string,
    body: Document,
    conn: ConnectionContext,
    db: string,
  ): Promise<Document> {
    const def = this.commands.get(name);
    if (def) return def.run({ router: this, body, conn, db, name });

    if (name === 'aggregate' && Array.isArray(body.pipeline)) {
      const first = body.pipeline[0] as Document | undefined;
      // DocumentSourceChangeStream::assertIsLegalSpecification (expCtx->inMongos).
      if (isDocument(first) && isDocument(first.$changeStream)) {
        if (first.$changeStream.showMigrationEvents === true)
          throw new CommandError(
            31123 as number,
            'Change streams from mongos may not show migration events',
          );
      }
    }

    if (db === 'config' && typeof body[name] === 'string' && CONFIG_COLLECTIONS.has(body[name])) {
      return this.readConfig(body, conn, name, body[name] as string);
    }

    // Change streams that may see events of several shards are merged by the router.
    if (name === 'aggregate' && this.shards.length > 1 && Array.isArray(body.pipeline)) {
      const first = body.pipeline[0] as Document | undefined;
      if (isDocument(first) && isDocument(first.$changeStream)) {
        const coll = body.aggregate;
        const wholeDb = typeof coll !== 'string';
        if (wholeDb || this.metadata.collections.has(`${db}.${coll}`))
          return this.openMergedStream(body, conn, db);
      }
    }

    const sharded = this.shardedTarget(name, body, db);
    if (sharded) return this.routeSharded(sharded, name, body, conn);

    const targetDb = name === 'renameCollection' ? (namespaceDb(body.renameCollection) ?? db) : db;
    if (name === 'renameCollection') {
      const toDb = namespaceDb(body.to);
      const from = this.metadata.database(targetDb, false);
      if (toDb && toDb !== targetDb && from) {
        const to = this.metadata.database(toDb, false);
        if (to && to.primary !== from.primary) {
          throw new CommandError(
            'CommandFailed',
            `Source and destination collections must be on the same database primary shard.`,
          );
        }
        if (!to) this.metadata.databases.set(toDb, { ...from, _id: toDb });
      }
    }
    const shard = this.primaryShardFor(targetDb, this.createsDatabase(name, body));
    return this.forward(shard, body, conn);
  }

  private async openMergedStream(
    body: Document,
    conn: ConnectionContext,
    db: string,
  ): Promise<Document> {
    this.checkAuth(conn, 'aggregate', db, []);
    const ns =
      typeof body.aggregate === 'string' ? `${db}.${body.aggregate}` : `${db}.$cmd.aggregate`;
    const stream = new MergedChangeStream(ns, db, this.metadata.clock);
    const reply = await stream.open(this.shards, body, conn);
    if (asNumber(reply.ok) === 0 && reply.cursor === undefined) return reply;
    const id = this.newCursorId();
    this.streams.set(id.toString(), stream);
    (reply.cursor as Document).id = id;
    return this.local(reply);
  }

  /** The sharded collection a collection-level command names, if any. */
  private shardedTarget(name: string, body: Document, db: string): CollectionEntry | undefined {
    if (this.metadata.collections.size === 0) return undefined;
    const coll = body[name];
    if (typeof coll !== 'string') return undefined;
    return this.metadata.collections.get(`${db}.${coll}`);
  }

  private async routeSharded(
    entry: CollectionEntry,
    name: string,
    body: Document,
    conn: ConnectionContext,
  ): Promise<Document> {
    const retryKey = this.retryKey(name, body);
    if (retryKey) {
      const previous = this.retried.get(retryKey);
      if (previous) return this.local({ ...previous });
      // Sub-commands go to the shards without txnNumber: one client statement may become
      // several shard writes, which the shards' per-(lsid, txnNumber) tables cannot tell apart.
      body = { ...body };
      delete body.txnNumber;
    }
    const reply = await this.routeShardedWrite(entry, name, body, conn, retryKey !== undefined);
    if (retryKey && asNumber(reply.ok) !== 0) {
      const stored = { ...reply };
      delete stored.$clusterTime;
      delete stored.operationTime;
      this.retried.set(retryKey, stored);
      if (this.retried.size > 10_000) this.retried.delete(this.retried.keys().next().value!);
    }
    return reply;
  }

  /** Retryable writes on sharded collections are deduplicated by the router. */
  private retryKey(name: string, body: Document): string | undefined {
    if (!['insert', 'update', 'delete', 'findAndModify', 'findandmodify'].includes(name))
      return undefined;
    if (!(body.txnNumber instanceof Long) || !isDocument(body.lsid)) return undefined;
    if (body.autocommit !== undefined) return undefined; // a transaction statement
    const id = body.lsid.id;
    const idText =
      id instanceof Binary ? Buffer.from(id.buffer).toString('hex') : JSON.stringify(id);
    return `${idText}:${body.txnNumber.toString()}`;
  }

  private async routeShardedWrite(
    entry: CollectionEntry,
    name: string,
    body: Document,
    conn: ConnectionContext,
    retryable: boolean,
  ): Promise<Document> {
    let reply: Document;
    switch (name) {
      case 'insert':
        reply = await this.ops.insert(entry, body, conn);
        break;
      case 'update':
        reply = await this.ops.update(entry, body, conn, retryable);
        break;
      case 'delete':
        reply = await this.ops.delete(entry, body, conn);
        break;
      case 'findAndModify':
      case 'findandmodify':
        return this.ops.findAndModify(entry, body, conn);
      case 'find':
        reply = await this.ops.find(entry, body, conn);
        break;
      case 'aggregate':
        reply = await this.ops.aggregate(entry, body, conn);
        break;
      case 'count':
        reply = await this.ops.count(entry, body, conn);
        break;
      case 'distinct':
        reply = await this.ops.distinct(entry, body, conn);
        break;
      case 'collStats':
        reply = await this.ops.collStats(entry, body, conn);
        break;
      case 'createIndexes':
      case 'dropIndexes':
      case 'collMod':
      case 'listIndexes':
        return this.ops.ddl(entry, body, conn);
      case 'renameCollection':
        throw new CommandError('IllegalOperation', `cannot rename a sharded collection`);
      default:
        return this.forward(
          this.metadata.shard(this.metadata.database(entry._id.split('.')[0], true)!.primary),
          body,
          conn,
        );
    }
    if (reply.$clusterTime !== undefined) return reply;
    return this.local(reply);
  }

  requireAdmin(name: string, db: string): void {
    if (db !== 'admin')
      throw new CommandError('Unauthorized', `${name} may only be run against the admin database.`);
  }

  private createsDatabase(name: string, body: Document): boolean {
    if (CREATES_DATABASE.has(name)) return true;
    if (name === 'aggregate' && Array.isArray(body.pipeline)) {
      return body.pipeline.some((s) => isDocument(s) && ('$out' in s || '$merge' in s));
    }
    return false;
  }

  /** The database's primary shard; databases that do not exist are read from the first shard. */
  primaryShardFor(db: string, create: boolean): ShardHandle {
    if (db === 'admin' || db === 'config' || db === 'local') return this.shards[0];
    const entry = this.metadata.database(db, create);
    return entry ? this.metadata.shard(entry.primary) : this.shards[0];
  }

  /** Runs a command on one shard; a cursor in the reply is registered under a router cursor id. */
  async forward(shard: ShardHandle, body: Document, conn: ConnectionContext): Promise<Document> {
    const reply = await shard.executor.execute(this.inTransaction(shard, body), conn);
    this.adoptCursor(shard, reply);
    return reply;
  }

  /** `body` joined to the distributed transaction being routed, if any. */
  private inTransaction(shard: ShardHandle, body: Document): Document {
    const txn = this.transactions.current();
    if (txn) return this.transactions.shardBody(txn, shard, body);
    // Not the client's object: the shard's reply comes back here, documents decoded.
    return fromWire(body) ? { ...body } : body;
  }

  private adoptCursor(shard: ShardHandle, reply: Document): void {
    const cursor = reply.cursor;
    if (!isDocument(cursor) || !(cursor.id instanceof Long) || cursor.id.isZero()) return;
    const id = this.newCursorId();
    this.cursors.set(id.toString(), {
      shard,
      remoteId: cursor.id,
      ns: typeof cursor.ns === 'string' ? cursor.ns : '',
    });
    cursor.id = id;
  }

  shardedCollection(body: Document, name: string): CollectionEntry {
    const ns = body[name];
    const entry = typeof ns === 'string' ? this.metadata.collections.get(ns) : undefined;
    if (!entry)
      throw new CommandError('NamespaceNotSharded', `Collection ${String(ns)} is not sharded.`);
    return entry;
  }

  /** find/count on config.shards|databases|collections|chunks, answered from the metadata. */
  private readConfig(
    body: Document,
    conn: ConnectionContext,
    name: string,
    coll: string,
  ): Document {
    this.checkAuth(conn, name, 'config', [{ target: 'config', action: 'find' }]);
    let docs = this.metadata.configDocuments(coll)!;
    const filter = isDocument(body.filter) ? body.filter : isDocument(body.query) ? body.query : {};
    if (Object.keys(filter).length) docs = docs.filter(compileFilter(filter));
    if (name === 'count') return this.local({ n: docs.length, ok: 1 });
    if (name === 'aggregate') {
      if (!Array.isArray(body.pipeline))
        throw new CommandError('FailedToParse', "'pipeline' option must be specified as an array");
      const env = new InMemoryPipelineEnv('config', coll).seed(coll, docs);
      env.fixedNow = new Date();
      env.fixedClusterTime = this.metadata.clock.current();
      const out = [...runPipeline(env.docs(coll), body.pipeline as Document[], env)];
      return this.local({
        cursor: { firstBatch: out, id: Long.ZERO, ns: `config.${coll}` },
        ok: 1,
      });
    }
    if (name !== 'find') {
      throw new CommandError(
        'CommandNotSupported',
        `${name} on config.${coll} is not supported by the MongoDB emulator; use find or aggregate`,
      );
    }
    if (isDocument(body.sort) && Object.keys(body.sort).length) docs.sort(compileSort(body.sort));
    const skip = asNumber(body.skip) ?? 0;
    const limit = Math.abs(asNumber(body.limit) ?? 0);
    docs = docs.slice(skip, limit ? skip + limit : undefined);
    return this.local({ cursor: { firstBatch: docs, id: Long.ZERO, ns: `config.${coll}` }, ok: 1 });
  }
}
