import type { Binary, Document } from 'bson';
import type { NodeServices } from '../node/node-services';
import type { NewOplogEntry } from '../oplog/oplog-entry';
import { CommandError } from '../errors';
import { Collection, ID_INDEX_SPEC, newUuid, type WriteOptions } from './collection';
import { Index } from './index';
import { Bound } from './key-compare';
import { planQuery } from './planner';
import { decodeFields } from '../bson/partial';
import { filterFieldSet } from './query-exec';
import { compileFilter } from '../query/matcher';

/** A view: a stored aggregation over another namespace of the same database. */
export interface ViewDefinition {
  readonly kind: 'view';
  db: string;
  name: string;
  /** Options as given to create ({viewOn, pipeline, collation?}). */
  options: Document;
}

export type Namespace = Collection | ViewDefinition;

class Database {
  readonly collections = new Map<string, Collection>();
  readonly views = new Map<string, ViewDefinition>();
  constructor(readonly name: string) {}
  get empty(): boolean {
    return this.collections.size === 0 && this.views.size === 0;
  }
}

const MAX_NS_LENGTH = 255;

/** Rejects database names mongod refuses (73 InvalidNamespace). */
export function checkDbName(db: string): void {
  if (typeof db !== 'string' || db.length === 0 || /[/\\. "$\0]/.test(db) || db.length >= 64) {
    throw new CommandError('InvalidNamespace', `Invalid database name: '${db}'`);
  }
}

/** Rejects collection names mongod refuses for user operations (73 InvalidNamespace). */
export function checkCollectionName(db: string, coll: string): void {
  checkDbName(db);
  if (
    typeof coll !== 'string' ||
    coll.length === 0 ||
    coll.startsWith('.') ||
    coll.includes('\0')
  ) {
    throw new CommandError('InvalidNamespace', `Invalid namespace specified '${db}.${coll}'`);
  }
  if (coll.includes('$'))
    throw new CommandError('InvalidNamespace', `Invalid collection name: ${coll}`);
  if (`${db}.${coll}`.length > MAX_NS_LENGTH) {
    throw new CommandError(
      'InvalidNamespace',
      `Fully qualified namespace is too long. Namespace: ${db}.${coll}`,
    );
  }
}

/**
 * Every database, collection and view of the node. Databases exist while they hold a
 * namespace (like mongod, an empty database is not listed). DDL appends oplog entries in the
 * shape change streams report with showExpandedEvents.
 */
export class Catalog {
  private readonly dbs = new Map<string, Database>();
  /** Interval of the TTL monitor (mongod's ttlMonitorSleepSecs: 60 s). */
  private ttlIntervalMs = 60_000;
  private ttlTimer: NodeJS.Timeout | undefined;

  constructor(readonly node: NodeServices) {}

  // ---- lookups -----------------------------------------------------------------------

  databaseNames(): string[] {
    return [...this.dbs.values()].filter((d) => !d.empty).map((d) => d.name);
  }

  hasDatabase(db: string): boolean {
    const d = this.dbs.get(db);
    return Boolean(d && !d.empty);
  }

  getCollection(db: string, name: string): Collection | undefined {
    return this.dbs.get(db)?.collections.get(name);
  }

  getView(db: string, name: string): ViewDefinition | undefined {
    return this.dbs.get(db)?.views.get(name);
  }

  /**
   * A view's base collection and stages, views over views resolved: the innermost view's stages
   * first, then each outer one's, `view`'s last (a cycle stops where it repeats).
   */
  viewChain(db: string, view: ViewDefinition): { base: string; stages: Document[] } {
    let stages = [...((view.options.pipeline as Document[] | undefined) ?? [])];
    let base = view.options.viewOn as string;
    const seen = new Set([view.name]);
    for (;;) {
      const inner = this.getView(db, base);
      if (!inner || seen.has(base)) break;
      seen.add(base);
      stages = [...((inner.options.pipeline as Document[] | undefined) ?? []), ...stages];
      base = inner.options.viewOn as string;
    }
    return { base, stages };
  }

  lookup(db: string, name: string): Namespace | undefined {
    return this.getCollection(db, name) ?? this.getView(db, name);
  }

  /** Collections and views of a database, in creation order. */
  namespaces(db: string): Namespace[] {
    const d = this.dbs.get(db);
    return d ? [...d.collections.values(), ...d.views.values()] : [];
  }

  collections(db: string): Collection[] {
    const d = this.dbs.get(db);
    return d ? [...d.collections.values()] : [];
  }

  /** Finds a collection by UUID (change streams and resume tokens). */
  collectionByUuid(uuid: Binary): Collection | undefined {
    const hex = Buffer.from(uuid.buffer).toString('hex');
    for (const d of this.dbs.values()) {
      for (const c of d.collections.values())
        if (Buffer.from(c.uuid.buffer).toString('hex') === hex) return c;
    }
    return undefined;
  }

  /** Current document with this `_id` (fullDocument: 'updateLookup'); undefined when absent. */
  findById(db: string, coll: string, id: unknown): Document | undefined {
    return this.getCollection(db, coll)?.recordById(id)?.doc;
  }

  /** Documents matching a filter, streamed through the planner (no sort/projection). */
  *find(db: string, coll: string, filter: Document = {}): Generator<Document> {
    const c = this.getCollection(db, coll);
    if (!c) return;
    const match = compileFilter(filter);
    const fields = filterFieldSet(filter);
    for (const rec of planQuery(c, { filter }).records) {
      if (fields ? match(decodeFields(rec.bytes, fields)) : match(rec.doc)) yield rec.doc;
    }
  }

  // ---- DDL ---------------------------------------------------------------------------

  private database(db: string): Database {
    let d = this.dbs.get(db);
    if (!d) {
      d = new Database(db);
      this.dbs.set(db, d);
    }
    return d;
  }

  /** Creates a collection (48 NamespaceExists when taken) and logs its `create` entry. */
  createCollection(
    db: string,
    name: string,
    options: Document = {},
    opts: WriteOptions = {},
  ): Collection {
    if (this.lookup(db, name))
      throw new CommandError('NamespaceExists', `Collection ${db}.${name} already exists.`);
    if (options.clusteredIndex !== undefined) {
      throw new CommandError(
        'InvalidOptions',
        'clustered collections are not supported by the emulator',
      );
    }
    const coll = new Collection(this, db, name, options);
    this.database(db).collections.set(name, coll);
    this.log(
      {
        op: 'create',
        db,
        coll: name,
        uuid: coll.uuid,
        operationDescription: createDescription(options),
      },
      opts,
    );
    return coll;
  }

  /**
   * Registers a collection built elsewhere under its name, logging nothing: a transaction's
   * new collection at its commit (the transaction logs the `create` in its applyOps).
   * Returns what takes it out again, as silently (a commit that fails undoes its work).
   */
  attachCollection(coll: Collection): () => void {
    if (this.lookup(coll.db, coll.name))
      throw new CommandError(
        'NamespaceExists',
        `Collection ${coll.db}.${coll.name} already exists.`,
      );
    const d = this.database(coll.db);
    d.collections.set(coll.name, coll);
    return () => {
      if (d.collections.get(coll.name) === coll) d.collections.delete(coll.name);
    };
  }

  /** Collection-only commands (writes, indexes, stats) refuse views as mongod does (166). */
  assertNotView(db: string, name: string): void {
    if (this.getView(db, name)) {
      throw new CommandError(
        'CommandNotSupportedOnView',
        `Namespace ${db}.${name} is a view, not a collection`,
      );
    }
  }

  /** The collection, created implicitly (as an insert or createIndexes does) when missing. */
  ensureCollection(
    db: string,
    name: string,
    opts: WriteOptions = {},
  ): { coll: Collection; created: boolean } {
    const existing = this.getCollection(db, name);
    if (existing) return { coll: existing, created: false };
    this.assertNotView(db, name);
    checkCollectionName(db, name);
    return { coll: this.createCollection(db, name, {}, opts), created: true };
  }

  createView(db: string, name: string, options: Document, opts: WriteOptions = {}): ViewDefinition {
    if (this.lookup(db, name))
      throw new CommandError('NamespaceExists', `Collection ${db}.${name} already exists.`);
    const view: ViewDefinition = { kind: 'view', db, name, options };
    this.database(db).views.set(name, view);
    this.log(
      {
        op: 'create',
        db,
        coll: name,
        operationDescription: { viewOn: options.viewOn, pipeline: options.pipeline ?? [] },
      },
      opts,
    );
    return view;
  }

  /** Drops a collection or view; returns the collection's index count, or undefined if missing. */
  dropNamespace(
    db: string,
    name: string,
    opts: WriteOptions = {},
  ): { nIndexesWas?: number } | undefined {
    const d = this.dbs.get(db);
    if (!d) return undefined;
    const view = d.views.get(name);
    if (view) {
      d.views.delete(name);
      this.log({ op: 'drop', db, coll: name }, opts);
      return {};
    }
    const coll = d.collections.get(name);
    if (!coll) return undefined;
    d.collections.delete(name);
    this.log({ op: 'drop', db, coll: name, uuid: coll.uuid }, opts);
    return { nIndexesWas: coll.indexes.length };
  }

  /** Drops every namespace (a `drop` entry each) then logs `dropDatabase`. */
  dropDatabase(db: string, opts: WriteOptions = {}): void {
    const d = this.dbs.get(db);
    if (!d || d.empty) return;
    for (const name of [...d.collections.keys()]) this.dropNamespace(db, name, opts);
    for (const name of [...d.views.keys()]) this.dropNamespace(db, name, opts);
    this.dbs.delete(db);
    this.log({ op: 'dropDatabase', db }, opts);
  }

  /**
   * Renames a collection, within or across databases, keeping documents and indexes. A
   * cross-database rename gives the target a new UUID, as mongod's copy-based rename does.
   */
  renameCollection(
    fromDb: string,
    from: string,
    toDb: string,
    to: string,
    dropTarget: boolean,
    opts: WriteOptions = {},
  ): void {
    const source = this.getCollection(fromDb, from);
    if (!source) {
      if (this.getView(fromDb, from)) {
        throw new CommandError(
          'CommandNotSupportedOnView',
          `cannot rename view: ${fromDb}.${from}`,
        );
      }
      throw new CommandError('NamespaceNotFound', 'Source collection does not exist');
    }
    if (fromDb === toDb && from === to) {
      throw new CommandError('IllegalOperation', "Can't rename a collection to itself");
    }
    const target = this.lookup(toDb, to);
    let droppedUuid: Binary | undefined;
    if (target) {
      if (!dropTarget) throw new CommandError('NamespaceExists', 'target namespace exists');
      if (target.kind === 'view') {
        throw new CommandError(
          'CommandNotSupportedOnView',
          `cannot rename to a view: ${toDb}.${to}`,
        );
      }
      droppedUuid = target.uuid;
      this.database(toDb).collections.delete(to);
    }
    this.dbs.get(fromDb)!.collections.delete(from);
    if (fromDb !== toDb) source.uuid = newUuid();
    const description: Document = { to: { db: toDb, coll: to } };
    if (droppedUuid) description.dropTarget = droppedUuid;
    this.log(
      {
        op: 'rename',
        db: fromDb,
        coll: from,
        uuid: source.uuid,
        to: { db: toDb, coll: to },
        operationDescription: description,
      },
      opts,
    );
    source.db = toDb;
    source.name = to;
    this.database(toDb).collections.set(to, source);
  }

  /** Adds a built index and logs `createIndexes` with its spec. */
  addIndex(coll: Collection, spec: Document, opts: WriteOptions = {}): Index {
    const idx = new Index(spec);
    coll.buildIndex(idx);
    this.log(
      {
        op: 'createIndexes',
        db: coll.db,
        coll: coll.name,
        uuid: coll.uuid,
        operationDescription: { indexes: [spec] },
      },
      opts,
    );
    if (spec.expireAfterSeconds !== undefined) this.startTtlMonitor();
    return idx;
  }

  dropIndex(coll: Collection, idx: Index, opts: WriteOptions = {}): void {
    const i = coll.indexes.indexOf(idx);
    if (i <= 0) return;
    coll.indexes.splice(i, 1);
    this.log(
      {
        op: 'dropIndexes',
        db: coll.db,
        coll: coll.name,
        uuid: coll.uuid,
        operationDescription: { indexes: [idx.spec] },
      },
      opts,
    );
  }

  /** Logs a collMod (`modify`) with what changed and, when known, the state before. */
  logModify(
    ns: Namespace,
    description: Document,
    stateBeforeChange: Document | undefined,
    opts: WriteOptions = {},
  ): void {
    const entry: NewOplogEntry = {
      op: 'modify',
      db: ns.db,
      coll: ns.name,
      operationDescription: description,
    };
    if (ns.kind === 'collection') entry.uuid = ns.uuid;
    if (stateBeforeChange) entry.stateBeforeChange = stateBeforeChange;
    this.log(entry, opts);
  }

  private log(entry: NewOplogEntry, opts: WriteOptions): void {
    if (opts.lsid) entry.lsid = opts.lsid;
    if (opts.txnNumber) entry.txnNumber = opts.txnNumber;
    if (opts.fromMigrate) entry.fromMigrate = true;
    this.node.oplog.append(entry);
  }

  // ---- TTL ---------------------------------------------------------------------------

  /** Changes the TTL monitor period (tests use a short one); restarts a running monitor. */
  setTtlInterval(ms: number): void {
    this.ttlIntervalMs = ms;
    if (this.ttlTimer) {
      this.stopTtlMonitor();
      this.startTtlMonitor();
    }
  }

  startTtlMonitor(): void {
    if (this.ttlTimer) return;
    this.ttlTimer = setInterval(() => this.runTtlPass(), this.ttlIntervalMs);
    this.ttlTimer.unref();
  }

  stopTtlMonitor(): void {
    if (this.ttlTimer) clearInterval(this.ttlTimer);
    this.ttlTimer = undefined;
  }

  /**
   * One TTL pass: for each single-field TTL index, deletes documents whose indexed date (the
   * earliest, for arrays) is older than expireAfterSeconds. Deletes are logged like user deletes.
   * Returns how many documents were removed.
   */
  runTtlPass(now = Date.now()): number {
    let removed = 0;
    for (const d of this.dbs.values()) {
      for (const coll of [...d.collections.values()]) {
        for (const idx of [...coll.indexes]) {
          const secs = idx.spec.expireAfterSeconds;
          if (secs === undefined || idx.fields.length !== 1 || idx.hidden) continue;
          const cutoff = now - Number(secs) * 1000;
          const expired = new Set<number>();
          // Dates form one contiguous rank in the index: scan only that range.
          const dateRank = 45;
          const asc = idx.dirs[0] > 0;
          const start = [new Bound(dateRank, asc ? -1 : 1), -Infinity];
          for (const [key, rid] of idx.tree.entries(start)) {
            const v = key[0];
            if (!(v instanceof Date)) break;
            if (v.getTime() < cutoff) expired.add(rid);
            else if (asc) break;
          }
          for (const rid of expired) {
            const rec = coll.record(rid);
            if (!rec) continue;
            try {
              coll.delete(rec);
              removed++;
            } catch (err) {
              // A document an open transaction wrote: mongod's TTL monitor skips it on a
              // WriteConflict and tries again on its next pass.
              if (!(err instanceof CommandError) || err.code !== 112) throw err;
            }
          }
        }
      }
    }
    return removed;
  }
}

/** The `create` event's operationDescription: idIndex for collections plus the options. */
export function createDescription(options: Document): Document {
  const out: Document = { ...options };
  if (!options.viewOn) out.idIndex = { ...ID_INDEX_SPEC };
  return out;
}
