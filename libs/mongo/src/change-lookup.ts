import { Binary, type Document } from 'bson';
import { MongoServerError, type MongoClient } from 'mongodb';
import type { DocumentLookup, Namespace } from '@sync/engine/apply';
import { supportsCollectionUUID } from './server-features';
import { EXACT_BSON } from './exact-bson';

/** CollectionUUIDMismatch: the name belongs to another collection (or none) now. */
const COLLECTION_UUID_MISMATCH = 361;

/**
 * Reads one source document by its documentKey (shard key included, so mongos targets one
 * shard), decoded exactly. Used for updates that cannot be replayed from their description.
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
  ): Promise<Document | null> {
    if (collectionUuid === undefined || !(await supportsCollectionUUID(this.client))) {
      return this.client.db(ns.db).collection(ns.coll).findOne(documentKey, EXACT_BSON);
    }
    let coll = ns.coll;
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const reply = await this.client.db(ns.db).command(
          {
            find: coll,
            filter: documentKey,
            limit: 1,
            singleBatch: true,
            collectionUUID: new Binary(Buffer.from(collectionUuid, 'hex'), Binary.SUBTYPE_UUID),
            readConcern: { level: 'majority' },
          },
          EXACT_BSON,
        );
        const batch = (reply.cursor as { firstBatch?: Document[] } | undefined)?.firstBatch ?? [];
        return batch[0] ?? null;
      } catch (error) {
        // Decoded unpromoted (EXACT_BSON): the code may be an Int32 wrapper.
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
