import { BSON, EJSON, type Document } from 'bson';
import { nsKey, type Namespace } from './change-event';
import { ApplyError, DestinationWriteError } from './errors';
import { retryInPlace, type InPlaceRetryOptions } from '../faults/retry-in-place';
import { describeFault, worthRunningAgain } from '../faults/transient';
import { hasFaultLabel, labelFault } from '../faults/fault-labels';
import type { ChangeWriter, DocumentLookup, WriteFailure, WriteOp } from './ports';
import type { DocumentWrite, WriteStep } from './write-step';
import type { AppliedWrites } from './change-applier';
import { applyUpdateInMemory } from './update-in-memory';
import { documentOf, type FullDocument } from './raw-document';

export interface WriteLaneDeps {
  writer: ChangeWriter;
  lookup: DocumentLookup;
  /** Sequence numbers whose writes are all on the destination. */
  onApplied(seqs: number[]): void;
  onError(error: unknown): void;
  /** Transient failures of a bulk or a lookup are retried here before they fail the lane. */
  retry?: InPlaceRetryOptions;
  /**
   * A per-shard worker (see TranslationOptions.perShard): its shard's share of the key space.
   * It writes and removes only versions of documents whose shard key its shard owns; the halves
   * of a move between shards meet as two versions of one `_id` and are settled from the source
   * (see settleMove).
   */
  keyspace?: ShardKeyspace;
  /** Told of each bulk sent (its writes), retries not counted: the applier sizes its lanes by it. */
  onBulk?(writes: number): void;
  /** Counts documents whose move between shards was settled after their halves met (progress). */
  onMoveRepaired?(documents: number): void;
  /** Told of each document of a batch once the whole batch is written (the verifier). */
  appliedWrites?: Pick<AppliedWrites, 'document'>;
}

/**
 * A per-shard worker's share of a sharded source's key space (chunk ownership at T0: a chunk
 * migration stops the sync, so the share never changes while it runs).
 */
export interface ShardKeyspace {
  /** The source collection's shard key fields; undefined when it was not sharded at T0. */
  keyFields(collectionUuid: string | undefined): string[] | undefined;
  /** True when this worker's shard owns the document's shard-key value. */
  owns(ns: Namespace, collectionUuid: string | undefined, doc: Document): boolean;
}

interface PendingDoc {
  ns: Namespace;
  steps: WriteStep[];
}

/**
 * One lane: documents routed here are written in batches. While a batch is being written, new
 * events accumulate into the next one, so batch size adapts to load without a timer.
 *
 * Within a batch each document has one entry (its steps in event order). A write that fully
 * determines the document (replace, delete, lookup) drops the pending steps before it: only
 * the last state matters, and the document is written once. An update that sets and unsets
 * exactly the paths of the document's last pending update replaces it (see
 * overwritesLastUpdate); updates after a pending insert or replace are applied onto its full
 * document in memory where MongoDB's result can be reproduced exactly, so an inserted document
 * updated in the same batch is written once (see updatesOntoPendingDocument). The batch is sent
 * in rounds —
 * round r holds step r of every document — as one unordered bulk per namespace, so a bulk
 * never holds two writes of the same document and a document's steps keep their order.
 */
export class WriteLane {
  private pending = new Map<string, PendingDoc>();
  private seqs: number[] = [];
  private running = false;
  private idleWaiters: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];
  private error: unknown;

  constructor(private readonly deps: WriteLaneDeps) {}

  /** Destination shard key fields by namespace (sharded destination collections only). */
  private readonly shardKeys = new Map<string, string[]>();
  /** Source collection UUIDs by namespace, so a lookup reads that collection whatever its name. */
  private readonly uuids = new Map<string, string>();

  /** `seq`: the event's checkpoint sequence, or null for a write no event asked for (a repair). */
  push(write: DocumentWrite, seq: number | null): void {
    if (write.shardKeyFields) this.shardKeys.set(nsKey(write.ns), write.shardKeyFields);
    if (write.collectionUuid) this.uuids.set(nsKey(write.ns), write.collectionUuid);
    const entry = this.pending.get(write.identity);
    if (entry && this.deps.keyspace) {
      // A per-shard worker: the document's versions under two shard keys are two documents
      // (each step is addressed by its full key), run in order. Under one key, the last state
      // replaces the pending ones — except a pending retirement of this shard's older versions.
      if (!sameKeys([...entry.steps, ...write.steps])) entry.steps.push(...write.steps);
      else if (write.supersedes) {
        const retire = entry.steps.find((s) => s.kind === 'retire');
        const steps = write.steps.some((s) => s.kind === 'retire') || !retire ? [] : [retire];
        entry.steps = [...steps, ...write.steps];
      } else if (overwritesLastUpdate(entry.steps, write.steps)) {
        entry.steps[entry.steps.length - 1] = write.steps[0];
      } else entry.steps.push(...write.steps);
    } else if (!entry || write.supersedes) {
      const steps = [...write.steps];
      // On a sharded source the documentKey carries the shard key: a pending write under an
      // OLD key (e.g. the delete half of a shard-key move) is not covered by an upsert under
      // the new one. Superseding it, remove the document by _id first, wherever it is.
      if (entry && [...entry.steps, ...steps].some(hasShardKeyFilter)) {
        const first = steps[0];
        const id = keyOf(first)?._id;
        if (!(first?.kind === 'delete' && Object.keys(first.filter).length === 1)) {
          steps.unshift({ kind: 'delete', filter: { _id: id } });
        }
      }
      this.pending.set(write.identity, { ns: write.ns, steps });
    } else if (overwritesLastUpdate(entry.steps, write.steps)) {
      entry.steps[entry.steps.length - 1] = write.steps[0];
    } else {
      entry.steps.push(...updatesOntoPendingDocument(entry.steps, write.steps));
    }
    if (seq !== null) this.seqs.push(seq);
    if (!this.running) {
      this.running = true;
      void this.loop();
    }
  }

  /** Resolves once everything pushed so far is written; rejects if the lane failed. */
  drain(): Promise<void> {
    if (this.error !== undefined) return Promise.reject(this.error);
    if (!this.running) return Promise.resolve();
    return new Promise((resolve, reject) => this.idleWaiters.push({ resolve, reject }));
  }

  private async loop(): Promise<void> {
    // Let the caller finish dispatching the current feed batch: it becomes one write batch.
    await Promise.resolve();
    try {
      while (this.pending.size > 0) {
        const docs = this.pending;
        const seqs = this.seqs;
        this.pending = new Map();
        this.seqs = [];
        await this.writeBatch([...docs.values()]);
        const applied = this.deps.appliedWrites;
        if (applied) {
          for (const [identity, doc] of docs)
            applied.document(doc.ns, keyOf(doc.steps[0])?._id, identity);
        }
        this.deps.onApplied(seqs);
      }
    } catch (error) {
      this.error = error;
      this.deps.onError(error);
    } finally {
      this.running = false;
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) {
        if (this.error !== undefined) w.reject(this.error);
        else w.resolve();
      }
    }
  }

  private async writeBatch(docs: PendingDoc[]): Promise<void> {
    const rounds = Math.max(0, ...docs.map((d) => d.steps.length));
    for (let r = 0; r < rounds; r++) {
      const byNs = new Map<string, { ns: Namespace; steps: WriteStep[] }>();
      for (const doc of docs) {
        const step = doc.steps[r];
        if (!step) continue;
        const key = nsKey(doc.ns);
        let group = byNs.get(key);
        if (!group) byNs.set(key, (group = { ns: doc.ns, steps: [] }));
        group.steps.push(step);
      }
      await Promise.all([...byNs.values()].map((g) => this.writeRound(g.ns, g.steps)));
    }
  }

  private async writeRound(ns: Namespace, all: WriteStep[]): Promise<void> {
    // A round holds one step per document: a document's retirement runs before its other
    // steps, which come in later rounds.
    const retiring = all.filter((s) => s.kind === 'retire');
    if (retiring.length > 0) {
      const deletes = (
        await Promise.all(retiring.map((s) => this.retireOps(ns, keyOf(s)!)))
      ).flat();
      const failed = await this.write(ns, deletes);
      if (failed.length > 0) throw writeError(ns, deletes[failed[0].index], failed[0]);
    }
    const steps = all.filter((s) => s.kind !== 'retire');
    const ops = await Promise.all(steps.map((s) => this.resolve(ns, s)));
    const failures = await this.write(ns, ops);
    if (failures.length === 0) return;
    // Only a replayed update that met a newer document shape (see update-event.ts) is re-read
    // from the source; a per-shard worker's upsert that meets another version of its `_id` is
    // settled from the source (settleMove); any other failure — a duplicate key, a write
    // concern error reported per op, a replace or delete failing — stops the lane.
    const reshaped: WriteFailure[] = [];
    const moves: Promise<void>[] = [];
    for (const failure of failures) {
      const op = ops[failure.index];
      if (
        this.deps.keyspace &&
        op?.kind === 'replace' &&
        hasFaultLabel(failure, 'duplicateKey') &&
        hasShardKeyFilter(op)
      ) {
        moves.push(this.settleMove(ns, op, failure));
      } else if (op?.kind === 'update' && hasFaultLabel(failure, 'shapeConflict')) {
        reshaped.push(failure);
      } else {
        throw writeError(ns, op, failure);
      }
    }
    const fallback = await Promise.all(
      reshaped.map((f) => this.resolveLookup(ns, ops[f.index].filter)),
    );
    const [second] = await Promise.all([this.write(ns, fallback), ...moves]);
    if (second.length > 0) throw writeError(ns, fallback[second[0].index], second[0]);
  }

  /**
   * A per-shard worker's upsert met another version of its `_id` on the destination (one unique
   * `_id` index holds both: an unsharded destination, one sharded on another key, or both
   * versions on one destination shard): the halves of a move between shards, applied by two
   * workers at their own pace. Settled from the source, read through the routers by `_id`:
   * - the document is on another shard now, or gone: this write is superseded — the document
   *   left this shard since, and this shard's stream removes this version later — so skipped;
   * - it is on this shard: every other version is older (their shards' streams remove them,
   *   later), so they are removed now and the current version is written; the events after
   *   this one replay on top of it, as after any lookup.
   * Another worker's write meeting this one is settled the same way, so nothing is decided by
   * which write arrives first; a write that meets yet another version tries again. (One window
   * stays, far narrower than a lookup's: the document leaves this shard and comes back to the
   * other shard under the very key of a stale version, and that worker writes it between this
   * read and this delete. The verifier's final pass would name the document.)
   */
  private async settleMove(
    ns: Namespace,
    op: Extract<WriteOp, { kind: 'replace' }>,
    failure: WriteFailure,
  ): Promise<void> {
    const keyspace = this.deps.keyspace!;
    const uuid = this.uuids.get(nsKey(ns));
    const fields = this.sourceKeyFields(uuid, op.filter);
    let last = failure;
    for (let attempt = 0; attempt < MOVE_ATTEMPTS; attempt++) {
      // The destination's versions first, then the source: every version read was written for
      // an event older than the source read, so all are older than `current`.
      const versions = await this.versionsOf(ns, op.filter);
      const read = await this.readSource(ns, { _id: op.filter._id });
      if (attempt === 0) this.deps.onMoveRepaired?.(1);
      const current = read && documentOf(read);
      if (!current || !keyspace.owns(ns, uuid, current)) return;
      const stale = versions
        .filter((v) => !sameKeyValues(v, current, fields))
        .map((v) => ({ kind: 'delete' as const, filter: exactKey(v, fields) }));
      const removed = await this.write(ns, stale);
      if (removed.length > 0) throw writeError(ns, stale[removed[0].index], removed[0]);
      const write = this.targeted(ns, {
        kind: 'replace',
        filter: exactKey(current, fields),
        replacement: read,
      });
      const result = await this.write(ns, [write]);
      if (result.length === 0) return;
      last = result[0];
      if (!hasFaultLabel(last, 'duplicateKey')) throw writeError(ns, write, last);
    }
    throw writeError(ns, op, last);
  }

  /** Deletes of this shard's versions of the document under another key than `documentKey`. */
  private async retireOps(ns: Namespace, documentKey: Document): Promise<WriteOp[]> {
    const keyspace = this.deps.keyspace;
    if (!keyspace) throw new Error('a retire step outside a per-shard sync');
    const uuid = this.uuids.get(nsKey(ns));
    const fields = this.sourceKeyFields(uuid, documentKey);
    const versions = await this.versionsOf(ns, documentKey);
    return versions
      .filter((v) => keyspace.owns(ns, uuid, v) && !sameKeyValues(v, documentKey, fields))
      .map((v) => ({ kind: 'delete' as const, filter: exactKey(v, fields) }));
  }

  /** Every version of the document's `_id` on the destination (its source shard-key fields). */
  private versionsOf(ns: Namespace, documentKey: Document): Promise<Document[]> {
    const read = this.deps.writer.versions;
    if (!read) throw new Error('the destination writer cannot read versions of a document');
    const fields = this.sourceKeyFields(this.uuids.get(nsKey(ns)), documentKey);
    return retryInPlace(
      `read of ${nsKey(ns)} on the destination`,
      () => read.call(this.deps.writer, ns, documentKey._id, fields),
      this.deps.retry,
    );
  }

  private sourceKeyFields(uuid: string | undefined, documentKey: Document): string[] {
    return (
      this.deps.keyspace?.keyFields(uuid) ?? Object.keys(documentKey).filter((f) => f !== '_id')
    );
  }

  /**
   * One unordered bulk, retried in place while it fails transiently: the whole bulk when the
   * command failed (a failover, a dropped connection), only the failed writes when some writes
   * failed transiently. Every write here is idempotent (replace-upsert, delete by key, an update
   * that sets values), so one that took effect before its reply was lost is harmless to send
   * again; writes of one bulk address distinct documents, so a subset sent again keeps every
   * document's order. The one place a subset of a bulk is sent again (the writer only
   * translates): also a replace-upsert that met a duplicate key, at once and at most
   * UPSERT_RETRIES times — two upserts of one new `_id` race (this write and the copy's
   * insert), and the loser finds the document on its next try — and an insert that met the
   * document, as the replace-upsert it stands for (`ops` then holds that upsert).
   */
  private async write(ns: Namespace, ops: WriteOp[]): Promise<WriteFailure[]> {
    if (ops.length > 0) this.deps.onBulk?.(ops.length);
    let pending = ops.map((op, index) => ({ op, index }));
    const settled: WriteFailure[] = [];
    try {
      return await retryInPlace(
        `write to ${nsKey(ns)}`,
        async () => {
          const { transient, failed } = await this.sendRacing(ns, ops, pending);
          settled.push(...failed);
          if (transient.length === 0) return settled;
          pending = transient.map((f) => ({ op: ops[f.index], index: f.index }));
          throw new TransientWriteFailures(transient);
        },
        this.deps.retry,
      );
    } catch (error) {
      if (error instanceof TransientWriteFailures) return [...settled, ...error.failures];
      throw commandFailed(ns, ops.length, error);
    }
  }

  /**
   * Sends `pending` (writes of `ops`, by index), then again the replace-upserts that lost a
   * duplicate-key race; returns the failures left by their indexes in `ops`: the transient ones
   * (to retry in place) and the others.
   */
  private async sendRacing(
    ns: Namespace,
    ops: WriteOp[],
    pending: Array<{ op: WriteOp; index: number }>,
  ): Promise<{ transient: WriteFailure[]; failed: WriteFailure[] }> {
    const transient: WriteFailure[] = [];
    const failed: WriteFailure[] = [];
    let batch = pending;
    for (let race = 0; batch.length > 0; race++) {
      const failures = await this.deps.writer.bulkWrite(
        ns,
        batch.map((p) => p.op),
      );
      const mapped = failures.map((f) => ({ ...f, index: batch[f.index].index }));
      // An insert that met the document (see WriteOp): sent again as the replace-upsert at
      // once, whatever the race count.
      const racing = (f: WriteFailure) => {
        const op = ops[f.index];
        return (
          op.kind === 'replace' &&
          hasFaultLabel(f, 'duplicateKey') &&
          (op.insert === true || race < UPSERT_RETRIES)
        );
      };
      for (const f of mapped) {
        if (racing(f)) continue;
        (hasFaultLabel(f, 'transient') ? transient : failed).push(f);
      }
      batch = mapped.filter(racing).map((f) => {
        ops[f.index] = asUpsert(ops[f.index]);
        return { op: ops[f.index], index: f.index };
      });
    }
    return { transient, failed };
  }

  private resolve(ns: Namespace, step: WriteStep): Promise<WriteOp> | WriteOp {
    if (step.kind === 'lookup') return this.resolveLookup(ns, step.documentKey);
    if (step.kind === 'retire') throw new Error('a retire step is run before its round');
    if (step.kind !== 'replace') return step;
    // A per-shard worker upserts: settleMove reads a duplicate key of an upsert under its shard
    // key as the other half of a move between shards.
    return this.targeted(ns, this.deps.keyspace ? asUpsert(step) : step);
  }

  /** The source's current document with this key (its collection followed by UUID), or null. */
  private readSource(ns: Namespace, documentKey: Document): Promise<FullDocument | null> {
    return retryInPlace(
      `lookup in ${nsKey(ns)}`,
      () => this.deps.lookup.findByKey(ns, documentKey, this.uuids.get(nsKey(ns))),
      this.deps.retry,
    );
  }

  /** The source's current version of the document, or its deletion when it is gone. */
  private async resolveLookup(ns: Namespace, documentKey: Document): Promise<WriteOp> {
    const doc = await this.readSource(ns, documentKey);
    return doc
      ? this.targeted(ns, { kind: 'replace', filter: documentKey, replacement: doc })
      : { kind: 'delete', filter: documentKey };
  }

  /**
   * A replace-upsert into a collection sharded on the destination names the shard key's values
   * (taken from the replacement; a missing field is null, as mongod keys it) so that mongos can
   * target the upsert.
   */
  private targeted(ns: Namespace, op: Extract<WriteOp, { kind: 'replace' }>): WriteOp {
    const fields = this.shardKeys.get(nsKey(ns));
    if (!fields) return op;
    const filter: Document = { ...op.filter };
    for (const field of fields) {
      if (!(field in filter)) filter[field] = valueAt(documentOf(op.replacement), field) ?? null;
    }
    return { ...op, filter };
  }
}

/** Some writes of a bulk failed transiently (thrown only to be retried in place). */
class TransientWriteFailures extends Error {
  readonly code: number | undefined;

  constructor(readonly failures: WriteFailure[]) {
    super(`${failures.length} writes failed: ${failures[0]?.message ?? ''}`);
    this.name = 'TransientWriteFailures';
    this.code = failures[0]?.code;
    labelFault(this, ['transient']);
  }
}

/**
 * A whole bulk refused (authorization lost, a dropped connection that outlasted the retries):
 * a DestinationWriteError that names the namespace and the server's code. Errors of the change
 * application's own kinds pass through, located on the namespace.
 */
function commandFailed(ns: Namespace, writes: number, error: unknown): Error {
  const located =
    error instanceof ApplyError
      ? error
      : new DestinationWriteError(
          `${writes} write(s) to ${nsKey(ns)} failed: ${describeFault(error)}`,
          worthRunningAgain(error),
          { cause: error },
        );
  (located as Error & { namespace?: string }).namespace ??= nsKey(ns);
  return located;
}

function writeError(ns: Namespace, op: WriteOp | undefined, failure: WriteFailure) {
  const id = op ? ` of _id ${renderId(op.filter)}` : '';
  return new DestinationWriteError(
    `${op?.kind ?? 'write'}${id} on ${nsKey(ns)} failed: ${failure.message}` +
      (failure.code !== undefined ? ` (code ${failure.code})` : ''),
    // A write concern not met, or a transient failure: the write may succeed when run again.
    hasFaultLabel(failure, 'transient') || hasFaultLabel(failure, 'writeConcern'),
    { cause: failure },
  );
}

/** The filter's `_id` as relaxed Extended JSON (`{"$oid": …}`, plain numbers). */
function renderId(filter: Document): string {
  try {
    return EJSON.stringify(filter._id, { relaxed: true });
  } catch {
    return String(filter._id);
  }
}

function valueAt(doc: Document, path: string): unknown {
  let value: unknown = doc;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    value = (value as Document)[part];
  }
  return value;
}

/** The documentKey a step is addressed by. */
function keyOf(step: WriteStep | undefined): Document | undefined {
  if (!step) return undefined;
  return step.kind === 'lookup' || step.kind === 'retire' ? step.documentKey : step.filter;
}

/** A replace sent as an insert (see WriteOp), as the replace-upsert it stands for. */
function asUpsert<T extends WriteOp>(op: T): T {
  const write: WriteOp = op;
  if (write.kind !== 'replace' || !write.insert) return op;
  const { insert: _insert, ...upsert } = write;
  return upsert as T;
}

/** Two replace-upserts of one new `_id` can race (this write vs the copy's insert): retry a few. */
const UPSERT_RETRIES = 3;
/** A move settled from the source meets yet another version at most this often in a row. */
const MOVE_ATTEMPTS = 5;

/** The version's shard-key values equal the documentKey's (BSON bytes, type included). */
function sameKeyValues(version: Document, documentKey: Document, fields: string[]): boolean {
  return fields.every(
    (f) =>
      Buffer.compare(
        BSON.serialize({ v: valueAt(version, f) ?? null }),
        BSON.serialize({
          v: (f in documentKey ? documentKey[f] : valueAt(documentKey, f)) ?? null,
        }),
      ) === 0,
  );
}

/** A filter matching exactly this version: its `_id` and its shard-key values. */
function exactKey(version: Document, fields: string[]): Document {
  const filter: Document = { _id: version._id };
  for (const f of fields) filter[f] = valueAt(version, f) ?? null;
  return filter;
}

/** Every step addressed by the same document key (byte for byte). */
function sameKeys(steps: WriteStep[]): boolean {
  const first = keyOf(steps[0]);
  if (!first) return true;
  const bytes = BSON.serialize(first);
  return steps.every((step) => {
    const key = keyOf(step);
    return !!key && Buffer.compare(BSON.serialize(key), bytes) === 0;
  });
}

/** A step addressed by more than `_id` (a sharded source's documentKey). */
function hasShardKeyFilter(step: WriteStep): boolean {
  const key = keyOf(step);
  return !!key && Object.keys(key).some((f) => f !== '_id');
}

/**
 * True when `next` (one update) may replace the last pending step (an update) instead of
 * following it: both address the same documentKey and have only `$set`/`$unset`, with the same
 * paths in each. Then "last, then next" and "next" alone leave every document state alike,
 * values and field order: a path that exists is written in place either way; one that does not
 * is created by `last` (new fields appended in operator order) and overwritten in place by
 * `next`, exactly where `next` alone creates it; the paths of one update never overlap
 * (translateUpdate checks), so `last` changes no intermediate of another path; a path `last`
 * could not apply (a shape conflict) `next` cannot apply either, and falls back to a lookup.
 * The counters, status fields and probes that make up most repeated updates collapse so, and a
 * document updated k times in a batch costs one round trip instead of k.
 */

function overwritesLastUpdate(pending: WriteStep[], next: WriteStep[]): boolean {
  const last = pending[pending.length - 1];
  const step = next[0];
  if (next.length !== 1 || last?.kind !== 'update' || step?.kind !== 'update') return false;
  if (!setUnsetOnly(last.update) || !setUnsetOnly(step.update)) return false;
  if (!samePaths(last.update.$set, step.update.$set)) return false;
  if (!samePaths(last.update.$unset, step.update.$unset)) return false;
  return Buffer.compare(BSON.serialize(last.filter), BSON.serialize(step.filter)) === 0;
}

function setUnsetOnly(update: Document): boolean {
  for (const op of Object.keys(update)) if (op !== '$set' && op !== '$unset') return false;
  return true;
}

function samePaths(a: Document | undefined, b: Document | undefined): boolean {
  const left = a ? Object.keys(a) : [];
  const right = b ? Object.keys(b) : [];
  if (left.length !== right.length) return false;
  const set = new Set(left);
  return right.every((path) => set.has(path));
}

/**
 * Updates that follow a pending full document (the replacement of an insert or replace event:
 * the source's exact state before them) are applied onto it in memory where the result is
 * exactly the destination's (applyUpdateInMemory: `$set`/`$unset` through embedded documents,
 * MongoDB's field order); the document is then written once, in its final state, instead of a
 * replace and one round of updates after it. Returns the steps still to append: from the first
 * update that cannot be reproduced on, in order (the pending replacement holds the state
 * before it). Only for a lone worker's lane (a per-shard worker's steps stay as they are).
 */
function updatesOntoPendingDocument(pending: WriteStep[], next: WriteStep[]): WriteStep[] {
  const last = pending[pending.length - 1];
  if (last?.kind !== 'replace') return next;
  let replacement = last.replacement;
  let k = 0;
  let filterBytes: Uint8Array | undefined;
  for (; k < next.length; k++) {
    const step = next[k];
    if (step.kind !== 'update') break;
    filterBytes ??= BSON.serialize(last.filter);
    if (Buffer.compare(BSON.serialize(step.filter), filterBytes) !== 0) break;
    const applied = applyUpdateInMemory(documentOf(replacement), step.update);
    if (!applied) break;
    replacement = applied;
  }
  if (k > 0) pending[pending.length - 1] = { ...last, replacement };
  return k === 0 ? next : next.slice(k);
}
