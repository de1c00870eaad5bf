import { Timestamp, type Document } from 'bson';
import { CommandError } from '../../errors';
import { valuesEqual } from '../../bson/compare';
import { bsonSize } from '../../bson/codec';
import type { PipelineEnv } from '../pipeline-env';

/**
 * A PipelineEnv over plain arrays, for unit tests: collections are keyed "db.coll" and
 * writes enforce _id uniqueness like a real collection would.
 */
export class InMemoryPipelineEnv implements PipelineEnv {
  readonly collections = new Map<string, Document[]>();
  fixedNow = new Date('2024-01-02T03:04:05.678Z');
  fixedClusterTime = new Timestamp({ t: 1700000000, i: 1 });
  variables?: Record<string, unknown>;

  /** Collection being aggregated; pass null for a database-level `{aggregate: 1}`. */
  readonly coll: string | undefined;

  constructor(
    readonly db = 'test',
    coll: string | null = 'c',
  ) {
    this.coll = coll ?? undefined;
  }

  seed(coll: string, docs: Document[], db = this.db): this {
    this.collections.set(
      `${db}.${coll}`,
      docs.map((d) => ({ ...d })),
    );
    return this;
  }

  docs(coll: string, db = this.db): Document[] {
    return this.collections.get(`${db}.${coll}`) ?? [];
  }

  readCollection(db: string, coll: string): Iterable<Document> {
    return [...this.docs(coll, db)];
  }

  collStats(db: string, coll: string): Document | undefined {
    const docs = this.collections.get(`${db}.${coll}`);
    if (!docs) return undefined;
    const size = docs.reduce((n, d) => n + bsonSize(d), 0);
    return {
      count: docs.length,
      size,
      avgObjSize: docs.length ? Math.floor(size / docs.length) : 0,
      storageSize: size,
      nindexes: 1,
      totalIndexSize: 4096,
      indexSizes: { _id_: 4096 },
    };
  }

  indexStats(db: string, coll: string): Document[] {
    return this.collections.has(`${db}.${coll}`)
      ? [
          {
            name: '_id_',
            key: { _id: 1 },
            host: 'localhost:27017',
            accesses: { ops: 0, since: this.fixedNow },
          },
        ]
      : [];
  }

  replaceCollectionContents(db: string, coll: string, docs: Document[]): void {
    this.collections.set(`${db}.${coll}`, [...docs]);
  }

  findOne(db: string, coll: string, equality: Document): Document | undefined {
    return this.docs(coll, db).find((d) =>
      Object.entries(equality).every(([k, v]) =>
        valuesEqual(
          k.split('.').reduce<any>((o, p) => o?.[p], d),
          v,
        ),
      ),
    );
  }

  insertOne(db: string, coll: string, doc: Document): void {
    const docs = this.collections.get(`${db}.${coll}`) ?? [];
    if (docs.some((d) => valuesEqual(d._id, doc._id))) {
      throw new CommandError(
        'DuplicateKey',
        `E11000 duplicate key error collection: ${db}.${coll} index: _id_`,
      );
    }
    docs.push(doc);
    this.collections.set(`${db}.${coll}`, docs);
  }

  replaceOne(db: string, coll: string, existing: Document, replacement: Document): void {
    const docs = this.docs(coll, db);
    const i = docs.indexOf(existing);
    docs[i] = replacement;
  }

  now(): Date {
    return this.fixedNow;
  }

  clusterTime(): Timestamp {
    return this.fixedClusterTime;
  }
}
