import {
  labelFault,
  labelsForCode,
  type ClaimGuard,
  type ClusterDescription,
  type DestinationCluster,
  type IndexModification,
  type InsertResult,
} from '@sync/engine';
import { BSON, EJSON, type Document, type Timestamp } from 'bson';
import { MongoBulkWriteError, MongoServerError, type MongoClient } from 'mongodb';
import { inspectCluster } from './cluster-inspector';
import { sendRawWrite, throwIfWriteConcernFailed } from './change-writer';
import { DocumentSequenceImpl, documentSequence } from './document-sequence';
import { EXACT_BSON } from './exact-bson';
import { labelDriverError, writeErrorLabels } from './fault-labelling';
import { balancerMode, isMongos, setBalancer } from './sharding-metadata';

const NAMESPACE_EXISTS = 48;
const NAMESPACE_NOT_FOUND = 26;

/**
 * DestinationCluster over the official driver (majority writes come from the client options).
 * With a guard (a per-shard worker), every write first checks the shard claim's lease and
 * throws ShardClaimLost once it is lost: user data carries no claim epoch, so this check is
 * what keeps a worker that lost its shard from writing after its successor started.
 */
export class MongoDestinationCluster implements DestinationCluster {
  constructor(
    private readonly client: MongoClient,
    private readonly host: string,
    private readonly guard?: ClaimGuard,
  ) {}

  describe(): Promise<ClusterDescription> {
    return inspectCluster(this.client, this.host);
  }

  async clusterTime(): Promise<Timestamp> {
    this.guard?.assertHeld();
    const reply = await this.client
      .db('admin')
      .command({ appendOplogNote: 1, data: { msg: 'cluster-sync destination time' } });
    const time =
      reply.operationTime ??
      (reply.$clusterTime as { clusterTime?: unknown } | undefined)?.clusterTime;
    if (!time) throw new Error('the destination did not report a cluster time');
    return time as Timestamp;
  }

  async dropCollection(database: string, collection: string): Promise<void> {
    this.guard?.assertHeld();
    try {
      await this.client.db(database).command({ drop: collection });
    } catch (error) {
      if (error instanceof MongoServerError && error.code === NAMESPACE_NOT_FOUND) return;
      throw labelDriverError(error);
    }
  }

  async listDatabaseNames(): Promise<string[]> {
    const reply = await this.client.db('admin').command({ listDatabases: 1, nameOnly: true });
    return ((reply.databases as Array<{ name: string }>) ?? []).map((d) => d.name);
  }

  async listCollectionNames(database: string): Promise<string[]> {
    const infos = await this.client.db(database).listCollections({}, { nameOnly: true }).toArray();
    return infos.map((i) => i.name);
  }

  async listIndexes(database: string, collection: string): Promise<Document[]> {
    return this.client.db(database).collection(collection).listIndexes(EXACT_BSON).toArray();
  }

  async createCollection(database: string, collection: string, options: Document): Promise<void> {
    this.guard?.assertHeld();
    await this.ignoreExists(this.client.db(database).command({ create: collection, ...options }));
  }

  async createView(
    database: string,
    view: string,
    viewOn: string,
    pipeline: Document[],
    options: Document,
  ): Promise<void> {
    this.guard?.assertHeld();
    await this.ignoreExists(
      this.client.db(database).command({ create: view, viewOn, pipeline, ...options }),
    );
  }

  async createIndexes(database: string, collection: string, specs: Document[]): Promise<void> {
    this.guard?.assertHeld();
    await this.client.db(database).command({ createIndexes: collection, indexes: specs });
  }

  async modifyIndex(
    database: string,
    collection: string,
    change: IndexModification,
  ): Promise<void> {
    this.guard?.assertHeld();
    await this.client.db(database).command({ collMod: collection, index: { ...change } });
  }

  async renameCollection(
    from: { db: string; coll: string },
    to: { db: string; coll: string },
  ): Promise<boolean> {
    this.guard?.assertHeld();
    try {
      await this.client.db('admin').command({
        renameCollection: `${from.db}.${from.coll}`,
        to: `${to.db}.${to.coll}`,
        dropTarget: true,
      });
      return true;
    } catch (error) {
      if (error instanceof MongoServerError && error.code === NAMESPACE_NOT_FOUND) return false;
      throw labelDriverError(error);
    }
  }

  async shardCollection(
    database: string,
    collection: string,
    key: Document,
    unique: boolean,
  ): Promise<void> {
    this.guard?.assertHeld();
    await this.client.db('admin').command({
      shardCollection: `${database}.${collection}`,
      key,
      ...(unique ? { unique } : {}),
    });
  }

  async collMod(database: string, collection: string, options: Document): Promise<void> {
    this.guard?.assertHeld();
    await this.client.db(database).command({ collMod: collection, ...options });
  }

  async dropIndex(database: string, collection: string, name: string): Promise<void> {
    this.guard?.assertHeld();
    try {
      await this.client.db(database).command({ dropIndexes: collection, index: name });
    } catch (error) {
      // NamespaceNotFound, IndexNotFound: already gone.
      if (error instanceof MongoServerError && [26, 27].includes(Number(error.code))) return;
      throw labelDriverError(error);
    }
  }

  /**
   * Unordered insertMany bypassing validation. Duplicate keys (11000) are documents an earlier
   * attempt already copied; any other write error throws, and so does a write concern error —
   * also when it arrives next to duplicate keys (WriteConcernFailedError): the inserted
   * documents are then not known to be durable, so the partition must not be marked copied.
   */
  async insertUnordered(
    database: string,
    collection: string,
    documents: Document[],
  ): Promise<InsertResult> {
    this.guard?.assertHeld();
    if (documents.length === 0) return { inserted: 0, duplicates: 0 };
    try {
      const result = await this.client
        .db(database)
        .collection(collection)
        .insertMany(documents, { ordered: false, bypassDocumentValidation: true });
      return { inserted: result.insertedCount, duplicates: 0 };
    } catch (error) {
      throwIfWriteConcernFailed(error, `${database}.${collection}`);
      if (!(error instanceof MongoBulkWriteError)) throw labelDriverError(error);
      const errors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
      // No per-op error: the whole command failed (network, not primary...). Not a success.
      if (errors.length === 0) throw labelDriverError(error);
      const others = errors.filter((e) => !writeErrorLabels(e.code).has('duplicateKey'));
      if (others.length === 0) return { inserted: error.insertedCount, duplicates: errors.length };
      const first = others[0]!;
      throw new DocumentRejectedError(
        `${database}.${collection}`,
        documents[first.index]?._id,
        first.code,
        first.errmsg ?? 'write error',
        others.length,
      );
    }
  }

  /**
   * The same unordered insert as `insertUnordered`, built by hand: an `insert` command whose
   * `documents` are an OP_MSG document sequence of the bytes as given — no decode, no
   * re-encode, no per-document size pass (the copy bounds its batches by bytes, well below
   * the 48 MB message limit). Write errors and a write concern error are read from the reply
   * with the same verdicts as `insertUnordered`.
   */
  async insertRawUnordered(
    database: string,
    collection: string,
    documents: Uint8Array[],
  ): Promise<InsertResult> {
    this.guard?.assertHeld();
    if (documents.length === 0) return { inserted: 0, duplicates: 0 };
    const namespace = `${database}.${collection}`;
    if (!DocumentSequenceImpl) {
      const decoded = documents.map((d) => BSON.deserialize(d, EXACT_BSON));
      return this.insertUnordered(database, collection, decoded);
    }
    const reply = await sendRawWrite(
      this.client.db(database),
      {
        insert: collection,
        documents: documentSequence('documents', documents),
        ordered: false,
        bypassDocumentValidation: true,
      },
      namespace,
    );
    const errors = reply.writeErrors ?? [];
    const others = errors.filter((e) => !writeErrorLabels(e.code).has('duplicateKey'));
    if (others.length > 0) {
      const first = others[0]!;
      const rejected = documents[first.index];
      throw new DocumentRejectedError(
        namespace,
        rejected ? BSON.deserialize(rejected, EXACT_BSON)._id : undefined,
        first.code,
        first.errmsg ?? 'write error',
        others.length,
      );
    }
    return { inserted: reply.n ?? documents.length - errors.length, duplicates: errors.length };
  }

  async shardIds(): Promise<string[]> {
    if (!(await isMongos(this.client))) return [];
    const reply = await this.client.db('admin').command({ listShards: 1 });
    return (reply.shards as Array<{ _id: string }>).map((s) => String(s._id)).sort();
  }

  async chunkCount(database: string, collection: string): Promise<number> {
    const uuid = await this.collectionUuid(database, collection);
    if (!uuid) return 0;
    return this.client.db('config').collection('chunks').countDocuments({ uuid });
  }

  async splitAt(database: string, collection: string, middle: Document): Promise<void> {
    this.guard?.assertHeld();
    await this.client.db('admin').command({ split: `${database}.${collection}`, middle });
  }

  async moveRange(
    database: string,
    collection: string,
    min: Document,
    max: Document,
    toShard: string,
  ): Promise<void> {
    this.guard?.assertHeld();
    const uuid = await this.collectionUuid(database, collection);
    const chunk = uuid
      ? await this.client.db('config').collection('chunks').findOne({ uuid, min }, EXACT_BSON)
      : null;
    if (chunk && chunk.shard === toShard) return;
    await this.client.db('admin').command({
      moveChunk: `${database}.${collection}`,
      bounds: [min, max],
      to: toShard,
    });
  }

  private async collectionUuid(database: string, collection: string): Promise<unknown> {
    const entry = await this.client
      .db('config')
      .collection('collections')
      .findOne({ _id: `${database}.${collection}` as never }, EXACT_BSON);
    return entry?.uuid;
  }

  balancerMode(): Promise<'full' | 'off' | null> {
    return balancerMode(this.client);
  }

  async setBalancer(enabled: boolean): Promise<void> {
    this.guard?.assertHeld();
    return setBalancer(this.client, enabled);
  }

  async setUserWriteBlocking(enabled: boolean): Promise<void> {
    this.guard?.assertHeld();
    await this.client.db('admin').command({ setUserWriteBlockMode: 1, global: enabled });
  }

  private async ignoreExists(command: Promise<Document>): Promise<void> {
    try {
      await command;
    } catch (error) {
      if (error instanceof MongoServerError && error.code === NAMESPACE_EXISTS) return;
      throw labelDriverError(error);
    }
  }
}

/**
 * The destination refused a copied document for a reason a retry cannot fix (too large, an
 * invalid field name, a unique index the source does not have...): the sync stops with the
 * namespace, the document's `_id` and the server's code, never skipping it.
 */
export class DocumentRejectedError extends Error {
  constructor(
    readonly namespace: string,
    readonly documentId: unknown,
    readonly code: number,
    serverMessage: string,
    /** Documents of the batch the destination refused (besides duplicates of earlier copies). */
    readonly rejected: number,
  ) {
    super(
      `document _id ${renderId(documentId)} rejected by ${namespace}: code ${code}: ${serverMessage}` +
        (rejected > 1 ? ` (and ${rejected - 1} more document(s) of the same batch)` : ''),
    );
    this.name = 'DocumentRejected';
    labelFault(this, [...labelsForCode(code), 'documentRejected']);
  }
}

function renderId(id: unknown): string {
  try {
    return EJSON.stringify(id as Document, { relaxed: true });
  } catch {
    return String(id);
  }
}
