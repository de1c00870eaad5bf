import type { Document } from 'bson';
import {
  MongoBulkWriteError,
  MongoServerError,
  type AnyBulkWriteOperation,
  type Collection,
  type MongoClient,
  type WriteError,
} from 'mongodb';
import type { ChangeWriter, Namespace, WriteFailure, WriteOp } from '@sync/engine/apply';

const DUPLICATE_KEY = 11000;
const NAMESPACE_NOT_FOUND = 26;
const INDEX_NOT_FOUND = 27;
const NAMESPACE_EXISTS = 48;
/** Two replace-upserts of one new _id can race (our write vs the copy's insert): retry a few. */
const UPSERT_RETRIES = 3;

/**
 * ChangeWriter over the driver. Writes are unordered bulks that bypass document validation
 * (the destination holds the source's documents, whatever validator a replayed collMod set).
 */
export class MongoChangeWriter implements ChangeWriter {
  constructor(private readonly client: MongoClient) {}

  async bulkWrite(ns: Namespace, ops: WriteOp[]): Promise<WriteFailure[]> {
    const final: WriteFailure[] = [];
    let pending = ops.map((op, index) => ({ op, index }));
    for (let attempt = 0; pending.length > 0; attempt++) {
      const failures = await this.bulkOnce(
        ns,
        pending.map((p) => p.op),
      );
      const mapped = failures.map((f) => ({ ...f, index: pending[f.index].index }));
      const racing = (f: WriteFailure) =>
        f.code === DUPLICATE_KEY && ops[f.index].kind === 'replace' && attempt < UPSERT_RETRIES;
      final.push(...mapped.filter((f) => !racing(f)));
      pending = mapped.filter(racing).map((f) => ({ op: ops[f.index], index: f.index }));
    }
    return final;
  }

  private async bulkOnce(ns: Namespace, ops: WriteOp[]): Promise<WriteFailure[]> {
    if (ops.length === 0) return [];
    try {
      await this.coll(ns).bulkWrite(ops.map(toModel), {
        ordered: false,
        bypassDocumentValidation: true,
      });
      return [];
    } catch (error) {
      if (!(error instanceof MongoBulkWriteError)) throw error;
      const list = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
      if (list.length === 0) throw error; // e.g. a write concern error: not per-op
      return list.map((e: WriteError) => ({
        index: e.index,
        code: e.code,
        message: e.errmsg ?? '',
      }));
    }
  }

  async createCollection(ns: Namespace, options: Document): Promise<void> {
    await ignoring([NAMESPACE_EXISTS], () =>
      this.client.db(ns.db).command({ create: ns.coll, ...options }),
    );
  }

  async dropCollection(ns: Namespace): Promise<void> {
    await ignoring([NAMESPACE_NOT_FOUND], () => this.client.db(ns.db).command({ drop: ns.coll }));
  }

  async renameCollection(from: Namespace, to: Namespace): Promise<boolean> {
    try {
      await this.client.db('admin').command({
        renameCollection: `${from.db}.${from.coll}`,
        to: `${to.db}.${to.coll}`,
        dropTarget: true,
      });
      return true;
    } catch (error) {
      if (error instanceof MongoServerError && error.code === NAMESPACE_NOT_FOUND) return false;
      throw error;
    }
  }

  async listCollections(db: string): Promise<string[]> {
    const infos = await this.client.db(db).listCollections({}, { nameOnly: true }).toArray();
    return infos.map((i) => i.name);
  }

  async createIndexes(ns: Namespace, specs: Document[]): Promise<void> {
    await this.client.db(ns.db).command({ createIndexes: ns.coll, indexes: specs });
  }

  async dropIndex(ns: Namespace, name: string): Promise<void> {
    await ignoring([NAMESPACE_NOT_FOUND, INDEX_NOT_FOUND], () =>
      this.client.db(ns.db).command({ dropIndexes: ns.coll, index: name }),
    );
  }

  async collMod(ns: Namespace, options: Document): Promise<void> {
    await this.client.db(ns.db).command({ collMod: ns.coll, ...options });
  }

  /** Driver Collection handles, cached: building Db/Collection resolves options every time. */
  private readonly collections = new Map<string, Collection<Document>>();

  private coll(ns: Namespace): Collection<Document> {
    const key = `${ns.db}\u0000${ns.coll}`;
    let coll = this.collections.get(key);
    if (!coll) {
      if (this.collections.size >= 1024) this.collections.clear();
      coll = this.client.db(ns.db).collection(ns.coll);
      this.collections.set(key, coll);
    }
    return coll;
  }
}

function toModel(op: WriteOp): AnyBulkWriteOperation<Document> {
  switch (op.kind) {
    case 'replace':
      return { replaceOne: { filter: op.filter, replacement: op.replacement, upsert: true } };
    case 'update':
      return { updateOne: { filter: op.filter, update: op.update, upsert: false } };
    case 'delete':
      return { deleteOne: { filter: op.filter } };
  }
}

async function ignoring(codes: number[], run: () => Promise<unknown>): Promise<void> {
  try {
    await run();
  } catch (error) {
    if (error instanceof MongoServerError && codes.includes(Number(error.code))) return;
    throw error;
  }
}
