import { Binary, Double, Long, ObjectId, type Document, type Timestamp } from 'bson';
import { CommandError, ErrorCodes } from '../errors';
import type { ConnectionContext } from '../commands/types';
import { CloseConnection, type CommandExecutor } from '../server/executor';
import { isAuthorized, type RequiredPrivilege } from '../server/authorization';
import { ServerStats } from '../server/stats';
import { asNumber, bsonTypeName } from '../server/values';
import { compileFilter } from '../query/matcher';
import { compileSort } from '../query/sort';
import { runPipeline } from '../aggregate/pipeline';
import { InMemoryPipelineEnv } from '../aggregate/testing/in-memory-env';
import type { CollectionEntry, ShardHandle, ShardingMetadata } from './metadata';
import { ShardedOps, type MergedCursor } from './sharded-ops';
import { MergedChangeStream } from './merged-change-stream';
import {
  chunkFor,
  compareKeys,
  completeKey,
  hashedSplitPoints,
  maxKeyDoc,
  minKeyDoc,
  shardKeyOf,
  versionOf,
} from './targeting';

const ZERO_SIGNATURE_HASH = new Binary(Buffer.alloc(20), 0);

/** Commands answered by one shard on the router's behalf (server info, auth, sessions). */
const FORWARD_TO_FIRST_SHARD = new Set([
  'saslStart',
  'saslContinue',
  'logout',
  'connectionStatus',
  'ping',
  'buildInfo',
  'buildinfo',
  'getParameter',
  'whatsmyuri',
  'hostInfo',
  'getCmdLineOpts',
  'serverStatus',
  'listCommands',
  'getDefaultRWConcern',
  'startSession',
  'configureFailPoint',
  'appendOplogNote',
  'emulatorStats',
]);

/** Commands mongos sends to every shard (sessions, write blocking). */
const BROADCAST = new Set([
  'endSessions',
  'killSessions',
  'killAllSessions',
  'refreshSessions',
  'setUserWriteBlockMode',
]);

/** Replica-set commands a mongos does not have. */
const NOT_ON_MONGOS = new Set([
  'replSetGetStatus',
  'replSetGetConfig',
  'replSetInitiate',
  'replSetReconfig',
  'replSetStepDown',
]);

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

function isDocument(v: unknown): v is Document {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Binary);
}

function firstKey(body: Document): string {
  return Object.keys(body)[0] ?? '';
}

function namespaceDb(ns: unknown): string | undefined {
  if (typeof ns !== 'string') return undefined;
  const dot = ns.indexOf('.');
  return dot > 0 ? ns.slice(0, dot) : undefined;
}

/**
 * An emulated mongos: answers hello as a router ("isdbgrid"), keeps no data, and routes each
 * command to the shards. Every database lives on its primary shard (chosen round-robin when the
 * database is created); sharded collections keep all their chunks on the primary shard until
 * chunk migration is implemented, so routing by database is exact.
 */
export class MongosRouter implements CommandExecutor {
  readonly stats = new ServerStats();
  private readonly cursors = new Map<string, RouterCursor>();
  private readonly merged = new Map<string, MergedCursor>();
  private readonly retried = new Map<string, Document>();
  private readonly streams = new Map<string, MergedChangeStream>();
  private readonly ops: ShardedOps;
  private nextCursorId = BigInt(Math.floor(Math.random() * 0x3fffffff)) * 1000n + 1n;
  host = '127.0.0.1:0';

  constructor(readonly metadata: ShardingMetadata) {
    this.ops = new ShardedOps(
      metadata,
      (shard, body, conn) => this.forward(shard, body, conn),
      (shard, body, conn) => shard.executor.execute(body, conn),
      (cursor, batchSize) => this.openMerged(cursor, batchSize),
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

  private get shards(): ShardHandle[] {
    return this.metadata.shards;
  }

  private get authEnabled(): boolean {
    return this.shards[0].rs.node.authEnabled;
  }

  async execute(body: Document, conn: ConnectionContext): Promise<Document> {
    try {
      return await this.route(body, conn);
    } catch (err) {
      if (err instanceof CloseConnection) throw err;
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
  private local(reply: Document, operationTime?: Timestamp): Document {
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

  private checkAuth(
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

  private async route(body: Document, conn: ConnectionContext): Promise<Document> {
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

    if (name === 'hello' || name === 'isMaster' || name === 'ismaster')
      return this.hello(body, conn);
    if (FORWARD_TO_FIRST_SHARD.has(name)) return this.forward(this.shards[0], body, conn);
    if (BROADCAST.has(name)) return this.broadcast(body, conn);
    if (NOT_ON_MONGOS.has(name))
      throw new CommandError('CommandNotFound', `no such command: '${name}'`);

    switch (name) {
      case 'isdbgrid':
        return this.local({ isdbgrid: 1, hostname: this.host, ok: 1 });
      case 'listShards':
        this.requireAdmin(name, db);
        this.checkAuth(conn, name, db, [{ target: 'cluster', action: 'anyAdminCommand' }]);
        return this.local({
          shards: this.shards.map((s) => this.metadata.shardDocument(s)),
          ok: 1,
        });
      case 'enableSharding':
      case 'enablesharding':
        return this.enableSharding(body, conn, db);
      case 'shardCollection':
      case 'shardcollection':
        return this.shardCollection(body, conn, db);
      case 'listDatabases':
        return this.listDatabases(body, conn);
      case 'getMore':
        return this.getMore(body, conn);
      case 'killCursors':
        return this.killCursors(body, conn);
      case 'dropDatabase':
        return this.dropDatabase(body, conn, db);
      case 'drop':
        return this.drop(body, conn, db);
      case 'movePrimary':
        throw new CommandError(
          'CommandNotSupported',
          `${name} is not supported by the MongoDB emulator's sharded topology yet`,
        );
      case 'moveChunk':
      case 'moveRange':
        return this.moveChunk(body, conn, db, name);
      case 'split':
        return this.split(body, conn, db);
      case 'balancerStart':
      case 'balancerStop':
      case 'balancerStatus':
        this.requireAdmin(name, db);
        this.checkAuth(conn, name, db, [{ target: 'cluster', action: 'anyAdminCommand' }]);
        if (name !== 'balancerStatus')
          this.metadata.balancerMode = name === 'balancerStart' ? 'full' : 'off';
        return this.local(
          name === 'balancerStatus'
            ? {
                mode: this.metadata.balancerMode,
                inBalancerRound: false,
                numBalancerRounds: Long.ZERO,
                ok: 1,
              }
            : { ok: 1 },
        );
      case 'setAllowMigrations': {
        this.requireAdmin(name, db);
        this.checkAuth(conn, name, db, [{ target: 'cluster', action: 'anyAdminCommand' }]);
        const entry = this.shardedCollection(body, name);
        if (typeof body.allowMigrations !== 'boolean')
          throw new CommandError(
            'TypeMismatch',
            `BSON field 'setAllowMigrations.allowMigrations' is missing but a required field`,
          );
        if (body.allowMigrations) delete entry.permitMigrations;
        else entry.permitMigrations = false;
        return this.local({ ok: 1 });
      }
      default:
        break;
    }

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

  private requireAdmin(name: string, db: string): void {
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
  private primaryShardFor(db: string, create: boolean): ShardHandle {
    if (db === 'admin' || db === 'config' || db === 'local') return this.shards[0];
    const entry = this.metadata.database(db, create);
    return entry ? this.metadata.shard(entry.primary) : this.shards[0];
  }

  /** Runs a command on one shard; a cursor in the reply is registered under a router cursor id. */
  private async forward(
    shard: ShardHandle,
    body: Document,
    conn: ConnectionContext,
  ): Promise<Document> {
    const reply = await shard.executor.execute(body, conn);
    this.adoptCursor(shard, reply);
    return reply;
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

  private async getMore(body: Document, conn: ConnectionContext): Promise<Document> {
    const id = body.getMore;
    if (!(id instanceof Long)) {
      throw new CommandError(
        'TypeMismatch',
        `BSON field 'getMore.getMore' is the wrong type '${bsonTypeName(id)}', expected type 'long'`,
      );
    }
    const stream = this.streams.get(id.toString());
    if (stream) {
      const reply = await stream.getMore(body, conn);
      if (reply.cursor === undefined) {
        this.streams.delete(id.toString());
        return reply;
      }
      (reply.cursor as Document).id = id;
      return this.local(reply);
    }
    const merged = this.merged.get(id.toString());
    if (merged) {
      const size = asNumber(body.batchSize) ?? 0;
      const nextBatch = merged.docs.slice(merged.pos, size > 0 ? merged.pos + size : undefined);
      merged.pos += nextBatch.length;
      let outId = id;
      if (merged.pos >= merged.docs.length) {
        this.merged.delete(id.toString());
        outId = Long.ZERO;
      }
      return this.local({ cursor: { nextBatch, id: outId, ns: merged.ns }, ok: 1 });
    }
    const entry = this.cursors.get(id.toString());
    if (!entry) throw new CommandError('CursorNotFound', `cursor id ${id.toString()} not found`);
    const reply = await entry.shard.executor.execute({ ...body, getMore: entry.remoteId }, conn);
    const cursor = reply.cursor;
    if (isDocument(cursor) && cursor.id instanceof Long) {
      if (cursor.id.isZero()) this.cursors.delete(id.toString());
      else cursor.id = id;
    } else if (asNumber(reply.ok) === 0 && reply.code === ErrorCodes.CursorNotFound) {
      this.cursors.delete(id.toString());
    }
    return reply;
  }

  private async killCursors(body: Document, conn: ConnectionContext): Promise<Document> {
    const ids = Array.isArray(body.cursors) ? (body.cursors as unknown[]) : undefined;
    if (!ids) return this.forward(this.shards[0], body, conn);
    const killed: Long[] = [];
    const notFound: Long[] = [];
    for (const id of ids) {
      const stream = id instanceof Long ? this.streams.get(id.toString()) : undefined;
      if (stream && id instanceof Long) {
        this.streams.delete(id.toString());
        await stream.kill(conn);
        killed.push(id);
        continue;
      }
      if (id instanceof Long && this.merged.delete(id.toString())) {
        killed.push(id);
        continue;
      }
      const entry = id instanceof Long ? this.cursors.get(id.toString()) : undefined;
      if (!entry || !(id instanceof Long)) {
        if (id instanceof Long) notFound.push(id);
        continue;
      }
      this.cursors.delete(id.toString());
      await entry.shard.executor.execute({ ...body, cursors: [entry.remoteId] }, conn);
      killed.push(id);
    }
    return this.local({
      cursorsKilled: killed,
      cursorsNotFound: notFound,
      cursorsAlive: [],
      cursorsUnknown: [],
      ok: 1,
    });
  }

  /** mongos hello: a shard's answer without the replica-set fields, plus `msg: "isdbgrid"`. */
  private async hello(body: Document, conn: ConnectionContext): Promise<Document> {
    const reply = await this.shards[0].executor.execute(body, conn);
    if (asNumber(reply.ok) === 0) return reply;
    for (const field of [
      'hosts',
      'setName',
      'setVersion',
      'secondary',
      'primary',
      'me',
      'electionId',
      'lastWrite',
    ]) {
      delete reply[field];
    }
    const out: Document = {};
    for (const [k, v] of Object.entries(reply)) {
      out[k] = v;
      if (k === 'isWritablePrimary' || k === 'ismaster') out.msg = 'isdbgrid';
    }
    return out;
  }

  private async broadcast(body: Document, conn: ConnectionContext): Promise<Document> {
    let first: Document | undefined;
    for (const shard of this.shards) {
      const reply = await shard.executor.execute(body, conn);
      if (asNumber(reply.ok) === 0) return reply;
      first ??= reply;
    }
    return first!;
  }

  /** listDatabases through mongos: every shard's databases merged, sizes summed, no `local`. */
  private async listDatabases(body: Document, conn: ConnectionContext): Promise<Document> {
    const sizes = new Map<string, number>();
    let nameOnly = false;
    for (const shard of this.shards) {
      const reply = await shard.executor.execute(body, conn);
      if (asNumber(reply.ok) === 0) return reply;
      nameOnly = reply.totalSize === undefined;
      for (const entry of (reply.databases as Document[]) ?? []) {
        const name = entry.name as string;
        if (name === 'local') continue;
        sizes.set(name, (sizes.get(name) ?? 0) + (asNumber(entry.sizeOnDisk) ?? 0));
      }
    }
    const entries = [...sizes.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (nameOnly) return this.local({ databases: entries.map(([name]) => ({ name })), ok: 1 });
    const databases = entries.map(([name, sizeOnDisk]) => ({ name, sizeOnDisk, empty: false }));
    const totalSize = databases.reduce((s, d) => s + d.sizeOnDisk, 0);
    return this.local({
      databases,
      totalSize,
      totalSizeMb: Math.trunc(totalSize / (1024 * 1024)),
      ok: 1,
    });
  }

  private async dropDatabase(
    body: Document,
    conn: ConnectionContext,
    db: string,
  ): Promise<Document> {
    const entry = this.metadata.databases.get(db);
    const sharded = [...this.metadata.collections.keys()].some((ns) => ns.startsWith(`${db}.`));
    let reply: Document;
    if (sharded) {
      // The primary shard drops as the user asked; the others drop as participants with
      // fromMigrate, so a change stream through mongos reports the drops once (MongoDB 6.0+).
      const primary = entry ? this.metadata.shard(entry.primary) : this.shards[0]!;
      reply = await this.forward(primary, body, conn);
      if (asNumber(reply.ok) !== 0) {
        for (const other of this.shards) {
          if (other !== primary) other.rs.node.catalog.dropDatabase(db, { fromMigrate: true });
        }
      }
    } else {
      reply = await this.forward(
        entry ? this.metadata.shard(entry.primary) : this.shards[0],
        body,
        conn,
      );
    }
    if (asNumber(reply.ok) !== 0) this.metadata.dropDatabase(db);
    return reply;
  }

  private async drop(body: Document, conn: ConnectionContext, db: string): Promise<Document> {
    const ns = `${db}.${String(body.drop)}`;
    const shard = this.primaryShardFor(db, false);
    let reply: Document;
    if (this.metadata.collections.has(ns)) {
      reply = await this.forward(shard, body, conn);
      // Participants drop with fromMigrate: mongos reports one drop event (MongoDB 6.0+).
      if (asNumber(reply.ok) !== 0) {
        for (const other of this.shards) {
          if (other !== shard)
            other.rs.node.catalog.dropNamespace(db, String(body.drop), { fromMigrate: true });
        }
      }
    } else {
      reply = await this.forward(shard, body, conn);
    }
    if (asNumber(reply.ok) !== 0 || reply.code === ErrorCodes.NamespaceNotFound) {
      this.metadata.dropCollection(ns);
    }
    return reply;
  }

  private enableSharding(body: Document, conn: ConnectionContext, db: string): Document {
    this.requireAdmin('enableSharding', db);
    this.checkAuth(conn, 'enableSharding', db, [{ target: 'cluster', action: 'anyAdminCommand' }]);
    const target = body[firstKey(body)];
    if (typeof target !== 'string' || target === '' || /[/\\. "$\0]/.test(target))
      throw new CommandError('InvalidNamespace', `invalid db name specified: ${String(target)}`);
    if (target === 'admin' || target === 'local')
      throw new CommandError('InvalidOptions', `can't shard ${target} database`);
    const entry = this.metadata.database(target, true)!;
    if (typeof body.primaryShard === 'string' && body.primaryShard !== entry.primary) {
      throw new CommandError(
        'NamespaceExists',
        `database already created on a primary which is different from ${body.primaryShard}`,
      );
    }
    return this.local({ ok: 1 });
  }

  /**
   * shardCollection: validates the key, requires (or on an empty collection creates) an index
   * prefixed by the key on the primary shard, and registers one chunk on the primary shard.
   */
  private async shardCollection(
    body: Document,
    conn: ConnectionContext,
    db: string,
  ): Promise<Document> {
    this.requireAdmin('shardCollection', db);
    this.checkAuth(conn, 'shardCollection', db, [{ target: 'cluster', action: 'anyAdminCommand' }]);
    const ns = body[firstKey(body)];
    const nsDb = namespaceDb(ns);
    if (typeof ns !== 'string' || !nsDb || ns.endsWith('.'))
      throw new CommandError('InvalidNamespace', `Invalid namespace specified '${String(ns)}'`);
    const coll = ns.slice(nsDb.length + 1);
    if (nsDb === 'admin' || nsDb === 'local' || nsDb === 'config' || coll.startsWith('system.'))
      throw new CommandError('IllegalOperation', `can't shard ${ns}`);
    const key = body.key;
    if (!isDocument(key) || Object.keys(key).length === 0)
      throw new CommandError('BadValue', 'Shard key cannot be empty');
    const fields = Object.entries(key);
    const hashed = fields.filter(([, v]) => v === 'hashed');
    for (const [field, value] of fields) {
      if (value !== 'hashed' && asNumber(value) !== 1)
        throw new CommandError(
          'BadValue',
          `Unsupported shard key pattern ${JSON.stringify(key)}. Pattern must either be a single hashed field, or a list of ascending fields`,
        );
      if (field === '' || field.startsWith('$') || field.split('.').some((p) => p === ''))
        throw new CommandError(
          'BadValue',
          `Shard key ${JSON.stringify(key)} contains invalid field ${field}`,
        );
    }
    if (hashed.length > 1)
      throw new CommandError(
        'BadValue',
        `Unsupported shard key pattern ${JSON.stringify(key)}. Pattern must either be a single hashed field, or a list of ascending fields`,
      );
    if (hashed.length && body.unique === true)
      throw new CommandError(
        'InvalidOptions',
        "Hashed shard keys cannot be declared unique. It's possible to ensure uniqueness on the hashed field by declaring an additional (non-hashed) unique index on the field.",
      );
    const unique = body.unique === true;
    const existing = this.metadata.collections.get(ns);
    if (existing) {
      if (JSON.stringify(existing.key) === JSON.stringify(key) && existing.unique === unique)
        return this.local({ collectionsharded: ns, ok: 1 });
      throw new CommandError('AlreadyInitialized', `sharding already enabled for collection ${ns}`);
    }
    const dbEntry = this.metadata.database(nsDb, true)!;
    const shard = this.metadata.shard(dbEntry.primary);
    const run = async (cmd: Document): Promise<Document> => {
      const reply = await shard.executor.execute({ ...cmd, $db: nsDb }, conn);
      if (asNumber(reply.ok) === 0) {
        throw new CommandError(reply.code as number, String(reply.errmsg));
      }
      return reply;
    };
    const listing = await run({ listCollections: 1, filter: { name: coll } });
    let info = ((listing.cursor as Document).firstBatch as Document[])[0];
    if (info?.type === 'view')
      throw new CommandError(
        'CommandNotSupportedOnView',
        `Namespace ${ns} is a view, not a collection`,
      );
    const keyFields = fields.map(([f]) => f);
    const indexes = info
      ? (((await run({ listIndexes: coll })).cursor as Document).firstBatch as Document[])
      : [];
    const prefixed = indexes.filter((idx) => {
      const idxFields = Object.keys(idx.key as Document);
      return (
        keyFields.every(
          (f, i) =>
            idxFields[i] === f &&
            (key[f] === 'hashed'
              ? (idx.key as Document)[f] === 'hashed'
              : asNumber((idx.key as Document)[f]) === 1),
        ) &&
        idx.sparse !== true &&
        idx.partialFilterExpression === undefined &&
        idx.collation === undefined
      );
    });
    if (
      unique &&
      !prefixed.some(
        (idx) => idx.unique === true || (idx.name === '_id_' && keyFields.length === 1),
      )
    ) {
      if (prefixed.length) {
        throw new CommandError(
          'InvalidOptions',
          `can't shard collection '${ns}' with unique index on ${JSON.stringify(key)} and proposed shard key ${JSON.stringify(key)}. Uniqueness can't be maintained unless shard key is a prefix`,
        );
      }
    }
    const nonEmpty = info
      ? (((await run({ find: coll, limit: 1 })).cursor as Document).firstBatch as Document[])
          .length > 0
      : false;
    const numInitialChunks = asNumber(body.numInitialChunks) ?? 0;
    if (numInitialChunks && (!hashed.length || nonEmpty))
      throw new CommandError(
        'InvalidOptions',
        'numInitialChunks is only supported when the collection is empty and has a hashed field in the shard key pattern',
      );
    if (numInitialChunks && hashed[0][0] !== keyFields[0])
      throw new CommandError(
        'InvalidOptions',
        "When the prefix of the hashed shard key is a range field, 'numInitialChunks' can only be used when the 'presplitHashedZones' is true",
      );
    if (!prefixed.length) {
      if (nonEmpty) {
        throw new CommandError(
          'InvalidOptions',
          'Please create an index that starts with the proposed shard key before sharding the collection. ',
        );
      }
      await run({
        createIndexes: coll,
        indexes: [
          {
            key,
            name: keyFields.map((f) => `${f}_${key[f] === 'hashed' ? 'hashed' : '1'}`).join('_'),
            ...(unique ? { unique } : {}),
          },
        ],
      });
      if (!info) {
        const again = await run({ listCollections: 1, filter: { name: coll } });
        info = ((again.cursor as Document).firstBatch as Document[])[0];
      }
    }
    const uuid = (info.info as Document).uuid as Binary;
    let initial = [{ min: minKeyDoc(key), max: maxKeyDoc(key), shard: shard.id }];
    if (hashed.length && hashed[0][0] === keyFields[0] && !nonEmpty) {
      // SplitPointsBasedSplitPolicy: numInitialChunks (default 2 per shard) spread over the
      // shards sorted by id, numInitialChunks / numShards contiguous chunks each.
      const shardIds = this.shards.map((s) => s.id).sort();
      const count = numInitialChunks || 2 * shardIds.length;
      const contiguous = Math.max(1, Math.floor(count / shardIds.length));
      const points = hashedSplitPoints(count).map((p) => completeKey({ [keyFields[0]]: p }, key));
      const bounds = [minKeyDoc(key), ...points, maxKeyDoc(key)];
      initial = points.length + 1 > 1 ? [] : initial;
      for (let i = 0; i + 1 < bounds.length; i++) {
        const owner =
          i === 0 && points.length + 1 < shardIds.length
            ? shard.id
            : shardIds[Math.floor(i / contiguous) % shardIds.length];
        initial.push({ min: bounds[i], max: bounds[i + 1], shard: owner });
      }
      this.ensureCollectionOnShards(
        nsDb,
        coll,
        shard,
        initial.map((c) => c.shard),
      );
    }
    this.metadata.addCollection(ns, uuid, { ...key }, unique, initial);
    for (const s of this.shards) {
      const c = s.rs.node.catalog.getCollection(nsDb, coll);
      if (c) c.shardKey = { ...key };
    }
    // The primary shard logs the sharding (a `shardCollection` event with expanded events).
    shard.rs.node.oplog.append({
      op: 'shardCollection',
      db: nsDb,
      coll,
      uuid,
      operationDescription: {
        shardKey: { ...key },
        unique,
        numInitialChunks: Long.fromNumber(numInitialChunks),
        presplitHashedZones: body.presplitHashedZones === true,
      },
    });
    return this.local({ collectionsharded: ns, ok: 1 });
  }

  /**
   * Creates the collection (same uuid, same options and indexes as on the primary shard) on
   * the other shards that receive chunks; the writes are marked fromMigrate, like a migration's.
   */
  private ensureCollectionOnShards(
    db: string,
    coll: string,
    primary: ShardHandle,
    ids: string[],
  ): void {
    const source = primary.rs.node.catalog.getCollection(db, coll);
    if (!source) return;
    for (const id of new Set(ids)) {
      if (id === primary.id) continue;
      const catalog = this.metadata.shard(id).rs.node.catalog;
      if (catalog.getCollection(db, coll)) continue;
      const target = catalog.createCollection(
        db,
        coll,
        { ...source.options },
        { fromMigrate: true },
      );
      target.uuid = source.uuid;
      for (const idx of source.indexes.slice(1))
        catalog.addIndex(target, { ...idx.spec }, { fromMigrate: true });
    }
  }

  private shardedCollection(body: Document, name: string): CollectionEntry {
    const ns = body[name];
    const entry = typeof ns === 'string' ? this.metadata.collections.get(ns) : undefined;
    if (!entry)
      throw new CommandError('NamespaceNotSharded', `Collection ${String(ns)} is not sharded.`);
    return entry;
  }

  /** split {middle} / {find} (median of the chunk's documents) / {bounds}. */
  private async split(body: Document, conn: ConnectionContext, db: string): Promise<Document> {
    this.requireAdmin('split', db);
    this.checkAuth(conn, 'split', db, [{ target: 'cluster', action: 'anyAdminCommand' }]);
    const entry = this.shardedCollection(body, 'split');
    const chunks = this.metadata.chunksOf(entry).sort((a, b) => compareKeys(a.min, b.min));
    let middle: Document | undefined;
    if (isDocument(body.middle)) middle = body.middle;
    else if (isDocument(body.find)) {
      const chunk = chunkFor(chunks, shardKeyOf(body.find, entry.key));
      const docs = await this.chunkDocuments(entry, chunk.shard);
      const keys = docs
        .map((d) => shardKeyOf(d, entry.key))
        .filter((k) => compareKeys(chunk.min, k) <= 0 && compareKeys(k, chunk.max) < 0)
        .sort(compareKeys);
      if (keys.length < 2)
        throw new CommandError('CommandFailed', `chunk has too few documents to split`);
      middle = keys[Math.floor(keys.length / 2)];
    } else {
      throw new CommandError('InvalidOptions', 'need to specify find or middle');
    }
    if (Object.keys(middle).join() !== Object.keys(entry.key).join())
      throw new CommandError(
        'InvalidOptions',
        `split point ${JSON.stringify(middle)} does not match the shard key ${JSON.stringify(entry.key)}`,
      );
    const chunk = chunkFor(chunks, middle);
    if (compareKeys(chunk.min, middle) === 0)
      throw new CommandError('InvalidOptions', `cannot split chunk at its lower bound`);
    const major = Math.max(...chunks.map((c) => c.lastmod.t));
    const minor = Math.max(...chunks.filter((c) => c.lastmod.t === major).map((c) => c.lastmod.i));
    const upper = {
      ...chunk,
      _id: new ObjectId(),
      min: middle,
      lastmod: versionOf(major, minor + 2),
      history: chunk.history.map((h) => ({ ...h })),
    };
    chunk.max = middle;
    chunk.lastmod = versionOf(major, minor + 1);
    this.metadata.chunks.push(upper);
    return this.local({ ok: 1 });
  }

  private async chunkDocuments(entry: CollectionEntry, shardId: string): Promise<Document[]> {
    const [db, ...rest] = entry._id.split('.');
    const coll = this.metadata.shard(shardId).rs.node.catalog.getCollection(db, rest.join('.'));
    return coll ? [...coll.records.values()].map((r) => r.doc) : [];
  }

  /** moveChunk {find | bounds, to} and moveRange {min, toShard}: really moves the documents. */
  private moveChunk(body: Document, conn: ConnectionContext, db: string, name: string): Document {
    this.requireAdmin(name, db);
    this.checkAuth(conn, name, db, [{ target: 'cluster', action: 'anyAdminCommand' }]);
    const entry = this.shardedCollection(body, name);
    const to = name === 'moveRange' ? body.toShard : body.to;
    if (typeof to !== 'string')
      throw new CommandError(
        'InvalidOptions',
        `${name === 'moveRange' ? 'toShard' : 'to'} must be specified`,
      );
    if (!this.shards.some((s) => s.id === to))
      throw new CommandError('ShardNotFound', `Shard ${to} not found`);
    const chunks = this.metadata.chunksOf(entry).sort((a, b) => compareKeys(a.min, b.min));
    let chunk;
    if (name === 'moveRange') {
      if (!isDocument(body.min)) throw new CommandError('InvalidOptions', 'min must be specified');
      chunk = chunkFor(chunks, body.min);
      if (compareKeys(chunk.min, body.min) !== 0)
        throw new CommandError(
          'InvalidOptions',
          'moveRange is only supported for whole chunks by the MongoDB emulator',
        );
    } else if (isDocument(body.find)) {
      chunk = chunkFor(chunks, shardKeyOf(body.find, entry.key));
    } else if (Array.isArray(body.bounds) && isDocument(body.bounds[0])) {
      chunk = chunks.find((c) => compareKeys(c.min, body.bounds[0] as Document) === 0);
      if (!chunk)
        throw new CommandError('InvalidOptions', 'no chunk found with the shard key bounds');
    } else {
      throw new CommandError('InvalidOptions', 'need to specify find or bounds');
    }
    if (entry.permitMigrations === false)
      throw new CommandError(
        'ConflictingOperationInProgress',
        'Collection is undergoing changes so moveChunk is not allowed.',
      );
    if (chunk.shard !== to) {
      // MigrationSourceManager logs moveChunk.start, then moveChunk.commit with the
      // recipient's clone counts, on the donor shard.
      const donor = this.metadata.shard(chunk.shard);
      const range = { min: chunk.min, max: chunk.max, from: chunk.shard, to };
      this.metadata.logChange(
        'moveChunk.start',
        entry._id,
        { ...range },
        donor,
        conn.remoteAddress,
      );
      const counts = this.ops.moveRange(entry, chunk.min, to);
      this.metadata.logChange(
        'moveChunk.commit',
        entry._id,
        { ...range, counts },
        donor,
        conn.remoteAddress,
      );
    }
    return this.local(name === 'moveChunk' ? { millis: 0, ok: 1 } : { ok: 1 });
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
