import type { Binary, Document } from 'bson';
import { CommandError } from '../errors';
import { checkCollectionName, createDescription } from '../storage/catalog';
import type { Catalog, Namespace } from '../storage/catalog';
import { Collection, type WriteOptions } from '../storage/collection';
import { Index } from '../storage/index';
import type { NodeServices } from '../node/node-services';
import { uuidKey } from '../changes/images';

/**
 * A collection as of a point in time, editable without touching the original: the records and
 * every index tree are B-tree clones (O(1), copy-on-write), the rest is inherited from the live
 * collection through the prototype (name, uuid, options, validator, shard key).
 */
export function cloneCollection(live: Collection): Collection {
  const copy = Object.create(live) as Collection;
  const own = copy as unknown as Record<string, unknown>;
  own.records = live.records.clone();
  own.indexes = live.indexes.map(cloneIndex);
  own.dataSize = live.dataSize;
  own.nextRid = (live as unknown as { nextRid: number }).nextRid;
  return copy;
}

function cloneIndex(live: Index): Index {
  const copy = Object.create(live) as Index;
  const own = copy as unknown as Record<string, unknown>;
  own.tree = live.tree.clone();
  own.bytes = live.bytes;
  own.multikey = live.multikey;
  return copy;
}

/** One collection as a transaction sees it. */
export interface SnapshotCollection {
  live: Collection;
  /** The transaction's copy: the snapshot plus the transaction's own writes. */
  working: Collection;
  /** The snapshot, never written: what a write-conflict check compares the live data with. */
  base: Collection;
  /**
   * Created by the transaction: `live` is the collection its commit will attach to the
   * catalog (empty until then), invisible outside the transaction.
   */
  created?: boolean;
}

/**
 * The catalog as a transaction sees it: the collections as of the transaction's snapshot (taken
 * when its first command runs, like WiredTiger's snapshot), each a private copy the
 * transaction's writes go to, plus the collections the transaction created (explicitly or by a
 * write), which nobody else sees before the commit. Views and the other catalog operations are
 * the live catalog's.
 */
export class TransactionSnapshot {
  private readonly byUuid = new Map<string, SnapshotCollection>();
  /** Collections the transaction created, by `db.name`. */
  private readonly created = new Map<string, SnapshotCollection>();
  readonly catalog: Catalog;
  readonly node: NodeServices;

  constructor(private readonly liveNode: NodeServices) {
    const live = liveNode.catalog;
    for (const db of live.databaseNames()) for (const c of live.collections(db)) this.entry(c);
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the overrides' own `this` is the catalog
    const self = this;
    const createdIn = (db: string) =>
      [...self.created.values()].filter((e) => e.live.db === db).map((e) => e.working);
    const catalog = Object.create(live) as Catalog;
    const overrides: Partial<Catalog> = {
      getCollection(db: string, name: string) {
        const mine = self.created.get(`${db}.${name}`);
        if (mine) return mine.working;
        const c = live.getCollection(db, name);
        return c && self.entry(c).working;
      },
      lookup(db: string, name: string): Namespace | undefined {
        return this.getCollection!(db, name) ?? live.getView(db, name);
      },
      hasDatabase(db: string) {
        return live.hasDatabase(db) || createdIn(db).length > 0;
      },
      databaseNames() {
        const names = new Set(live.databaseNames());
        for (const e of self.created.values()) names.add(e.live.db);
        return [...names];
      },
      collections(db: string) {
        return [...live.collections(db).map((c) => self.entry(c).working), ...createdIn(db)];
      },
      namespaces(db: string) {
        return [
          ...live.namespaces(db).map((n) => (n.kind === 'collection' ? self.entry(n).working : n)),
          ...createdIn(db),
        ];
      },
      collectionByUuid(uuid: Binary) {
        const mine = self.byUuid.get(uuidKey(uuid));
        if (mine?.created) return mine.working;
        const c = live.collectionByUuid(uuid);
        return c && self.entry(c).working;
      },
      createCollection(db: string, name: string, options: Document = {}, opts: WriteOptions = {}) {
        return self.create(db, name, options, opts);
      },
      ensureCollection(db: string, name: string, opts: WriteOptions = {}) {
        const existing = this.getCollection!(db, name);
        if (existing) return { coll: existing, created: false };
        live.assertNotView(db, name);
        checkCollectionName(db, name);
        return { coll: self.create(db, name, {}, opts), created: true };
      },
      addIndex(coll: Collection, spec: Document, opts: WriteOptions = {}): Index {
        return self.addIndex(coll, spec, opts);
      },
      dropIndex(coll: Collection, idx: Index) {
        // Only an index this transaction just built (createIndexes undoing a failed batch).
        const i = coll.indexes.indexOf(idx);
        if (i > 0) coll.indexes.splice(i, 1);
      },
    };
    Object.assign(catalog, overrides);
    this.catalog = catalog;
    const node = Object.create(liveNode) as NodeServices;
    (node as unknown as { catalog: Catalog }).catalog = catalog;
    this.node = node;
  }

  /**
   * `create` (or an insert/upsert/createIndexes creating the collection) inside the
   * transaction: mongod 4.4+ creates it in the transaction (it appears at the commit, and the
   * commit's applyOps holds its `c` entry). Explicit creation needs read concern local.
   */
  private create(db: string, name: string, options: Document, opts: WriteOptions): Collection {
    if (this.catalog.lookup(db, name))
      throw new CommandError('NamespaceExists', `Collection ${db}.${name} already exists.`);
    const live = new Collection(this.liveNode.catalog, db, name, options);
    const e: SnapshotCollection = {
      live,
      working: cloneCollection(live),
      base: cloneCollection(live),
      created: true,
    };
    this.byUuid.set(uuidKey(live.uuid), e);
    this.created.set(`${db}.${name}`, e);
    opts.sink?.({
      op: 'create',
      db,
      coll: name,
      uuid: live.uuid,
      operationDescription: createDescription(options),
    });
    return e.working;
  }

  /**
   * createIndexes inside the transaction: only on a collection the transaction created
   * (mongod 7.0 refuses new indexes on an existing collection with 263).
   */
  private addIndex(coll: Collection, spec: Document, opts: WriteOptions): Index {
    const e = this.byUuid.get(uuidKey(coll.uuid));
    if (!e?.created) {
      throw new CommandError(
        'OperationNotSupportedInTransaction',
        `Cannot create new indexes on existing collection ${coll.db}.${coll.name} in a multi-document transaction.`,
      );
    }
    const idx = new Index(spec);
    e.working.buildIndex(idx);
    opts.sink?.({
      op: 'createIndexes',
      db: coll.db,
      coll: coll.name,
      uuid: coll.uuid,
      operationDescription: { indexes: [spec] },
    });
    return idx;
  }

  /** The transaction's copy of a live collection (taken now if it was created since the start). */
  entry(live: Collection): SnapshotCollection {
    const key = uuidKey(live.uuid);
    let e = this.byUuid.get(key);
    if (!e || e.live !== live) {
      e = { live, working: cloneCollection(live), base: cloneCollection(live) };
      this.byUuid.set(key, e);
    }
    return e;
  }

  byCollectionUuid(uuid: Binary): SnapshotCollection | undefined {
    return this.byUuid.get(uuidKey(uuid));
  }

  /** The document with this `_id` in the snapshot (undefined when it did not exist then). */
  static baseDocument(e: SnapshotCollection, id: unknown): Document | undefined {
    return e.base.recordById(id)?.doc;
  }
}
