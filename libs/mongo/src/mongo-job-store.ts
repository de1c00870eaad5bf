import {
  INTERNAL_DATABASE,
  inSlices,
  partitionVisibility,
  sharedDocument,
  sharedDocuments,
  type ClaimGuard,
  type JobRecord,
  type JobStore,
  type NamespaceRecord,
  type PartitionRecord,
  type PersistedJob,
} from '@sync/engine';
import { BSON, type Document } from 'bson';
import type { Collection, MongoClient } from 'mongodb';
import { CLAIM_EPOCH, Fencing, isDuplicateKey } from './claim-fencing';
import { EXACT_BSON, toNumber } from './exact-bson';
import { EncodedCatalog, recordFingerprint, WrittenCatalog } from './written-catalog';
import { writeErrorLabels } from './fault-labelling';

/** Records per bulk write of the store, and bulks in flight at once (independent writes only). */
const STORE_BULK = 1000;
const STORE_BULKS_IN_FLIGHT = 4;

/**
 * JobStore in `sync_reserved_for_internal_use` on the cluster that is the job's destination.
 * The job document (catalog included) and partition bounds are read with EXACT_BSON (a promoted
 * Int64 or Binary bound would move a partition edge, a promoted index option would change an
 * index); the plain counters are normalised to numbers and the start request is promoted as the
 * API decoded it. Every method is one write, or writes invisible until the next `saveJob`.
 *
 * Fencing (a per-shard worker's guard): every write checks the claim's lease first and carries
 * the claim epoch — `claimEpoch` in the job and partition documents, in the filter (≤ this
 * epoch) and in the document — so once a successor stamped its newer epoch, a write of this
 * worker matches nothing and throws ShardClaimLost.
 */
export class MongoJobStore implements JobStore {
  private readonly fencing: Fencing;
  /**
   * The catalog as this store last wrote or read it: namespace key → its record's digest, its
   * place in the catalog's order and the version it was written under. Null before the first
   * load or save (nothing known).
   */
  private written: WrittenCatalog | null = null;
  private catalogVersion = 0;
  /** A save wrote catalog records and has not switched to them (it failed, or is under way). */
  private unswitched = false;

  constructor(
    private readonly client: MongoClient,
    private readonly syncID: string,
    guard?: ClaimGuard,
  ) {
    this.fencing = new Fencing(guard);
  }

  private collection(name: 'jobs' | 'partitions' | 'catalog'): Collection<Document> {
    return this.client.db(INTERNAL_DATABASE).collection(name);
  }

  async load(): Promise<PersistedJob | null> {
    const raw = await this.collection('jobs').findOne({ _id: this.syncID as never }, EXACT_BSON);
    if (!raw) return null;
    const stored = raw.catalog as Document | undefined;
    const job = normaliseJob(raw);
    if (!stored) {
      // Written by an older version (the catalog inside the job document): the next save
      // writes it as records.
      this.written = null;
      this.catalogVersion = 0;
    } else {
      job.namespaces = await this.loadCatalog(toNumber(stored.version ?? 0));
    }
    const all = await this.collection('partitions')
      .find({ syncID: this.syncID }, EXACT_BSON)
      .sort({ key: 1, set: 1, index: 1 })
      .toArray();
    const partitions: PartitionRecord[] = [];
    const garbage: unknown[] = [];
    const visible = partitionVisibility(job);
    for (const doc of all) {
      const { [CLAIM_EPOCH]: _epoch, ...fields } = doc;
      const p = {
        ...fields,
        set: toNumber(doc.set),
        index: toNumber(doc.index),
        copiedBytes: toNumber(doc.copiedBytes),
        copiedDocuments: toNumber(doc.copiedDocuments),
      } as unknown as PartitionRecord;
      if (visible(p)) partitions.push(p);
      else garbage.push(doc._id);
    }
    if (garbage.length > 0) {
      const epoch = this.fencing.check();
      await this.collection('partitions').deleteMany({
        _id: { $in: garbage as never[] },
        ...this.fencing.filter(epoch),
      });
    }
    return { job, partitions };
  }

  /**
   * The catalog of version `version`: for each namespace key its newest record at or below it
   * (a tombstone: removed). Records above it were written by a save that crashed before its
   * switch, and older ones are superseded: both are deleted.
   */
  private async loadCatalog(version: number): Promise<NamespaceRecord[]> {
    const docs = await this.collection('catalog')
      .find({ syncID: this.syncID }, EXACT_BSON)
      .sort({ key: 1, version: -1 })
      .toArray();
    const current: Array<{ record: Document; pos: number; version: number }> = [];
    const garbage: unknown[] = [];
    const written = new WrittenCatalog();
    let last: string | null = null;
    for (const doc of docs) {
      const v = toNumber(doc.version);
      if (v > version || doc.key === last) {
        garbage.push(doc._id);
        continue;
      }
      last = doc.key as string;
      if (doc.deleted) continue;
      current.push({ record: doc.record as Document, pos: toNumber(doc.pos), version: v });
    }
    current.sort((a, b) => a.pos - b.pos);
    const namespaces = normaliseNamespaces(current.map((c) => c.record));
    namespaces.forEach((n, i) =>
      written.set(n.key, recordDigest(n), current[i]!.pos, current[i]!.version),
    );
    this.written = written;
    this.catalogVersion = version;
    if (garbage.length > 0) {
      const epoch = this.fencing.check();
      await this.collection('catalog').deleteMany({
        _id: { $in: garbage as never[] },
        ...this.fencing.filter(epoch),
      });
    }
    return namespaces;
  }

  /**
   * The job document without its catalog, and the catalog as records (`catalog` collection,
   * one document per namespace and version), so every job write costs the same whatever the
   * namespace count: only the records that changed since the last load or save are written,
   * under the next catalog version, and the job document's write switches to that version
   * (one atomic write: a crash before it leaves the previous catalog in force).
   */
  async saveJob(job: JobRecord, partitions?: PartitionRecord[]): Promise<void> {
    const epoch = this.fencing.check();
    const { namespaces, ...rest } = job;
    // The records may be the caller's live objects: each is encoded now, before any await, and
    // only the encodings of those that changed are kept until written (compact bytes, decoded
    // again 1,000 at a time, instead of a deep copy of every record held across the writes).
    const encoded = new EncodedCatalog(namespaces, this.written, (record) =>
      BSON.serialize(record as unknown as Document),
    );
    if (this.written === null) await this.learnCatalog(job._id, epoch);
    else if (this.unswitched) {
      // An earlier save wrote records and failed before its switch: they must not show through.
      await this.collection('catalog').deleteMany({
        syncID: this.syncID,
        version: { $gt: this.catalogVersion },
        ...this.fencing.filter(epoch),
      });
    }
    this.unswitched = true;
    const before = this.written!;
    const after = new WrittenCatalog();
    let nextPos = before.nextPos();
    const changed: Array<{ key: string; pos: number; at: number }> = [];
    for (let at = 0; at < encoded.length; at++) {
      const key = encoded.keys[at]!;
      const known = before.pos(key);
      const pos = known ?? nextPos++;
      // Equal if found so when encoded (against this same catalog: `written` is replaced only by
      // learnCatalog, and encoding without one found nothing equal) or to the catalog just learnt.
      const equal =
        known !== undefined && (!encoded.kept(at) || before.matches(key, encoded.digest(at)));
      if (!equal) {
        // Its bytes were kept for every record not known equal when the save began.
        changed.push({ key, pos, at });
        after.set(key, encoded.digest(at), pos, -1); // the new version, set below
      } else after.copyFrom(before, key);
    }
    const removed = [...before.keys()].filter((key) => !after.has(key));
    const version =
      changed.length > 0 || removed.length > 0 ? this.catalogVersion + 1 : this.catalogVersion;
    for (const c of changed) after.setVersion(c.key, version);
    // A changed record's encoding, or a removed one's tombstone.
    const writes: Array<{ key: string; pos?: number; at?: number }> = [
      ...changed,
      ...removed.map((key) => ({ key })),
    ];
    // Independent upserts (the switch below is what makes them visible): several bulks in
    // flight. At 100,000 namespaces, one after another, a first save took ~15 s. New partitions
    // the job names are written at the same time (as invisible until the switch).
    await allSettledOrThrow([
      partitions?.length ? this.addPartitions(partitions) : Promise.resolve(),
      this.writeRecords(writes, encoded, version, epoch),
    ]);
    await this.write('saving the job document', epoch, () =>
      this.collection('jobs').replaceOne(
        { _id: job._id as never, ...this.fencing.filter(epoch) },
        this.stamped({ ...(rest as unknown as Document), catalog: { version } }, epoch),
        { upsert: true },
      ),
    );
    this.written = after;
    this.catalogVersion = version;
    this.unswitched = false;
    // Switched: the records these replaced are no longer visible to anyone. Deleted by _id (the
    // key and the version each was written under): point deletes, whatever the catalog's size.
    // (One that fails is garbage the next load deletes.)
    const replaced = writes
      .map((w) => ({ key: w.key, old: before.version(w.key) }))
      .filter(({ old }) => old !== undefined)
      .map(({ key, old }) => `${this.syncID}|${key}|${old}`);
    await inSlices(replaced, STORE_BULK, STORE_BULKS_IN_FLIGHT, (slice) =>
      this.collection('catalog')
        .deleteMany({ _id: { $in: slice as never[] }, ...this.fencing.filter(epoch) })
        .then(
          () => undefined,
          () => undefined,
        ),
    );
  }

  /** A catalog version's changed records and tombstones, in slices (`insertElseReplace`). */
  private writeRecords(
    writes: Array<{ key: string; pos?: number; at?: number }>,
    encoded: EncodedCatalog,
    version: number,
    epoch: number | undefined,
  ): Promise<void> {
    return inSlices(writes, STORE_BULK, STORE_BULKS_IN_FLIGHT, (slice) =>
      this.insertElseReplace(
        'catalog',
        'writing the catalog',
        slice.map(({ key, pos, at }) => {
          const _id = `${this.syncID}|${key}|${version}`;
          const doc =
            at !== undefined
              ? { pos, record: BSON.deserialize(encoded.bytes(at)!, EXACT_BSON) }
              : { deleted: true };
          return this.stamped({ _id, syncID: this.syncID, key, version, ...doc }, epoch);
        }),
        epoch,
      ),
    );
  }

  /**
   * Documents that should not exist yet — a new catalog version's records, new partitions —
   * sent as unordered inserts: on the emulator an insert cost a third of an upsert's CPU (17
   * against 51 µs a record, 100,000 records in bulks of 1,000), and a first save of many
   * namespaces is ~200,000 of them. One that exists (left by a save that failed before its
   * switch, or stamped by a newer epoch) gets the fenced upsert, as every one did before: the
   * same outcome, a duplicate key on the fenced upsert meaning a newer epoch holds it. A slice
   * whose insert failed otherwise is written by fenced upserts whole.
   */
  private async insertElseReplace(
    name: 'catalog' | 'partitions',
    what: string,
    documents: Document[],
    epoch: number | undefined,
  ): Promise<void> {
    const collection = this.collection(name);
    let existing: Document[];
    try {
      await collection.insertMany(documents as never[], { ordered: false });
      return;
    } catch (error) {
      // Refused as duplicates only: those are replaced. Any other failure (a transient fault
      // on the insert, a write concern error): the whole slice goes the upsert way, as it did
      // before inserts were tried — an insert is only the faster way to the same documents.
      const duplicates = duplicatesOnly(error);
      existing = duplicates ? duplicates.map((index) => documents[index]!) : documents;
    }
    await this.write(what, epoch, () =>
      collection.bulkWrite(
        existing.map((document) => ({
          replaceOne: {
            filter: { _id: document._id as never, ...this.fencing.filter(epoch) },
            replacement: document,
            upsert: true,
          },
        })),
        { ordered: false },
      ),
    );
  }

  /** The job document alone, at the catalog version in force (see JobStore.saveJobState). */
  async saveJobState(job: Omit<JobRecord, 'namespaces'>): Promise<boolean> {
    if (this.written === null || this.unswitched) return false;
    const epoch = this.fencing.check();
    const version = this.catalogVersion;
    await this.write('saving the job document', epoch, () =>
      this.collection('jobs').replaceOne(
        { _id: job._id as never, ...this.fencing.filter(epoch) },
        this.stamped({ ...(job as unknown as Document), catalog: { version } }, epoch),
        { upsert: true },
      ),
    );
    return true;
  }

  /**
   * Before the first save of a job this store has not read: what the stored catalog is. With a
   * job document in the new format, its catalog is read (only the changes are written then);
   * with an older-format one there are no records yet; with none at all (a new start, a
   * reverse's move) no job refers to any record of this sync id, so all are deleted.
   */
  private async learnCatalog(id: string, epoch: number | undefined): Promise<void> {
    const existing = await this.collection('jobs').findOne(
      { _id: id as never },
      { projection: { catalog: 1 } },
    );
    if (existing?.catalog) {
      await this.loadCatalog(toNumber((existing.catalog as Document | undefined)?.version ?? 0));
      return;
    }
    if (!existing) {
      await this.collection('catalog').deleteMany({
        syncID: this.syncID,
        ...this.fencing.filter(epoch),
      });
    }
    this.written = new WrittenCatalog();
    this.catalogVersion = 0;
  }

  /** One fenced write: a duplicate key on the fenced upsert means a newer epoch holds it. */
  private async write(what: string, epoch: number | undefined, run: () => Promise<unknown>) {
    try {
      await run();
    } catch (error) {
      if (epoch !== undefined && isDuplicateKey(error)) throw this.fencing.refused(what);
      throw error;
    }
  }

  async addPartitions(partitions: PartitionRecord[]): Promise<void> {
    await inSlices(partitions, STORE_BULK, STORE_BULKS_IN_FLIGHT, async (slice) => {
      const epoch = this.fencing.check();
      await this.insertElseReplace(
        'partitions',
        'writing partitions',
        slice.map((p) => this.stamped(p as unknown as Document, epoch)),
        epoch,
      );
    });
  }

  async markPartitionDone(id: string, copiedBytes: number, copiedDocuments: number): Promise<void> {
    const epoch = this.fencing.check();
    const partitions = this.collection('partitions');
    const done = await partitions.updateOne(
      { _id: id as never, ...this.fencing.filter(epoch) },
      {
        $set: {
          status: 'done',
          copiedBytes,
          copiedDocuments,
          ...(epoch !== undefined ? { [CLAIM_EPOCH]: epoch } : {}),
        },
      },
    );
    if (done.matchedCount === 0)
      await this.fencing.confirm(partitions, { _id: id }, epoch, 'marking a partition copied');
  }

  /** One unordered bulk write for partitions finished together (the copy's group commit). */
  async markPartitionsDone(
    done: Array<{ id: string; bytes: number; documents: number }>,
  ): Promise<void> {
    if (done.length === 0) return;
    const epoch = this.fencing.check();
    const partitions = this.collection('partitions');
    const result = await partitions.bulkWrite(
      done.map((d) => ({
        updateOne: {
          filter: { _id: d.id as never, ...this.fencing.filter(epoch) },
          update: {
            $set: {
              status: 'done',
              copiedBytes: d.bytes,
              copiedDocuments: d.documents,
              ...(epoch !== undefined ? { [CLAIM_EPOCH]: epoch } : {}),
            },
          },
        },
      })),
      { ordered: false },
    );
    if (result.matchedCount < done.length) {
      for (const d of done)
        await this.fencing.confirm(partitions, { _id: d.id }, epoch, 'marking a partition copied');
    }
  }

  /** The job document first: without it the partitions are garbage whatever happens next. */
  async deleteJob(): Promise<void> {
    const epoch = this.fencing.check();
    const jobs = this.collection('jobs');
    const done = await jobs.deleteOne({ _id: this.syncID as never, ...this.fencing.filter(epoch) });
    if (done.deletedCount === 0)
      await this.fencing.confirm(jobs, { _id: this.syncID }, epoch, 'deleting the job');
    await this.collection('partitions').deleteMany({
      syncID: this.syncID,
      ...this.fencing.filter(epoch),
    });
    await this.collection('catalog').deleteMany({
      syncID: this.syncID,
      ...this.fencing.filter(epoch),
    });
    this.written = null;
    this.catalogVersion = 0;
  }

  /** The document as written: with the writer's claim epoch when it holds a claim. */
  private stamped(doc: Document, epoch: number | undefined): Document {
    return epoch === undefined ? doc : { ...doc, [CLAIM_EPOCH]: epoch };
  }
}

/**
 * A record's fingerprint (recordFingerprint), to tell a changed record from one already
 * written. A digest, not the bytes: kept for every namespace, the bytes cost ~700 bytes each
 * (small Buffers pin slices of Node's 8 KiB pool slabs); the digest 16, in WrittenCatalog.
 */
function recordDigest(record: NamespaceRecord): Buffer {
  return recordFingerprint(BSON.serialize(record as unknown as Document));
}

function normaliseJob(raw: Document): JobRecord {
  delete raw[CLAIM_EPOCH];
  delete raw.catalog;
  const job = raw as unknown as JobRecord;
  job.request = normaliseRequest(raw.request as Document);
  job.estimatedTotalBytes = toNumber(raw.estimatedTotalBytes);
  job.nextPartitionSet = toNumber(raw.nextPartitionSet);
  job.reversals = toNumber(raw.reversals);
  job.namespaces = normaliseNamespaces(raw.namespaces as Document[] | undefined);
  return job;
}

/** The request is API input (plain JSON numbers): decode it the way the API did. */
export function normaliseRequest(raw: Document): JobRecord['request'] {
  return BSON.deserialize(BSON.serialize(raw)) as JobRecord['request'];
}

/** Catalog records read with EXACT_BSON, their plain counters as numbers. */
export function normaliseNamespaces(raw: Document[] | undefined): NamespaceRecord[] {
  return (raw ?? []).map(
    (n) =>
      ({
        ...n,
        // Repeated across namespaces: one instance each (sharedDocument).
        options: sharedDocument((n.options as Document | undefined) ?? {}),
        indexes: sharedDocuments((n.indexes as Document[] | undefined) ?? []),
        estimatedBytes: toNumber(n.estimatedBytes),
        estimatedCount: toNumber(n.estimatedCount),
        ...(n.partitionSet !== undefined ? { partitionSet: toNumber(n.partitionSet) } : {}),
      }) as unknown as NamespaceRecord,
  );
}

/**
 * Waits for every write to settle, then throws the first failure: a caller that writes again
 * after a failure never races a write of its failed attempt (as `inSlices`).
 */
/**
 * The indexes of the documents an unordered insert refused as duplicates, when that is all it
 * refused (no other write error, no write concern error); else null.
 */
function duplicatesOnly(error: unknown): number[] | null {
  const e = error as {
    writeErrors?: unknown;
    writeConcernError?: unknown;
    result?: { getWriteConcernError?: () => unknown };
  };
  // The driver's bulk error reports a write concern error beside write errors in its result.
  if (!isDuplicateKey(error) || e.writeConcernError || e.result?.getWriteConcernError?.())
    return null;
  const list = (Array.isArray(e.writeErrors) ? e.writeErrors : [e.writeErrors]) as Array<{
    index?: unknown;
    code?: unknown;
  }>;
  const indexes: number[] = [];
  for (const w of list) {
    if (!w || typeof w.index !== 'number' || !writeErrorLabels(w.code).has('duplicateKey'))
      return null;
    indexes.push(w.index);
  }
  return indexes.length > 0 ? indexes : null;
}

async function allSettledOrThrow(writes: Array<Promise<unknown>>): Promise<void> {
  const settled = await Promise.allSettled(writes);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
}
