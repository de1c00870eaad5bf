import type { Binary, Document } from 'bson';
import type { Catalog, Namespace } from '../storage/catalog';
import type { Collection, WriteOptions } from '../storage/collection';
import type { Index } from '../storage/index';
import type { ReplicaSetNode } from '../node/replica-set-node';
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
}

/**
 * The catalog as a transaction sees it: the collections as of the transaction's snapshot (taken
 * when its first command runs, like WiredTiger's snapshot), each a private copy the
 * transaction's writes go to. Views and catalog operations are the live catalog's.
 */
export class TransactionSnapshot {
  private readonly byUuid = new Map<string, SnapshotCollection>();
  readonly catalog: Catalog;
  readonly node: ReplicaSetNode;

  constructor(private readonly liveNode: ReplicaSetNode) {
    const live = liveNode.catalog;
    for (const db of live.databaseNames()) for (const c of live.collections(db)) this.entry(c);
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the overrides' own `this` is the catalog
    const self = this;
    const catalog = Object.create(live) as Catalog;
    const overrides: Partial<Catalog> = {
      getCollection(db: string, name: string) {
        const c = live.getCollection(db, name);
        return c && self.entry(c).working;
      },
      lookup(db: string, name: string): Namespace | undefined {
        return this.getCollection!(db, name) ?? live.getView(db, name);
      },
      collections(db: string) {
        return live.collections(db).map((c) => self.entry(c).working);
      },
      namespaces(db: string) {
        return live
          .namespaces(db)
          .map((n) => (n.kind === 'collection' ? self.entry(n).working : n));
      },
      collectionByUuid(uuid: Binary) {
        const c = live.collectionByUuid(uuid);
        return c && self.entry(c).working;
      },
      ensureCollection(db: string, name: string, opts: WriteOptions = {}) {
        // Implicit creation happens outside the transaction (see README): the create entry is
        // an ordinary one, written at once.
        const { sink: _sink, ...plain } = opts;
        const { coll, created } = live.ensureCollection(db, name, plain);
        return { coll: self.entry(coll).working, created };
      },
    };
    Object.assign(catalog, overrides);
    this.catalog = catalog;
    const node = Object.create(liveNode) as ReplicaSetNode;
    (node as unknown as { catalog: Catalog }).catalog = catalog;
    this.node = node;
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
