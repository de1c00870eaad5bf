import type { Document } from 'bson';
import type { MongoClient } from 'mongodb';
import type { DocumentLookup, Namespace } from '@sync/engine/apply';
import { EXACT_BSON } from './exact-bson';

/**
 * Reads one source document by its documentKey (shard key included, so mongos targets one
 * shard), decoded exactly. Used for updates that cannot be replayed from their description.
 */
export class MongoDocumentLookup implements DocumentLookup {
  constructor(private readonly client: MongoClient) {}

  findByKey(ns: Namespace, documentKey: Document): Promise<Document | null> {
    return this.client.db(ns.db).collection(ns.coll).findOne(documentKey, EXACT_BSON);
  }
}
