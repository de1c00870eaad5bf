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
/** Collection handles kept per database. */
const MAX_COLLECTIONS = 256;

/**
 * A MongoClient whose `db()` and `db().collection()` handles are reused. The driver builds a new
 * Db (copying every client option) and a new Collection (resolving its options again) on each
 * call; the adapters ask for them on every operation, and with many small collections that was
 * a measurable share of the worker's CPU (the profile of a 3,000-namespace copy: `db()` alone
 * ~4 %). Handles are stateless wrappers, so reusing them changes nothing else; calls with
 * options bypass the cache. Bounded: a sync over 100,000 namespaces keeps a few hundred.
 */
export class CachingMongoClient extends MongoClient {
  private readonly databases = new Map<string, Db>();

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
    cacheCollections(db);
    this.databases.set(key, db);
    if (this.databases.size > MAX_DATABASES) this.databases.delete(firstKey(this.databases));
    return db;
  }
}

function cacheCollections(db: Db): void {
  const collections = new Map<string, Collection<Document>>();
  const make = db.collection.bind(db);
  db.collection = (<T extends Document = Document>(
    name: string,
    options?: CollectionOptions,
  ): Collection<T> => {
    if (options && Object.keys(options).length > 0) return make<T>(name, options);
    let handle = collections.get(name);
    if (handle) {
      collections.delete(name);
    } else {
      handle = make(name);
      if (collections.size >= MAX_COLLECTIONS) collections.delete(firstKey(collections));
    }
    collections.set(name, handle);
    return handle as unknown as Collection<T>;
  }) as Db['collection'];
}

function firstKey<K>(map: Map<K, unknown>): K {
  return map.keys().next().value as K;
}
