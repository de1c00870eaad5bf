import { BSON, type Document } from 'bson';
import {
  MongoBulkWriteError,
  MongoInvalidArgumentError,
  MongoServerError,
  WriteConcern,
  MongoWriteConcernError,
  type AnyBulkWriteOperation,
  type Collection,
  type Db,
  type MongoClient,
  type WriteError,
} from 'mongodb';
import {
  DestinationWriteError,
  RawDocument,
  documentOf,
  type ChangeWriter,
  type Namespace,
  type WriteFailure,
  type WriteOp,
} from '@sync/engine/apply';
import { labelFault, labelsForCode, type ClaimGuard } from '@sync/engine';
import { DocumentSequenceImpl, documentSequence } from './document-sequence';
import { EXACT_BSON } from './exact-bson';
import { labelDriverError, writeErrorLabels } from './fault-labelling';

/**
 * The driver's bulk API refuses a statement of this size or more (its `maxBsonObjectSize`
 * check), though mongod takes a statement up to 16 MiB + 16 KiB: the replacement of a document
 * at MongoDB's 16 MiB limit, wrapped as `{q, u, upsert}`, is over it.
 */
const DRIVER_STATEMENT_LIMIT = 16 * 1024 * 1024;

/** An insert command's documents at most: bytes (one larger document goes alone) and count. */
const INSERT_COMMAND_BYTES = 16 * 1024 * 1024;
const INSERT_COMMAND_DOCUMENTS = 100_000;

interface QueuedBulk {
  ns: Namespace;
  parts: Array<{
    ops: WriteOp[];
    resolve(failures: WriteFailure[]): void;
    reject(error: unknown): void;
  }>;
}

/**
 * ChangeWriter over the driver. Writes are unordered bulks that bypass document validation
 * (the destination holds the source's documents, whatever validator a replayed collMod set).
 *
 * Calls for one namespace made in the same event-loop turn (the applier's lanes flush together,
 * each with its own bulk per namespace) are sent as one bulkWrite: one round trip and one
 * command for the destination instead of one per lane. This keeps every guarantee a caller
 * has: calls in flight together are unordered bulks with no order between them, so one
 * unordered bulk holding all of them promises exactly as much (a caller never has two writes
 * of one document in flight at once — the applier awaits a document's previous step).
 * Per-op failures are mapped back to each call's own indexes; a whole-bulk error rejects
 * every call in it.
 *
 * It only translates: ops to driver bulk operations, the driver's result and errors to
 * per-op failures and errors carrying fault labels (fault-labelling.ts). Nothing is sent
 * again here — the write lane retries (write-lane.ts).
 */
export class MongoChangeWriter implements ChangeWriter {
  private queued = new Map<string, QueuedBulk>();
  private flushScheduled = false;

  constructor(
    private readonly client: MongoClient,
    /**
     * A per-shard worker's shard claim: every bulk first checks its lease (ShardClaimLost once
     * lost), so a worker that lost its shard writes no more user data.
     */
    private readonly guard?: ClaimGuard,
  ) {}

  bulkWrite(ns: Namespace, ops: WriteOp[]): Promise<WriteFailure[]> {
    if (ops.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      const key = `${ns.db}\u0000${ns.coll}`;
      let bulk = this.queued.get(key);
      if (!bulk) this.queued.set(key, (bulk = { ns, parts: [] }));
      bulk.parts.push({ ops, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  async versions(ns: Namespace, id: unknown, fields: string[]): Promise<Document[]> {
    const projection: Document = { _id: 1 };
    for (const field of fields) projection[field] = 1;
    return this.client
      .db(ns.db)
      .collection(ns.coll)
      .find({ _id: id } as Document, { ...EXACT_BSON, projection })
      .toArray();
  }

  private flush(): void {
    this.flushScheduled = false;
    const queued = this.queued;
    this.queued = new Map();
    for (const bulk of queued.values()) void this.sendMerged(bulk);
  }

  private async sendMerged({ ns, parts }: QueuedBulk): Promise<void> {
    const ops: WriteOp[] = [];
    const starts: number[] = [];
    for (const part of parts) {
      starts.push(ops.length);
      for (const op of part.ops) ops.push(op);
    }
    let failures: WriteFailure[];
    try {
      failures = await this.bulkOnce(ns, ops);
    } catch (error) {
      for (const part of parts) part.reject(error);
      return;
    }
    const perPart: WriteFailure[][] = parts.map(() => []);
    for (const failure of failures) {
      let p = parts.length - 1;
      while (p > 0 && starts[p] > failure.index) p--;
      perPart[p].push({ ...failure, index: failure.index - starts[p] });
    }
    for (let p = 0; p < parts.length; p++) parts[p].resolve(perPart[p]);
  }

  /**
   * The driver sends an unordered bulk's inserts, updates and deletes as one command each, one
   * after the other; they address distinct documents (see the class comment), so they go as
   * bulks of one command each, at once instead: one round trip, not three. Failures are mapped
   * back to indexes of `ops`.
   */
  private async bulkOnce(ns: Namespace, ops: WriteOp[]): Promise<WriteFailure[]> {
    const byCommand: Record<'insert' | 'update' | 'delete', number[]> = {
      insert: [],
      update: [],
      delete: [],
    };
    ops.forEach((op, index) => byCommand[commandOf(op)].push(index));
    const groups = Object.values(byCommand).filter((indexes) => indexes.length > 0);
    const bulk = (part: WriteOp[]) => this.bulkCommand(ns, part);
    const insert = (part: WriteOp[]) => this.insertCommand(ns, part);
    const sendInserts = DocumentSequenceImpl ? insert : bulk;
    if (groups.length <= 1)
      return byCommand.insert.length > 0 ? sendInserts(ops) : this.bulkCommand(ns, ops);
    return sentInGroups(
      ops,
      groups.map((indexes): SendGroup => [
        indexes,
        indexes === byCommand.insert ? sendInserts : bulk,
      ]),
    );
  }

  /**
   * Inserts as `insert` commands built by hand: the documents travel as an OP_MSG document
   * sequence of their bytes — a document the change feed handed over raw (RawDocument) is sent
   * exactly as the source stored it, with no decode or encode on the way; one built in memory
   * (updates applied onto an insert) is encoded once here. Split at 16 MiB of documents and
   * 100,000 statements (far below the 48 MB message and mongod's batch limits); the parts go
   * at once (an unordered bulk). Per-document failures (a duplicate key: the lane upserts
   * instead) are mapped back to indexes of `ops`.
   */
  private async insertCommand(ns: Namespace, ops: WriteOp[]): Promise<WriteFailure[]> {
    const documents = ops.map((op) => {
      if (op.kind !== 'replace') throw new Error(`a ${op.kind} sent as an insert`);
      const replacement = op.replacement;
      return replacement instanceof RawDocument
        ? replacement.bytes
        : BSON.serialize(replacement, { checkKeys: false, ignoreUndefined: false });
    });
    const parts: number[][] = [];
    let part: number[] = [];
    let bytes = 0;
    documents.forEach((document, i) => {
      if (
        part.length > 0 &&
        (bytes + document.byteLength > INSERT_COMMAND_BYTES ||
          part.length >= INSERT_COMMAND_DOCUMENTS)
      ) {
        parts.push(part);
        part = [];
        bytes = 0;
      }
      part.push(i);
      bytes += document.byteLength;
    });
    parts.push(part);
    const db = this.client.db(ns.db);
    const namespace = `${ns.db}.${ns.coll}`;
    return sentInGroups(
      ops,
      parts.map((indexes): SendGroup => [
        indexes,
        async () => {
          this.guard?.assertHeld();
          const reply = await sendRawWrite(
            db,
            {
              insert: ns.coll,
              documents: documentSequence(
                'documents',
                indexes.map((i) => documents[i]!),
              ),
              ordered: false,
              bypassDocumentValidation: true,
            },
            namespace,
          );
          return (reply.writeErrors ?? []).map((e) => ({
            index: e.index,
            code: e.code,
            message: e.errmsg ?? '',
            faultLabels: writeErrorLabels(e.code),
          }));
        },
      ]),
    );
  }

  private async bulkCommand(ns: Namespace, ops: WriteOp[]): Promise<WriteFailure[]> {
    if (ops.length === 0) return [];
    this.guard?.assertHeld();
    try {
      await this.coll(ns).bulkWrite(ops.map(toModel), {
        ordered: false,
        bypassDocumentValidation: true,
      });
      return [];
    } catch (error) {
      // Refused before anything was sent: a replacement too large for the driver's bulk API.
      if (error instanceof MongoInvalidArgumentError)
        return this.withLargeStatements(ns, ops, error);
      // Checked first: per-op failures next to a write concern error must not hide it (the
      // writes that "succeeded" are not known to be durable, so no checkpoint may pass them).
      throwIfWriteConcernFailed(error, `${ns.db}.${ns.coll}`);
      if (!(error instanceof MongoBulkWriteError)) throw labelDriverError(error);
      const list = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
      if (list.length === 0) throw labelDriverError(error); // not per-op (e.g. a network error)
      return list.map((e: WriteError) => ({
        index: e.index,
        code: e.code,
        message: e.errmsg ?? '',
        faultLabels: writeErrorLabels(e.code),
      }));
    }
  }

  /**
   * A bulk the driver refused to build: the replacements and updates whose statement reaches its
   * size check (a document at the 16 MiB limit, a `$set` of a field nearly as large) are sent
   * alone, each as an `update` command whose statement travels as a document sequence of its
   * bytes (mongod takes up to 16 MiB + 16 KiB), the rest as a bulk; failures are mapped back to
   * indexes of `ops`. Without such a statement, or without the driver's document sequence, the
   * refusal stands.
   */
  private async withLargeStatements(
    ns: Namespace,
    ops: WriteOp[],
    refusal: MongoInvalidArgumentError,
  ): Promise<WriteFailure[]> {
    const large: number[] = [];
    const rest: number[] = [];
    ops.forEach((op, i) => (isLargeStatement(op) ? large : rest).push(i));
    if (large.length === 0 || !DocumentSequenceImpl) throw labelDriverError(refusal);
    return sentInGroups(ops, [
      [rest, (part) => this.bulkCommand(ns, part)],
      ...large.map((i): SendGroup => [[i], ([op]) => this.updateAlone(ns, op as StatementOp)]),
    ]);
  }

  /** One replacement or update as an `update` command of its own, its statement sent as bytes. */
  private async updateAlone(ns: Namespace, op: StatementOp): Promise<WriteFailure[]> {
    this.guard?.assertHeld();
    const statement = BSON.serialize(statementOf(op), { checkKeys: false, ignoreUndefined: false });
    const reply = await sendRawWrite(
      this.client.db(ns.db),
      {
        update: ns.coll,
        updates: documentSequence('updates', [statement]),
        ordered: true,
        bypassDocumentValidation: true,
      },
      `${ns.db}.${ns.coll}`,
    );
    return (reply.writeErrors ?? []).map((e) => ({
      index: 0,
      code: e.code,
      message: e.errmsg ?? '',
      faultLabels: writeErrorLabels(e.code),
    }));
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

/**
 * The destination acknowledged a write without satisfying the write concern (timeout, not
 * enough data-bearing members, unsatisfiable concern...): the writes may have been applied but
 * are not known to be durable, so nothing that depends on them (a checkpoint, a copied
 * partition) may be recorded. Retryable: every write here is idempotent, so running it again
 * once the destination is healthy is safe.
 */
export class WriteConcernFailedError extends DestinationWriteError {
  constructor(
    /** `db.coll` the write went to. */
    readonly namespace: string,
    /** The server's writeConcernError message. */
    readonly serverMessage: string,
    readonly code?: number,
    readonly errInfo?: Document,
    options?: { cause?: unknown },
  ) {
    super(
      `write concern failed on ${namespace}: ${serverMessage}` +
        (code !== undefined ? ` (code ${code})` : ''),
      true,
      options,
    );
    labelFault(this, [...labelsForCode(code), 'writeConcern']);
  }
}

/**
 * The write concern error a driver error carries, wherever driver 6.x puts it:
 * - MongoWriteConcernError (single-command helpers): `result.writeConcernError`;
 * - MongoBulkWriteError: `result.getWriteConcernError()` (the bulk result keeps it next to any
 *   per-op writeErrors), `err` when built from a WriteConcernError, or `writeConcernError` /
 *   `errorResponse.writeConcernError` copied from a failed command's reply.
 */
export function writeConcernErrorOf(
  error: unknown,
): { code?: number; message: string; errInfo?: Document } | undefined {
  if (!(error instanceof MongoServerError)) return undefined;
  const candidates: unknown[] = [];
  if (error instanceof MongoWriteConcernError) {
    candidates.push((error.result as Document | undefined)?.writeConcernError);
  }
  if (error instanceof MongoBulkWriteError) {
    const result = error.result as { getWriteConcernError?: () => unknown } | undefined;
    if (typeof result?.getWriteConcernError === 'function') {
      candidates.push(result.getWriteConcernError());
    }
    candidates.push(error.err);
  }
  candidates.push(error.writeConcernError, (error.errorResponse as Document)?.writeConcernError);
  for (const c of candidates) {
    // Plain reply documents, or the driver's WriteConcernError (a type-only export whose
    // code/errmsg/errInfo are getters).
    if (c && typeof c === 'object') {
      const d = c as { code?: unknown; errmsg?: unknown; message?: unknown; errInfo?: unknown };
      const code = typeof d.code === 'number' ? d.code : undefined;
      const message =
        typeof d.errmsg === 'string'
          ? d.errmsg
          : typeof d.message === 'string'
            ? d.message
            : 'write concern error';
      return { code, message, errInfo: d.errInfo as Document | undefined };
    }
  }
  return undefined;
}

/** Throws WriteConcernFailedError when `error` carries a write concern error. */
export function throwIfWriteConcernFailed(error: unknown, namespace: string): void {
  const wce = writeConcernErrorOf(error);
  if (wce) {
    throw new WriteConcernFailedError(namespace, wce.message, wce.code, wce.errInfo, {
      cause: error,
    });
  }
}

/** Some of a call's ops (by their indexes in it), and how they are sent. */
type SendGroup = [indexes: number[], send: (part: WriteOp[]) => Promise<WriteFailure[]>];

/**
 * Groups of a call's ops sent at once, their failures mapped back to indexes of `ops`. A group
 * that failed as a whole fails the call: a write concern error first (see bulkCommand), then any
 * other whole-bulk error.
 */
async function sentInGroups(ops: WriteOp[], groups: SendGroup[]): Promise<WriteFailure[]> {
  const parts = await Promise.allSettled(
    groups.map(async ([indexes, send]) => {
      const failures = await send(indexes.map((i) => ops[i]!));
      return failures.map((f) => ({ ...f, index: indexes[f.index]! }));
    }),
  );
  const rejected = parts.filter((p) => p.status === 'rejected').map((p) => p.reason as unknown);
  if (rejected.length > 0) {
    throw rejected.find((e) => e instanceof WriteConcernFailedError) ?? rejected[0];
  }
  return parts.flatMap((p) => (p.status === 'fulfilled' ? p.value : []));
}

/** A write command's reply, as the raw writes read it. */
export interface RawWriteReply {
  n?: number;
  writeErrors?: Array<{ index: number; code: number; errmsg?: string }>;
  writeConcernError?: Document;
}

/**
 * A write command built with `documentSequence` (insert, update), under the database's write
 * concern. A failed command throws, labelled; a write concern error in the reply throws
 * WriteConcernFailedError (the writes are not known to be durable); otherwise the reply is
 * returned for its `n` and `writeErrors`.
 */
export async function sendRawWrite(
  db: Db,
  command: Document,
  namespace: string,
): Promise<RawWriteReply> {
  if (db.writeConcern) WriteConcern.apply(command, db.writeConcern);
  const reply = (await db.command(command).catch((error: unknown) => {
    // The driver throws a reply's write concern error itself (MongoWriteConcernError).
    throwIfWriteConcernFailed(error, namespace);
    throw labelDriverError(error);
  })) as RawWriteReply;
  if (reply.writeConcernError) {
    throwIfWriteConcernFailed(
      new MongoServerError({
        message: String(reply.writeConcernError.errmsg ?? 'write concern error'),
        writeConcernError: reply.writeConcernError,
      }),
      namespace,
    );
  }
  return reply;
}

/** The ops the update command carries: a replace-with-upsert, an update without upsert. */
type StatementOp = Extract<WriteOp, { kind: 'replace' | 'update' }>;

/** The op as the update command's statement (as toModel's would be sent). */
function statementOf(op: StatementOp): Document {
  return op.kind === 'replace'
    ? { q: op.filter, u: documentOf(op.replacement), upsert: true, multi: false }
    : { q: op.filter, u: op.update, upsert: false, multi: false };
}

/** A replacement or update whose statement the driver's bulk API refuses for its size. */
function isLargeStatement(op: WriteOp): boolean {
  return (
    op.kind !== 'delete' &&
    BSON.calculateObjectSize(statementOf(op), { ignoreUndefined: false }) >= DRIVER_STATEMENT_LIMIT
  );
}

/** The write command that carries the op. */
function commandOf(op: WriteOp): 'insert' | 'update' | 'delete' {
  if (op.kind === 'delete') return 'delete';
  return op.kind === 'replace' && op.insert ? 'insert' : 'update';
}

function toModel(op: WriteOp): AnyBulkWriteOperation<Document> {
  switch (op.kind) {
    case 'replace':
      // An insert stands for the replace-upsert (see WriteOp): the lane upserts on a duplicate.
      if (op.insert) return { insertOne: { document: documentOf(op.replacement) } };
      return {
        replaceOne: { filter: op.filter, replacement: documentOf(op.replacement), upsert: true },
      };
    case 'update':
      return { updateOne: { filter: op.filter, update: op.update, upsert: false } };
    case 'delete':
      return { deleteOne: { filter: op.filter } };
  }
}
