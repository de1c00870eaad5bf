import { Long, type Document } from 'bson';
import { CommandError, ErrorCodes } from '../errors';
import type { ConnectionContext } from '../commands/types';
import { asNumber } from '../server/values';
import { compileSort } from '../query/sort';
import { valuesEqual } from '../bson/compare';
import { decodeExact } from '../bson/codec';
import type { StoredRecord } from '../storage/record';
import type { Catalog } from '../storage/catalog';
import { applyUpdate } from '../query/update';
import { runPipeline } from '../aggregate/pipeline';
import { InMemoryPipelineEnv } from '../aggregate/testing/in-memory-env';
import type { CollectionEntry, ShardHandle, ShardingMetadata } from './metadata';
import { withShardFilter } from '../server/shard-filter';
import {
  chunkContains,
  chunkFor,
  compareKeys,
  owningShards,
  shardKeyFromFilter,
  shardKeyOf,
  versionOf,
} from './targeting';

export type ShardRunner = (
  shard: ShardHandle,
  body: Document,
  conn: ConnectionContext,
) => Promise<Document>;

/** Documents a router serves itself after merging shard results (getMore pages through them). */
export interface MergedCursor {
  docs: Document[];
  pos: number;
  ns: string;
}

function isDoc(v: unknown): v is Document {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function ok(reply: Document): boolean {
  return asNumber(reply.ok) !== 0;
}

/** The `counts` a recipient reports at _recvChunkCommit (NumberLongs). */
function recipientCounts(c: {
  cloned: number;
  clonedBytes: number;
  catchup: number;
  steady: number;
}): Document {
  return {
    cloned: Long.fromNumber(c.cloned),
    clonedBytes: Long.fromNumber(c.clonedBytes),
    catchup: Long.fromNumber(c.catchup),
    steady: Long.fromNumber(c.steady),
  };
}

/** Strips the per-reply fields a router recomputes when merging replies. */
function failure(reply: Document): Document {
  return reply;
}

/**
 * Routing of commands on a sharded collection: writes by shard key (broadcast for multi
 * writes), reads targeted when the filter pins the shard key and otherwise broadcast to the
 * shards owning chunks, with results merged by the router.
 */
export class ShardedOps {
  constructor(
    private readonly metadata: ShardingMetadata,
    private readonly run: ShardRunner,
    private readonly raw: ShardRunner,
    private readonly openMerged: (cursor: MergedCursor, batchSize: number) => Document,
    /** Runs `work` as an internal distributed transaction (a retryable write on two shards). */
    private readonly internalTransaction: (
      conn: ConnectionContext,
      work: () => Promise<Document | undefined>,
    ) => Promise<Document | undefined>,
    /** The catalog a shard-key check reads on a shard (a transaction's snapshot inside one). */
    private readonly catalogOf: (shard: ShardHandle) => Catalog = (shard) => shard.rs.node.catalog,
  ) {}

  private chunks(entry: CollectionEntry) {
    return this.metadata.chunksOf(entry).sort((a, b) => compareKeys(a.min, b.min));
  }

  private shardForKey(entry: CollectionEntry, key: Document): ShardHandle {
    return this.metadata.shard(chunkFor(this.chunks(entry), key).shard);
  }

  private owners(entry: CollectionEntry): ShardHandle[] {
    return owningShards(this.chunks(entry)).map((id) => this.metadata.shard(id));
  }

  /**
   * `body` as a read of `shard` sent with the routing table's version: the shard returns only
   * documents in the chunks it owns at this moment (mongod's shard filtering), never orphans.
   */
  private owned(entry: CollectionEntry, shard: ShardHandle, body: Document): Document {
    const ranges = this.chunks(entry)
      .filter((c) => c.shard === shard.id)
      .map((c) => ({ ...c, min: c.min, max: c.max }));
    const key = entry.key;
    return withShardFilter(body, (doc) => {
      let value: Document;
      try {
        value = shardKeyOf(doc, key);
      } catch {
        return false; // an array in the shard key: never in a chunk
      }
      return ranges.some((r) => chunkContains(r, value));
    });
  }

  /** Runs a read on one shard with shard filtering. */
  private read(
    entry: CollectionEntry,
    shard: ShardHandle,
    body: Document,
    conn: ConnectionContext,
  ): Promise<Document> {
    return this.run(shard, this.owned(entry, shard, body), conn);
  }

  /** The one shard a filter targets, or undefined when it must be broadcast. */
  private target(entry: CollectionEntry, filter: unknown): ShardHandle | undefined {
    const owners = this.owners(entry);
    if (owners.length === 1) return owners[0];
    if (!isDoc(filter)) return undefined;
    const key = shardKeyFromFilter(filter, entry.key);
    return key ? this.shardForKey(entry, key) : undefined;
  }

  /** Runs a command on every owning shard; the first failure is returned as is. */
  private async broadcast(
    entry: CollectionEntry,
    body: Document,
    conn: ConnectionContext,
  ): Promise<Document[] | Document> {
    const replies: Document[] = [];
    for (const shard of this.owners(entry)) {
      const reply = await this.read(entry, shard, body, conn);
      if (!ok(reply)) return failure(reply);
      replies.push(reply);
    }
    return replies;
  }

  async insert(entry: CollectionEntry, body: Document, conn: ConnectionContext): Promise<Document> {
    const docs = Array.isArray(body.documents) ? (body.documents as Document[]) : [];
    const ordered = body.ordered !== false;
    let n = 0;
    const writeErrors: Document[] = [];
    // Consecutive documents for the same shard go in one batch; batches run in order.
    let i = 0;
    let last: Document | undefined;
    while (i < docs.length) {
      let shard: ShardHandle;
      try {
        shard = this.shardForKey(entry, shardKeyOf(docs[i], entry.key));
      } catch (err) {
        if (!(err instanceof CommandError)) throw err;
        writeErrors.push({ index: i, code: err.code, errmsg: err.message });
        i += 1;
        if (ordered) break;
        continue;
      }
      const start = i;
      const batch: Document[] = [docs[i]];
      i += 1;
      while (i < docs.length) {
        let next: ShardHandle;
        try {
          next = this.shardForKey(entry, shardKeyOf(docs[i], entry.key));
        } catch {
          break;
        }
        if (next !== shard) break;
        batch.push(docs[i]);
        i += 1;
      }
      const reply = await this.run(shard, { ...body, documents: batch }, conn);
      last = reply;
      if (!ok(reply)) return reply;
      n += asNumber(reply.n) ?? 0;
      for (const we of (reply.writeErrors as Document[] | undefined) ?? []) {
        writeErrors.push({ ...we, index: start + (asNumber(we.index) ?? 0) });
      }
      if (ordered && writeErrors.length) break;
    }
    const out: Document = { n };
    if (writeErrors.length) out.writeErrors = writeErrors;
    if (last?.writeConcernError) out.writeConcernError = last.writeConcernError;
    return out;
  }

  /** True when an update may modify a shard-key field (replacements and pipelines always may). */
  private touchesShardKey(entry: CollectionEntry, u: unknown): boolean {
    if (Array.isArray(u)) return true;
    if (!isDoc(u)) return false;
    const keys = Object.keys(u);
    if (!keys.length || !keys[0].startsWith('$')) return true;
    const paths: string[] = [];
    for (const op of keys) {
      const arg = u[op];
      if (!isDoc(arg)) continue;
      for (const [path, value] of Object.entries(arg)) {
        paths.push(path);
        if (op === '$rename' && typeof value === 'string') paths.push(value);
      }
    }
    return Object.keys(entry.key).some((field) =>
      paths.some((p) => p === field || p.startsWith(`${field}.`) || field.startsWith(`${p}.`)),
    );
  }

  /**
   * An update that changes a document's shard key (UpdateStage::checkUpdateChangesShardKeyFields):
   * refused for multi updates; when the new key belongs to another shard ("would change owning
   * shard") allowed only for retryable writes, and then done as a delete on the old shard and
   * an insert on the new one. Returns undefined when the statement can run as it is.
   */
  private async shardKeyUpdate(
    entry: CollectionEntry,
    shards: ShardHandle[],
    stmt: Document,
    body: Document,
    conn: ConnectionContext,
    retryable: boolean,
  ): Promise<{ n: number; error?: Document } | undefined> {
    if (!this.touchesShardKey(entry, stmt.u) || Array.isArray(stmt.u)) return undefined;
    const [db, ...rest] = entry._id.split('.');
    const coll = rest.join('.');
    const filter = isDoc(stmt.q) ? stmt.q : {};
    for (const shard of shards) {
      const catalog = this.catalogOf(shard);
      for (const doc of catalog.find(db, coll, filter)) {
        let after: Document;
        try {
          after = applyUpdate(doc, stmt.u as Document, {
            query: filter,
            ...(Array.isArray(stmt.arrayFilters)
              ? { arrayFilters: stmt.arrayFilters as Document[] }
              : {}),
          }).doc;
        } catch {
          return undefined; // the shard reports the update's own error
        }
        const before = shardKeyOf(doc, entry.key);
        const next = shardKeyOf(after, entry.key);
        if (compareKeys(before, next) !== 0) {
          if (stmt.multi === true) {
            return {
              n: 0,
              error: {
                code: ErrorCodes.InvalidOptions,
                errmsg:
                  'Multi-update operations are not allowed when updating the shard key field.',
              },
            };
          }
          const owner = this.shardForKey(entry, next);
          if (owner === shard) return undefined;
          const inTransaction = body.autocommit === false;
          if (!retryable && !inTransaction) {
            return {
              n: 0,
              error: {
                code: ErrorCodes.IllegalOperation,
                errmsg:
                  'Must run update to shard key field in a multi-statement transaction or with retryWrites: true.',
              },
            };
          }
          // "Would change owning shard": a delete on the old shard and an insert on the new
          // one, in the client's transaction or (retryable write) an internal one.
          const move = async (): Promise<Document | undefined> => {
            const del = await this.raw(
              shard,
              { delete: coll, deletes: [{ q: { _id: doc._id }, limit: 1 }], $db: db },
              conn,
            );
            if (!ok(del)) return { code: del.code, errmsg: del.errmsg };
            const ins = await this.raw(owner, { insert: coll, documents: [after], $db: db }, conn);
            if (!ok(ins)) return { code: ins.code, errmsg: ins.errmsg };
            const we = (ins.writeErrors as Document[] | undefined)?.[0];
            if (we) return { code: we.code, errmsg: we.errmsg };
            return undefined;
          };
          let error: Document | undefined;
          try {
            error = inTransaction ? await move() : await this.internalTransaction(conn, move);
          } catch (err) {
            if (!(err instanceof CommandError)) throw err;
            error = { code: err.code, errmsg: err.message };
          }
          return error ? { n: 0, error: { code: error.code, errmsg: error.errmsg } } : { n: 1 };
        }
        if (stmt.multi !== true) return undefined;
      }
    }
    return undefined;
  }

  async update(
    entry: CollectionEntry,
    body: Document,
    conn: ConnectionContext,
    retryable = false,
  ): Promise<Document> {
    const statements = Array.isArray(body.updates) ? (body.updates as Document[]) : [];
    const ordered = body.ordered !== false;
    let n = 0;
    let nModified = 0;
    const upserted: Document[] = [];
    const writeErrors: Document[] = [];
    for (let i = 0; i < statements.length; i++) {
      const stmt = statements[i];
      const filter = isDoc(stmt.q) ? stmt.q : {};
      const target = this.target(entry, filter);
      let shards: ShardHandle[];
      if (target) shards = [target];
      else if (stmt.upsert === true) {
        writeErrors.push({
          index: i,
          code: ErrorCodes.ShardKeyNotFound,
          errmsg: `Failed to target upsert by query :: could not extract exact shard key`,
        });
        if (ordered) break;
        continue;
      } else shards = this.owners(entry);
      const moved = await this.shardKeyUpdate(entry, shards, stmt, body, conn, retryable);
      if (moved) {
        if (moved.error) writeErrors.push({ index: i, ...moved.error });
        n += moved.n;
        nModified += moved.n;
        if (ordered && writeErrors.length) break;
        continue;
      }
      let matchedOne = false;
      for (const shard of shards) {
        const reply = await this.run(shard, { ...body, updates: [stmt], ordered: true }, conn);
        if (!ok(reply)) return reply;
        const got = asNumber(reply.n) ?? 0;
        n += got;
        nModified += asNumber(reply.nModified) ?? 0;
        for (const u of (reply.upserted as Document[] | undefined) ?? [])
          upserted.push({ ...u, index: i });
        for (const we of (reply.writeErrors as Document[] | undefined) ?? [])
          writeErrors.push({ ...we, index: i });
        if (got > 0) matchedOne = true;
        // A single-document update without the shard key stops at the first shard that matched.
        if (stmt.multi !== true && matchedOne) break;
      }
      if (ordered && writeErrors.length) break;
    }
    const out: Document = { n, nModified };
    if (upserted.length) out.upserted = upserted;
    if (writeErrors.length) out.writeErrors = writeErrors;
    return out;
  }

  async delete(entry: CollectionEntry, body: Document, conn: ConnectionContext): Promise<Document> {
    const statements = Array.isArray(body.deletes) ? (body.deletes as Document[]) : [];
    const ordered = body.ordered !== false;
    let n = 0;
    const writeErrors: Document[] = [];
    for (let i = 0; i < statements.length; i++) {
      const stmt = statements[i];
      const target = this.target(entry, stmt.q);
      const shards = target ? [target] : this.owners(entry);
      for (const shard of shards) {
        const reply = await this.run(shard, { ...body, deletes: [stmt], ordered: true }, conn);
        if (!ok(reply)) return reply;
        const got = asNumber(reply.n) ?? 0;
        n += got;
        for (const we of (reply.writeErrors as Document[] | undefined) ?? [])
          writeErrors.push({ ...we, index: i });
        if (asNumber(stmt.limit) === 1 && got > 0) break;
      }
      if (ordered && writeErrors.length) break;
    }
    const out: Document = { n };
    if (writeErrors.length) out.writeErrors = writeErrors;
    return out;
  }

  async findAndModify(
    entry: CollectionEntry,
    body: Document,
    conn: ConnectionContext,
  ): Promise<Document> {
    const target = this.target(entry, body.query);
    if (target) return this.run(target, body, conn);
    if (body.upsert === true) {
      throw new CommandError(
        'ShardKeyNotFound',
        `Query for sharded findAndModify must contain the shard key`,
      );
    }
    let last: Document | undefined;
    for (const shard of this.owners(entry)) {
      const reply = await this.run(shard, body, conn);
      if (!ok(reply)) return reply;
      last = reply;
      if ((asNumber((reply.lastErrorObject as Document | undefined)?.n) ?? 0) > 0) return reply;
    }
    return last!;
  }

  /** Every matching document from each owning shard (cursors drained). */
  private async gather(
    entry: CollectionEntry,
    body: Document,
    conn: ConnectionContext,
  ): Promise<Document[] | Document> {
    const out: Document[] = [];
    for (const shard of this.owners(entry)) {
      let reply = await this.raw(shard, this.owned(entry, shard, body), conn);
      if (!ok(reply)) return reply;
      let cursor = reply.cursor as Document;
      out.push(...(cursor.firstBatch as Document[]));
      while (cursor.id instanceof Long && !cursor.id.isZero()) {
        const ns = String(cursor.ns);
        reply = await this.raw(
          shard,
          {
            getMore: cursor.id,
            collection: ns.slice(ns.indexOf('.') + 1),
            $db: body.$db,
            ...(isDoc(body.lsid) ? { lsid: body.lsid } : {}),
          },
          conn,
        );
        if (!ok(reply)) return reply;
        cursor = reply.cursor as Document;
        out.push(...(cursor.nextBatch as Document[]));
      }
    }
    return out;
  }

  async find(entry: CollectionEntry, body: Document, conn: ConnectionContext): Promise<Document> {
    const target = this.target(entry, body.filter);
    if (target) return this.read(entry, target, body, conn);
    const skip = asNumber(body.skip) ?? 0;
    const limit = asNumber(body.limit) ?? 0;
    const perShard: Document = { ...body, batchSize: 2 ** 31 - 1 };
    delete perShard.skip;
    delete perShard.singleBatch;
    if (limit) perShard.limit = skip + limit;
    else delete perShard.limit;
    const gathered = await this.gather(entry, perShard, conn);
    if (!Array.isArray(gathered)) return gathered;
    let docs = gathered;
    if (isDoc(body.sort) && Object.keys(body.sort).length) {
      docs = docs.sort(
        compileSort(body.sort, isDoc(body.collation) ? { collation: body.collation } : {}),
      );
    }
    docs = docs.slice(skip, limit ? skip + limit : undefined);
    const batchSize = asNumber(body.batchSize) ?? 101;
    const ns = `${String(body.$db)}.${String(body.find)}`;
    if (body.singleBatch === true) {
      return {
        cursor: { firstBatch: docs.slice(0, batchSize || undefined), id: Long.ZERO, ns },
        ok: 1,
      };
    }
    return this.openMerged({ docs, pos: 0, ns }, batchSize);
  }

  async aggregate(
    entry: CollectionEntry,
    body: Document,
    conn: ConnectionContext,
  ): Promise<Document> {
    const pipeline = Array.isArray(body.pipeline) ? (body.pipeline as Document[]) : [];
    const first = pipeline[0];
    const target = this.target(
      entry,
      isDoc(first) && isDoc(first.$match) ? first.$match : undefined,
    );
    if (target) return this.read(entry, target, body, conn);
    if (pipeline.some((s) => isDoc(s) && ('$out' in s || '$merge' in s || '$changeStream' in s))) {
      throw new CommandError(
        'CommandNotSupported',
        'this aggregation on a sharded collection spread over several shards is not supported by the MongoDB emulator yet',
      );
    }
    // The leading $match runs on the shards; the rest of the pipeline on the merged documents.
    // A $sample right after it runs on the shards too (each returns at most `size` documents,
    // as mongos splits it), and again on the merged ones: the shards never send the whole
    // collection for a sample.
    const match = isDoc(first) && isDoc(first.$match) ? [first] : [];
    const next = pipeline[match.length];
    const shardStages = isDoc(next) && isDoc(next.$sample) ? [...match, next] : match;
    const gathered = await this.gather(
      entry,
      {
        aggregate: body.aggregate,
        pipeline: shardStages,
        cursor: { batchSize: 2 ** 31 - 1 },
        $db: body.$db,
      },
      conn,
    );
    if (!Array.isArray(gathered)) return gathered;
    const coll = String(body.aggregate);
    const env = new InMemoryPipelineEnv(String(body.$db), coll).seed(coll, gathered);
    env.fixedNow = new Date();
    env.fixedClusterTime = this.metadata.clock.current();
    const docs = [...runPipeline(env.docs(coll), pipeline.slice(match.length), env)];
    const cursorOpts = isDoc(body.cursor) ? body.cursor : {};
    return this.openMerged(
      { docs, pos: 0, ns: `${String(body.$db)}.${coll}` },
      asNumber(cursorOpts.batchSize) ?? 101,
    );
  }

  async count(entry: CollectionEntry, body: Document, conn: ConnectionContext): Promise<Document> {
    const target = this.target(entry, body.query);
    if (target) return this.read(entry, target, body, conn);
    const perShard: Document = { ...body };
    delete perShard.skip;
    delete perShard.limit;
    const replies = await this.broadcast(entry, perShard, conn);
    if (!Array.isArray(replies)) return replies;
    let n = replies.reduce((s, r) => s + (asNumber(r.n) ?? 0), 0);
    n = Math.max(0, n - (asNumber(body.skip) ?? 0));
    const limit = Math.abs(asNumber(body.limit) ?? 0);
    if (limit) n = Math.min(n, limit);
    return { n, ok: 1 };
  }

  async distinct(
    entry: CollectionEntry,
    body: Document,
    conn: ConnectionContext,
  ): Promise<Document> {
    const target = this.target(entry, body.query);
    if (target) return this.read(entry, target, body, conn);
    const replies = await this.broadcast(entry, body, conn);
    if (!Array.isArray(replies)) return replies;
    const values: unknown[] = [];
    for (const r of replies) {
      for (const v of (r.values as unknown[]) ?? []) {
        if (!values.some((x) => valuesEqual(x, v))) values.push(v);
      }
    }
    return { values, ok: 1 };
  }

  /** DDL on a sharded collection runs on every shard owning chunks; the primary's reply is kept. */
  async ddl(entry: CollectionEntry, body: Document, conn: ConnectionContext): Promise<Document> {
    const replies = await this.broadcast(entry, body, conn);
    if (!Array.isArray(replies)) return replies;
    return replies[0];
  }

  /** collStats summed over the owning shards, with `sharded: true` and per-shard detail. */
  async collStats(
    entry: CollectionEntry,
    body: Document,
    conn: ConnectionContext,
  ): Promise<Document> {
    const owners = this.owners(entry);
    const shards: Document = {};
    const sums: Document = { count: 0, size: 0, storageSize: 0, totalIndexSize: 0, totalSize: 0 };
    let first: Document | undefined;
    for (const shard of owners) {
      const reply = await this.run(shard, body, conn);
      if (!ok(reply)) return reply;
      first ??= reply;
      const clean = { ...reply };
      delete clean.$clusterTime;
      delete clean.operationTime;
      shards[shard.id] = clean;
      for (const k of Object.keys(sums)) sums[k] += asNumber(reply[k]) ?? 0;
    }
    return {
      sharded: true,
      ns: first!.ns,
      ...sums,
      nindexes: first!.nindexes,
      nchunks: this.chunks(entry).length,
      shards,
      ok: 1,
    };
  }

  /**
   * Moves the documents of [min, max) from the donor to the recipient at the storage level,
   * marked fromMigrate (change streams never show them), and records the new owner.
   */
  moveRange(entry: CollectionEntry, min: Document, to: string): Document {
    const chunks = this.chunks(entry);
    const chunk = chunks.find((c) => compareKeys(c.min, min) === 0);
    if (!chunk)
      throw new CommandError('InvalidOptions', `no chunk starts at ${JSON.stringify(min)}`);
    const counts = { cloned: 0, clonedBytes: 0, catchup: 0, steady: 0 };
    if (chunk.shard === to) return recipientCounts(counts);
    const donor = this.metadata.shard(chunk.shard).rs.node.catalog;
    const recipient = this.metadata.shard(to).rs.node.catalog;
    const [db, ...rest] = entry._id.split('.');
    const coll = rest.join('.');
    const source = donor.getCollection(db, coll);
    let target = recipient.getCollection(db, coll);
    if (source) {
      if (!target) {
        target = recipient.createCollection(db, coll, { ...source.options }, { fromMigrate: true });
        target.uuid = source.uuid;
        target.shardKey = { ...entry.key };
        for (const idx of source.indexes.slice(1))
          recipient.addIndex(target, { ...idx.spec }, { fromMigrate: true });
      }
      const moving: Array<{ rec: StoredRecord; doc: Document }> = [];
      for (const rec of source.records.values()) {
        const doc = decodeExact(rec.bytes);
        if (chunkContains(chunk, shardKeyOf(doc, entry.key))) moving.push({ rec, doc });
      }
      for (const { rec, doc } of moving) {
        counts.cloned += 1;
        counts.clonedBytes += rec.bytes.byteLength;
        target.insert(doc, { fromMigrate: true });
        source.delete(rec, { fromMigrate: true });
      }
    }
    const major = Math.max(...chunks.map((c) => c.lastmod.t)) + 1;
    const previous = chunk.shard;
    chunk.shard = to;
    chunk.lastmod = versionOf(major, 0);
    chunk.onCurrentShardSince = this.metadata.clock.tick();
    chunk.history = [{ validAfter: chunk.onCurrentShardSince, shard: to }, ...chunk.history];
    const donorChunk = chunks.find((c) => c !== chunk && c.shard === previous);
    if (donorChunk) donorChunk.lastmod = versionOf(major, 1);
    return recipientCounts(counts);
  }
}
