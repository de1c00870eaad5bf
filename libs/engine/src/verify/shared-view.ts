import { BSON } from 'bson';
import type { CopyShare } from '../shards/topology';
import { EXACT, pickTopLevelFields } from '../copy/pick-fields';
import {
  rawDocumentBatch,
  type DocumentBatch,
  type RawDocumentBatch,
  type ReadOptions,
  type SourceCluster,
} from '../ports/source-cluster';
import type { VerifiableCluster } from './namespace-verifier';

type Readable = VerifiableCluster & Partial<Pick<SourceCluster, 'readRaw'>>;

/**
 * One side of a comparison seen through a per-shard worker's share: only the documents whose
 * shard key its shard owned at T0 (`share.keep`). The source side is the worker's own shard
 * (orphans left out), the destination side the whole destination (the other shards' documents
 * left out), so each worker verifies exactly what it copied and applied, and the workers
 * together verify every document once.
 *
 * Reads (raw or decoded) and `_id` lookups are filtered as they come, on both sides alike.
 */
export class SharedView implements VerifiableCluster {
  constructor(
    private readonly inner: Readable,
    private readonly share: Required<Pick<CopyShare, 'keep'>> & Pick<CopyShare, 'keepFields'>,
  ) {}

  listCollections(database: string) {
    return this.inner.listCollections(database);
  }

  listIndexes(database: string, collection: string) {
    return this.inner.listIndexes(database, collection);
  }

  async *read(
    database: string,
    collection: string,
    options: ReadOptions,
  ): AsyncIterable<DocumentBatch> {
    for await (const batch of this.inner.read(database, collection, options)) {
      const kept: DocumentBatch = { documents: [], sizes: [], bytes: 0 };
      batch.documents.forEach((doc, i) => {
        if (!this.share.keep(doc)) return;
        kept.documents.push(doc);
        kept.sizes.push(batch.sizes[i]!);
        kept.bytes += batch.sizes[i]!;
      });
      if (kept.documents.length > 0) yield kept;
    }
  }

  /**
   * The kept documents' raw bytes, a read batch at a time (the verifier compares them). Read
   * raw where the inner side can; else decoded, tested and encoded again.
   */
  async *readRaw(
    database: string,
    collection: string,
    options: ReadOptions,
  ): AsyncIterable<RawDocumentBatch> {
    const fields = this.share.keepFields;
    if (this.inner.readRaw) {
      for await (const batch of this.inner.readRaw(database, collection, options)) {
        const documents = batch.documents.filter((raw) =>
          this.share.keep(fields ? pickTopLevelFields(raw, fields) : BSON.deserialize(raw, EXACT)),
        );
        if (documents.length > 0) yield rawDocumentBatch(documents);
      }
    } else {
      for await (const batch of this.read(database, collection, options)) {
        yield rawDocumentBatch(batch.documents.map((doc) => BSON.serialize(doc)));
      }
    }
  }

  async readByIds(
    database: string,
    collection: string,
    ids: unknown[],
    options?: { uuid?: string; signal?: AbortSignal },
  ): Promise<Uint8Array[]> {
    if (!this.inner.readByIds) throw new Error('this cluster cannot read documents by _id');
    const found = await this.inner.readByIds(database, collection, ids, options);
    const fields = this.share.keepFields;
    return found.filter((raw) =>
      this.share.keep(fields ? pickTopLevelFields(raw, fields) : BSON.deserialize(raw, EXACT)),
    );
  }
}
