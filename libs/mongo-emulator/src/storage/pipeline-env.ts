import { Timestamp, type Document } from 'bson';
import type { MergeWhenMatched, PipelineEnv } from '../aggregate/pipeline-env';
import { compareValues } from '../bson/compare';
import { CommandError } from '../errors';
import type { Catalog } from './catalog';
import { prepareInsert, type Collection, type WriteOptions } from './collection';
import { collectionStats } from './stats';

export type { MergeWhenMatched };

/**
 * The aggregation engine's view of the server, backed by the catalog. Writes ($out, $merge)
 * go through the same collection methods as user writes, so they are validated, indexed and
 * logged to the oplog like any insert/replace.
 */
export class CatalogPipelineEnv implements PipelineEnv {
  private readonly nowValue = new Date();
  private clusterTimeValue: Timestamp | undefined;

  constructor(
    private readonly catalog: Catalog,
    readonly db: string,
    readonly coll: string | undefined,
    readonly variables: Record<string, unknown> | undefined,
    private readonly writeOptions: WriteOptions = {},
    /**
     * A collection's documents as the command's read concern sees them (the majority-committed
     * snapshot while it lags), or undefined for its live documents: what `$unionWith` and
     * `$lookup` read of other collections, as mongod reads them from the aggregate's snapshot.
     */
    private readonly snapshotOf?: (collection: Collection) => Document[] | undefined,
  ) {}

  get host(): string {
    return this.catalog.node.host;
  }

  *readCollection(db: string, coll: string): Iterable<Document> {
    this.catalog.assertNotView(db, coll);
    const c = this.catalog.getCollection(db, coll);
    if (!c) return;
    const snapshot = this.snapshotOf?.(c);
    if (snapshot) {
      yield* snapshot;
      return;
    }
    for (const rec of c.naturalRecords(1)) yield rec.doc;
  }

  readNamespace(db: string, coll: string): { documents: Iterable<Document>; stages: Document[] } {
    const view = this.catalog.getView(db, coll);
    if (!view) return { documents: this.readCollection(db, coll), stages: [] };
    const { base, stages } = this.catalog.viewChain(db, view);
    return { documents: this.readCollection(db, base), stages };
  }

  collStats(db: string, coll: string): Document | undefined {
    const c = this.catalog.getCollection(db, coll);
    return c ? collectionStats(c) : undefined;
  }

  indexStats(db: string, coll: string): Document[] {
    const c = this.catalog.getCollection(db, coll);
    if (!c) return [];
    return c.indexes.map((idx) => ({
      name: idx.name,
      key: idx.key,
      host: this.host,
      accesses: { ops: 0, since: this.catalog.node.startedAt },
      spec: idx.spec,
    }));
  }

  replaceCollectionContents(db: string, coll: string, docs: Document[]): void {
    this.catalog.assertNotView(db, coll);
    const { coll: target } = this.catalog.ensureCollection(db, coll, this.writeOptions);
    // $out is all-or-nothing: reject duplicate _ids before touching the target.
    const ids = docs.filter((d) => d._id !== undefined).map((d) => d._id as unknown);
    ids.sort(compareValues);
    for (let i = 1; i < ids.length; i++) {
      if (compareValues(ids[i - 1], ids[i]) === 0)
        throw target.idIndex.duplicateKeyError(target.ns, [ids[i]]);
    }
    for (const rec of [...target.naturalRecords(1)]) target.delete(rec, this.writeOptions);
    for (const d of docs) target.insert(prepareInsert(d), this.writeOptions);
  }

  findOne(db: string, coll: string, equality: Document): Document | undefined {
    for (const d of this.catalog.find(db, coll, equality)) return d;
    return undefined;
  }

  insertOne(db: string, coll: string, doc: Document): void {
    const { coll: target } = this.catalog.ensureCollection(db, coll, this.writeOptions);
    target.insert(prepareInsert(doc), this.writeOptions);
  }

  replaceOne(db: string, coll: string, existing: Document, replacement: Document): void {
    const target = this.catalog.getCollection(db, coll);
    const rec = target?.recordById(existing._id);
    if (!target || !rec) return;
    const id: unknown = rec.doc._id;
    const next = { _id: id, ...replacement };
    if (compareValues(next._id, id) !== 0) {
      throw new CommandError(
        'ImmutableField',
        "Performing an update on the path '_id' would modify the immutable field '_id'",
      );
    }
    target.replace(rec, next, 'replace', undefined, this.writeOptions);
  }

  now(): Date {
    return this.nowValue;
  }

  clusterTime(): Timestamp {
    this.clusterTimeValue ??= this.catalog.node.clock.current();
    return this.clusterTimeValue;
  }
}
