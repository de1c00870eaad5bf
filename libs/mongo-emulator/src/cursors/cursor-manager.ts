import { Long, type Document } from 'bson';
import { CommandError } from '../errors';
import { bsonSize } from '../bson/codec';

/** MongoDB's limit for the documents of one reply batch (16 MiB). */
export const MAX_BATCH_BYTES = 16 * 1024 * 1024;
/** The first batch of find/aggregate holds 101 documents unless batchSize says otherwise. */
export const DEFAULT_FIRST_BATCH = 101;

export interface BatchRequest {
  batchSize?: number;
  maxTimeMS?: number;
  /** Aborted when the connection closes or the server stops. */
  signal?: AbortSignal;
  /** getMore only: run once the cursor is checked out; throwing kills the cursor. */
  afterCheckout?: (cursor: ServerCursor) => void;
}

export interface Batch {
  documents: Document[];
  /** True when the cursor has nothing more and must be closed (cursor id 0 in the reply). */
  exhausted: boolean;
  /** Extra fields placed in the reply's `cursor` document (e.g. postBatchResumeToken). */
  cursorFields?: Document;
}

/** A server-side cursor. Query cursors stream from an iterator; change streams implement their own. */
export interface ServerCursor {
  readonly ns: string;
  nextBatch(request: BatchRequest): Promise<Batch>;
  close(): void;
  /**
   * Run before every getMore, like mongod restoring a yielded plan: throws (and so kills the
   * cursor) when what the cursor reads from is gone (a dropped or renamed collection).
   */
  checkValid?(): void;
}

interface Entry {
  cursor: ServerCursor;
  /** The session that owns the cursor; getMore from another session is refused. */
  lsidKey?: string;
  user?: string;
  lastUsed: number;
  busy: boolean;
}

/** Cursor that pulls batches from a (lazy) iterator, so a large result is never materialised. */
export class IteratorCursor implements ServerCursor {
  private done = false;
  private pending: Document | undefined;

  constructor(
    readonly ns: string,
    private readonly iterator: Iterator<Document>,
    private readonly guard?: () => void,
  ) {}

  checkValid(): void {
    this.guard?.();
  }

  async nextBatch(request: BatchRequest): Promise<Batch> {
    const limit = request.batchSize && request.batchSize > 0 ? request.batchSize : Infinity;
    const documents: Document[] = [];
    let bytes = 0;
    while (documents.length < limit && !this.done) {
      let doc = this.pending;
      this.pending = undefined;
      if (!doc) {
        const next = this.iterator.next();
        if (next.done) {
          this.done = true;
          break;
        }
        doc = next.value;
      }
      const size = bsonSize(doc);
      if (documents.length > 0 && bytes + size > MAX_BATCH_BYTES) {
        this.pending = doc;
        break;
      }
      documents.push(doc);
      bytes += size;
    }
    if (!this.done && this.pending === undefined && documents.length >= limit) {
      // Peek so a cursor that is exactly drained reports id 0 in this reply, like mongod.
      const next = this.iterator.next();
      if (next.done) this.done = true;
      else this.pending = next.value;
    }
    return { documents, exhausted: this.done && this.pending === undefined };
  }

  close(): void {
    this.done = true;
    this.iterator.return?.();
  }
}

/** Registry of open cursors, keyed by a positive 64-bit id. */
export class CursorManager {
  private readonly cursors = new Map<string, Entry>();
  private nextId = BigInt(Math.floor(Math.random() * 2 ** 40)) + 1000n;

  register(cursor: ServerCursor, owner: { lsidKey?: string; user?: string } = {}): Long {
    this.nextId += 1n;
    const id = Long.fromBigInt(this.nextId);
    this.cursors.set(id.toString(), { cursor, ...owner, lastUsed: Date.now(), busy: false });
    return id;
  }

  /**
   * Runs the first batch of a new cursor and registers it only when more remains.
   * Returns the reply's `cursor` document.
   */
  async firstBatch(
    cursor: ServerCursor,
    request: BatchRequest,
    owner: { lsidKey?: string; user?: string } = {},
  ): Promise<Document> {
    const batchSize = request.batchSize ?? DEFAULT_FIRST_BATCH;
    const batch = await cursor.nextBatch({ ...request, batchSize });
    let id = Long.ZERO;
    if (batch.exhausted) cursor.close();
    else id = this.register(cursor, owner);
    return { firstBatch: batch.documents, ...(batch.cursorFields ?? {}), id, ns: cursor.ns };
  }

  async getMore(
    id: Long,
    ns: string,
    request: BatchRequest,
    owner: { lsidKey?: string; user?: string } = {},
  ): Promise<Document> {
    const key = id.toString();
    const entry = this.cursors.get(key);
    if (!entry) throw new CommandError('CursorNotFound', `cursor id ${key} not found`);
    if (entry.cursor.ns !== ns) {
      throw new CommandError(
        'Unauthorized',
        `Requested getMore on namespace '${ns}', but cursor belongs to a different namespace ${entry.cursor.ns}`,
      );
    }
    if (entry.lsidKey !== undefined && owner.lsidKey !== entry.lsidKey) {
      throw new CommandError(
        50737 as number,
        `Cannot run getMore on cursor ${key}, which was created in session ${entry.lsidKey}, in session ${owner.lsidKey ?? 'none'}`,
      );
    }
    if (entry.busy) throw new CommandError('CursorNotFound', `cursor id ${key} is already in use`);
    entry.busy = true;
    try {
      entry.cursor.checkValid?.();
      request.afterCheckout?.(entry.cursor);
      const batch = await entry.cursor.nextBatch(request);
      entry.lastUsed = Date.now();
      let replyId = id;
      if (batch.exhausted) {
        entry.cursor.close();
        this.cursors.delete(key);
        replyId = Long.ZERO;
      }
      return { nextBatch: batch.documents, ...(batch.cursorFields ?? {}), id: replyId, ns };
    } catch (err) {
      entry.cursor.close();
      this.cursors.delete(key);
      throw err;
    } finally {
      entry.busy = false;
    }
  }

  /** killCursors semantics: returns which ids were killed and which were not found. */
  kill(ids: Long[]): {
    cursorsKilled: Long[];
    cursorsNotFound: Long[];
    cursorsAlive: Long[];
    cursorsUnknown: Long[];
  } {
    const cursorsKilled: Long[] = [];
    const cursorsNotFound: Long[] = [];
    for (const id of ids) {
      const entry = this.cursors.get(id.toString());
      if (!entry) {
        cursorsNotFound.push(id);
        continue;
      }
      entry.cursor.close();
      this.cursors.delete(id.toString());
      cursorsKilled.push(id);
    }
    return { cursorsKilled, cursorsNotFound, cursorsAlive: [], cursorsUnknown: [] };
  }

  /** Kills the cursors owned by the given sessions (endSessions / killSessions). */
  killForSessions(lsidKeys: Set<string>): void {
    for (const [key, entry] of this.cursors) {
      if (entry.lsidKey !== undefined && lsidKeys.has(entry.lsidKey)) {
        entry.cursor.close();
        this.cursors.delete(key);
      }
    }
  }

  /** Closes cursors idle longer than `idleMs` (mongod's cursorTimeoutMillis, 10 minutes). */
  reapIdle(idleMs: number, now = Date.now()): void {
    for (const [key, entry] of this.cursors) {
      if (!entry.busy && now - entry.lastUsed > idleMs) {
        entry.cursor.close();
        this.cursors.delete(key);
      }
    }
  }

  get openCount(): number {
    return this.cursors.size;
  }

  closeAll(): void {
    for (const entry of this.cursors.values()) entry.cursor.close();
    this.cursors.clear();
  }
}
