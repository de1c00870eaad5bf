import { Binary, type Document } from 'bson';
import { MongoServerError, type Db, type MongoClient } from 'mongodb';
import { RawDocument, type DocumentLookup, type Namespace } from '@sync/engine/apply';
import { supportsCollectionUUID } from './server-features';
import { rawDocumentCursor, readRawBuffered } from './raw-cursor';

/** CollectionUUIDMismatch: the name belongs to another collection (or none) now. */
const COLLECTION_UUID_MISMATCH = 361;

/**
 * Reads one source document by its documentKey (shard key included, so mongos targets one
 * shard), as its raw bytes (RawDocument: written to the destination exactly as the source
 * stores it, decoded only where its fields must be read). Used for updates that cannot be
 * replayed from their description.
 * With the collection's UUID the read asserts it (6.0+): a collection renamed on the source
 * since the event is followed to its new name, and a name that now belongs to another
 * collection is never read from; a collection that is gone reads as a missing document (its
 * drop arrives as a change event).
 */
export class MongoDocumentLookup implements DocumentLookup {
  constructor(private readonly client: MongoClient) {}

  async findByKey(
    ns: Namespace,
    documentKey: Document,
    collectionUuid?: string,
  ): Promise<RawDocument | null> {
    if (collectionUuid === undefined || !(await supportsCollectionUUID(this.client))) {
      return firstRaw(this.client.db(ns.db), {
        find: ns.coll,
        filter: documentKey,
        limit: 1,
        singleBatch: true,
      });
    }
    let coll = ns.coll;
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        return await firstRaw(this.client.db(ns.db), {
          find: coll,
          filter: documentKey,
          limit: 1,
          singleBatch: true,
          collectionUUID: new Binary(Buffer.from(collectionUuid, 'hex'), Binary.SUBTYPE_UUID),
          readConcern: { level: 'majority' },
        });
      } catch (error) {
        if (
          !(error instanceof MongoServerError) ||
          Number(error.code) !== COLLECTION_UUID_MISMATCH
        ) {
          throw error;
        }
        const actual =
          (error.errorResponse as { actualCollection?: unknown } | undefined)?.actualCollection ??
          (error as { actualCollection?: unknown }).actualCollection;
        if (typeof actual !== 'string') return null; // the collection is gone
        coll = actual;
      }
    }
    throw new Error(`the source collection of ${ns.db}.${ns.coll} kept moving during a lookup`);
  }
}

/** The first document a `find` returns, as its bytes (errors decoded as usual), or null. */
async function firstRaw(db: Db, command: Document): Promise<RawDocument | null> {
  const cursor = rawDocumentCursor(db, command);
  try {
    if (!(await cursor.hasNext())) return null;
    const [first] = readRawBuffered(cursor);
    return first ? new RawDocument(first) : null;
  } finally {
    await cursor.close().catch(() => undefined);
  }
}
