import { BSON, type Document } from 'bson';
import {
  MongoBulkWriteError,
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
import { InsertBatcher, labelFault, labelsForCode, type ClaimGuard } from '@sync/engine';
import { DocumentSequenceImpl, documentSequence } from './document-sequence';
import { EXACT_BSON } from './exact-bson';
import { labelDriverError, writeErrorLabels } from './fault-labelling';

/** A write command's documents or statements at most: bytes (a larger one goes alone), count. */
const COMMAND_BYTES = 16 * 1024 * 1024;
const COMMAND_STATEMENTS = 100_000;

/** How documents and statements are encoded (as the driver encodes a command). */
const ENCODE = { checkKeys: false, ignoreUndefined: false } as const;

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
 * each with its own bulk per namespace) are sent as one bulk: one round trip and one
 * write per command for the destination instead of one per lane. This keeps every guarantee a caller
 * has: calls in flight together are unordered bulks with no order between them, so one
 * unordered bulk holding all of them promises exactly as much (a caller never has two writes
 * of one document in flight at once — the applier awaits a document's previous step).
 * Per-op failures are mapped back to each call's own indexes; a whole-bulk error rejects
 * every call in it.
 *
 * It only translates: inserts and updates to `insert` and `update` commands whose documents
 * and statements travel as bytes (statementsCommand), deletes to the driver's bulk API (as
 * every write when the driver has no document sequence), replies and errors to per-op failures
 * and errors carrying fault labels (fault-labelling.ts). Nothing is sent again here — the
 * write lane retries (write-lane.ts).
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
   * one command each, at once instead: one round trip, not three. Failures are mapped back to
   * indexes of `ops`.
   */
  private async bulkOnce(ns: Namespace, ops: WriteOp[]): Promise<WriteFailure[]> {
    const byCommand: Record<WriteCommand, number[]> = { insert: [], update: [], delete: [] };
    ops.forEach((op, index) => byCommand[commandOf(op)].push(index));
    const send = (command: WriteCommand) => (part: WriteOp[]) =>
      command !== 'delete' && DocumentSequenceImpl
        ? this.statementsCommand(ns, command, part)
        : this.bulkCommand(ns, part);
    const groups = (Object.keys(byCommand) as WriteCommand[]).filter(
      (command) => byCommand[command].length > 0,
    );
    if (groups.length === 1) return send(groups[0]!)(ops);
    return sentInGroups(
      ops,
      groups.map((command): SendGroup => [byCommand[command], send(command)]),
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
      // Checked first: per-op failures next to a write concern error must not hide it (the
      // writes that "succeeded" are not known to be durable, so no checkpoint may pass them).
      throwIfWriteConcernFailed(error, `${ns.db}.${ns.coll}`);
      if (!(error instanceof MongoBulkWriteError)) throw labelDriverError(error);
      const list = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
      if (list.length === 0) throw labelDriverError(error); // not per-op (e.g. a network error)
      return list.map((e: WriteError) => failureOf(e));
    }
  }

  /**
   * Inserts or updates as commands built by hand, their documents (`insert`) or statements
   * (`update`) an OP_MSG document sequence of bytes:
   * - a full document the change feed or a lookup handed over raw (RawDocument) is sent exactly
   *   as the source stores it — never decoded nor re-encoded, its field order and every type as
   *   they are (a JS object would move field names like "1" or "2024" to the front);
   * - a statement at MongoDB's document limit goes as any other: mongod takes a statement up to
   *   16 MiB + 16 KiB, where the driver's bulk API refuses one of 16 MiB (its size check), so
   *   the replace-upsert of a 16 MiB − 1 byte document needs nothing special.
   * Split at 16 MiB of bytes and 100,000 statements (far below the 48 MB message and mongod's
   * batch limits); the parts go at once (an unordered bulk). Per-statement failures (a
   * duplicate key: the lane upserts instead) are mapped back to indexes of `ops`.
   */
  private async statementsCommand(
    ns: Namespace,
    command: 'insert' | 'update',
    ops: WriteOp[],
  ): Promise<WriteFailure[]> {
    const statements = ops.map((op) =>
      command === 'insert' ? insertedBytes(op) : updateStatementBytes(op),
    );
    // Statement indexes, grouped as the copy groups its documents.
    const batcher = new InsertBatcher<number>({
      maxBytes: COMMAND_BYTES,
      maxDocuments: COMMAND_STATEMENTS,
    });
    const parts: number[][] = [];
    statements.forEach((statement, i) => {
      const before = batcher.makeRoom(statement.byteLength);
      if (before) parts.push(before.documents);
      const filled = batcher.add(i, statement.byteLength);
      if (filled) parts.push(filled.documents);
    });
    if (batcher.pending > 0) parts.push(batcher.take().documents);
    const db = this.client.db(ns.db);
    const namespace = `${ns.db}.${ns.coll}`;
    const field = command === 'insert' ? 'documents' : 'updates';
    const sendPart = async (indexes: number[]): Promise<WriteFailure[]> => {
      this.guard?.assertHeld();
      const reply = await sendRawWrite(
        db,
        {
          [command]: ns.coll,
          [field]: documentSequence(
            field,
            indexes.map((i) => statements[i]!),
          ),
          ordered: false,
          bypassDocumentValidation: true,
        },
        namespace,
      );
      return (reply.writeErrors ?? []).map(failureOf);
    };
    if (parts.length === 1) return sendPart(parts[0]!);
    return sentInGroups(
      ops,
      parts.map((indexes): SendGroup => [indexes, () => sendPart(indexes)]),
    );
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

type WriteCommand = 'insert' | 'update' | 'delete';

/** A per-statement write error as a failure at its index, labelled. */
function failureOf(e: { index: number; code: number; errmsg?: string }): WriteFailure {
  return {
    index: e.index,
    code: e.code,
    message: e.errmsg ?? '',
    faultLabels: writeErrorLabels(e.code),
  };
}

/** An insert's document as bytes: a raw one as it is, a decoded one encoded once. */
function insertedBytes(op: WriteOp): Uint8Array {
  if (op.kind !== 'replace') throw new Error(`a ${op.kind} sent as an insert`);
  return op.replacement instanceof RawDocument
    ? op.replacement.bytes
    : BSON.serialize(op.replacement, ENCODE);
}

/**
 * The update command's statement for a replace-upsert (`{q, u: document, upsert: true,
 * multi: false}`, a raw document's bytes spliced in as they are) or an update without upsert.
 */
function updateStatementBytes(op: WriteOp): Uint8Array {
  if (op.kind === 'delete') throw new Error('a delete sent as an update');
  if (op.kind === 'update')
    return BSON.serialize({ q: op.filter, u: op.update, upsert: false, multi: false }, ENCODE);
  const replacement = op.replacement;
  if (!(replacement instanceof RawDocument))
    return BSON.serialize({ q: op.filter, u: replacement, upsert: true, multi: false }, ENCODE);
  // {q} encoded, then the elements u (an embedded document: the raw bytes), upsert and multi.
  const head = BSON.serialize({ q: op.filter }, ENCODE);
  const q = head.subarray(4, head.byteLength - 1);
  const u = replacement.bytes;
  const tail = Buffer.from([0x08, ...UPSERT, 1, 0x08, ...MULTI, 0, 0x00]);
  const size = 4 + q.byteLength + 3 + u.byteLength + tail.byteLength;
  const out = Buffer.allocUnsafe(size);
  out.writeInt32LE(size, 0);
  out.set(q, 4);
  let at = 4 + q.byteLength;
  out.set(U_ELEMENT, at);
  out.set(u, (at += U_ELEMENT.byteLength));
  out.set(tail, at + u.byteLength);
  return out;
}

/** Element headers of a statement: type byte and name (NUL-terminated). */
const U_ELEMENT = Buffer.from([0x03, 0x75, 0x00]);
const UPSERT = [...Buffer.from('upsert\0', 'latin1')];
const MULTI = [...Buffer.from('multi\0', 'latin1')];

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
