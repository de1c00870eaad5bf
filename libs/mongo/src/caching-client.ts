import {
  MongoClient,
  type Collection,
  type CollectionOptions,
  type Db,
  type DbOptions,
  type Document,
} from 'mongodb';

/** Databases whose handles are kept (least recently used dropped first). */
const MAX_DATABASES = 256;
/** Collection handles kept in all (least recently used dropped first). */
const MAX_COLLECTIONS = 512;

/**
 * A MongoClient whose `db()` and `db().collection()` handles are reused. The driver builds a new
 * Db (copying every client option) and a new Collection (resolving its options again) on each
 * call; the adapters ask for them on every operation, and with many small collections that was
 * a measurable share of the worker's CPU (the profile of a 3,000-namespace copy: `db()` alone
 * ~4 %). Handles are stateless wrappers, so reusing them changes nothing else; calls with
 * options bypass the cache. Bounded in all, not per database: a sync over 100,000 namespaces
 * keeps a few hundred (a handle costs ~0.5 KB).
 */
export class CachingMongoClient extends MongoClient {
  private readonly databases = new Map<string, Db>();
  /** Every database's collection handles, by "database\0collection", least recently used first. */
  private readonly collections = new Map<string, Collection<Document>>();

  override db(name?: string, options?: DbOptions): Db {
    if (options && Object.keys(options).length > 0) return super.db(name, options);
    const key = name ?? '';
    const cached = this.databases.get(key);
    if (cached) {
      this.databases.delete(key); // most recently used last
      this.databases.set(key, cached);
      return cached;
    }
    const db = super.db(name);
    cacheCollections(db, key, this.collections);
    this.databases.set(key, db);
    if (this.databases.size > MAX_DATABASES) this.databases.delete(firstKey(this.databases));
    return db;
  }
}

function cacheCollections(
  db: Db,
  database: string,
  collections: Map<string, Collection<Document>>,
): void {
  const make = db.collection.bind(db);
  db.collection = (<T extends Document = Document>(
    name: string,
    options?: CollectionOptions,
  ): Collection<T> => {
    if (options && Object.keys(options).length > 0) return make<T>(name, options);
    const key = `${database}\0${name}`;
    let handle = collections.get(key);
    if (handle) {
      collections.delete(key);
    } else {
      handle = make(name);
      if (collections.size >= MAX_COLLECTIONS) collections.delete(firstKey(collections));
    }
    collections.set(key, handle);
    return handle as unknown as Collection<T>;
  }) as Db['collection'];
}

function firstKey<K>(map: Map<K, unknown>): K {
  return map.keys().next().value as K;
}
