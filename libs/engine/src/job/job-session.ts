import { copyOf, NamespaceCatalog } from '../catalog/namespace-catalog';
import { CatalogWatch, type CatalogChanges } from './catalog-watch';
import { isCopied } from '../progress/namespace-detail';
import { CopyTally } from '../copy/copy-tally';
import { retryInPlace, type InPlaceRetryOptions } from '../faults/retry-in-place';
import type { Clock } from '../ports/clock';
import type { DestinationCluster } from '../ports/destination-cluster';
import type { JobRecord, JobStore, NamespaceRecord, PartitionRecord } from '../ports/job-store';
import type { SourceCluster } from '../ports/source-cluster';
import type { CoordinationStore } from '../ports/coordination-store';
import { ShardOwnership } from '../shards/ownership';
import { sourceShardOf } from '../shards/shard-sync';
import type { WatermarkStore } from '../ports/watermark-store';

/**
 * A deep copy of plain objects, arrays and dates; BSON values (Timestamp, Binary, Int32...) are
 * immutable and shared.
 */
export function deepSnapshot<T>(value: T): T {
  if (Array.isArray(value)) return value.map(deepSnapshot) as T;
  if (value instanceof Date) return new Date(value.getTime()) as T;
  if (value && typeof value === 'object') {
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = deepSnapshot(v);
    return out as T;
  }
  return value;
}

const NO_PARTITIONS: readonly PartitionRecord[] = Object.freeze([]);

function doneBytes(partitions: PartitionRecord[]): number {
  return partitions.filter((p) => p.status === 'done').reduce((sum, p) => sum + p.copiedBytes, 0);
}

/**
 * One loaded job and the ports of its current direction: what every operation and background
 * phase works on. The job document is the unit of atomicity — `save` applies a mutation and
 * writes the WHOLE document in one write, serialised with every other save, from a snapshot
 * taken when the mutation ran (so a save queued behind another can never persist half of a
 * later mutation). After any failed write the session is thrown away and reloaded from the
 * store: memory never runs ahead of what a restart would find.
 */
export class JobSession {
  readonly catalog: NamespaceCatalog;
  tally: CopyTally;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private record: JobRecord,
    /** Visible partitions (of the sets the catalog names). */
    public partitions: PartitionRecord[],
    readonly source: SourceCluster,
    readonly destination: DestinationCluster,
    readonly store: JobStore,
    readonly hosts: { source: string; destination: string },
    private readonly clock: Clock,
    /** The shared record of a per-shard sync (present when the job has `shard`). */
    readonly coordination?: CoordinationStore,
    /** The destination seen through the source port: what the embedded verifier reads. */
    readonly destinationReader?: SourceCluster,
  ) {
    this.catalog = new NamespaceCatalog(() => this.record);
    this.tally = new CopyTally(doneBytes(partitions));
  }

  /**
   * Replaces the in-memory job with what the store holds (after a failed write or a retry).
   * The session object stays the same, so everyone holding it (a running commit, the runner)
   * keeps writing through ONE serialised session — two sessions over one job document would
   * overwrite each other's changes.
   */
  async reload(): Promise<void> {
    await this.writing;
    const persisted = await this.store.load();
    if (!persisted) throw new Error('the job document is gone from the destination');
    this.record = persisted.job;
    this.partitions = persisted.partitions;
    this.tally = new CopyTally(doneBytes(persisted.partitions));
    this.catalogRevision += 1;
  }

  /**
   * Bumped by every save that may change namespace records (all but `catalogUnchanged` ones)
   * and by a reload: what a catalog watch compares.
   */
  private catalogRevision = 0;
  private readonly watches = new Set<CatalogWatch>();

  /** A follower of the catalog that visits only what changed (see CatalogWatch). */
  watchCatalog(): CatalogWatch {
    const watch = new CatalogWatch();
    this.watches.add(watch);
    return watch;
  }

  unwatchCatalog(watch: CatalogWatch): void {
    this.watches.delete(watch);
  }

  /** What changed for `watch` since it last looked. */
  changesFor(watch: CatalogWatch): CatalogChanges {
    return watch.take(this.catalogBasis());
  }

  /** Something changed for `watch` since it last looked (without looking). */
  catalogChangedFor(watch: CatalogWatch): boolean {
    return watch.changedSince(this.catalogBasis());
  }

  private catalogBasis() {
    return {
      revision: this.catalogRevision,
      records: this.record.namespaces,
      partitions: this.partitions,
      phase: this.record.phase,
    };
  }

  /** The copier marked a partition of namespace `key` done (in memory, once written). */
  partitionChanged(key: string): void {
    for (const watch of this.watches) watch.note(key);
  }

  get job(): JobRecord {
    return this.record;
  }

  private owners: { snapshot: unknown; ownership: ShardOwnership } | null = null;

  /** Per-shard sync: the cluster-time watermarks every worker publishes (shards/watermark-gate). */
  watermarks?: WatermarkStore;
  private shard?: { resolve: () => Promise<SourceCluster>; source?: Promise<SourceCluster> };

  /** Per-shard sync: how to reach this worker's own shard directly. */
  useShardSource(resolve: () => Promise<SourceCluster>): void {
    this.shard = { resolve };
  }

  /**
   * Where this worker reads documents and change events: its own shard for a per-shard worker
   * (connected directly, so the source is read once in total), the whole source otherwise.
   */
  readSource(): Promise<SourceCluster> {
    const shard = this.shard;
    if (!shard) return Promise.resolve(this.source);
    shard.source ??= shard.resolve().catch((error: unknown) => {
      shard.source = undefined; // a failed connection is tried again by the next run
      throw error;
    });
    return shard.source;
  }

  /**
   * Which source shard owns a document, from the chunk map taken at start (a per-shard worker
   * copies and applies only its own shard's documents). Null for a lone instance.
   */
  get ownership(): ShardOwnership | null {
    const shard = this.record.shard;
    if (!shard?.sharding) return null;
    if (this.owners?.snapshot !== shard.sharding) {
      this.owners = {
        snapshot: shard.sharding,
        ownership: new ShardOwnership(shard.sharding, sourceShardOf(shard, shard.coordinatorID)),
      };
    }
    return this.owners.ownership;
  }

  /**
   * How a failed job write is retried in place (the runner sets its counted policy; default:
   * 5 tries more on transient failures). The write replaces the whole document with the same
   * snapshot, so sending it again is harmless.
   */
  retry: InPlaceRetryOptions = {};

  /**
   * Mutates the job and persists it in one document write (serialised with other saves).
   * `catalogUnchanged`: the mutation leaves every namespace record as it is (a commit step's
   * state): only the job document is written, at a cost that does not grow with the catalog.
   */
  save(
    mutate: (job: JobRecord) => void = () => undefined,
    options: { catalogUnchanged?: boolean } = {},
  ): Promise<void> {
    const run = this.writing.then(async () => {
      const namespaces = this.record.namespaces;
      mutate(this.record);
      if (!options.catalogUnchanged) this.catalogRevision += 1;
      this.record.updatedAt = new Date(this.clock.now());
      if (
        options.catalogUnchanged &&
        this.record.namespaces === namespaces &&
        this.store.saveJobState
      ) {
        const { namespaces: _catalog, ...state } = this.record;
        const snapshot = deepSnapshot(state);
        const saved = await retryInPlace('job write', () => this.store.saveJobState!(snapshot), {
          clock: this.clock,
          ...this.retry,
        });
        if (saved) return;
      }
      // The job's own fields copied; the namespace records passed as they are: the store
      // encodes them before its first await (JobStore.saveJob), so a deep copy of 100,000
      // records is not held across the write.
      const { namespaces: records, ...state } = this.record;
      const snapshot: JobRecord = { ...deepSnapshot(state), namespaces: [...records] };
      await retryInPlace('job write', () => this.store.saveJob(snapshot), {
        clock: this.clock,
        ...this.retry,
      });
    });
    this.writing = run.catch(() => undefined);
    return run;
  }

  /**
   * How many namespaces are copied (`isCopied`: marked copied, or every partition of their set
   * done), for progress. Every progress request and metrics scrape asks: the namespaces not
   * copied yet are kept, and only those whose partitions finished since are looked at again
   * (a walk of every namespace only after a catalog change).
   */
  copiedNamespaces(): number {
    this.copiedWatch ??= this.watchCatalog();
    const changes = this.changesFor(this.copiedWatch);
    const { phase, namespaces } = this.record;
    const copied = (n: NamespaceRecord) => {
      const copy = copyOf(n, phase);
      return isCopied(copy, copy === 'pending' ? this.partitionsOf(n.key) : NO_PARTITIONS);
    };
    if (changes.full) {
      this.notCopied = new Set();
      for (const n of namespaces) if (!copied(n)) this.notCopied.add(n.key);
    } else {
      for (const key of changes.keys) {
        const n = this.notCopied.has(key) ? this.catalog.byKey(key) : undefined;
        if (n && copied(n)) this.notCopied.delete(key);
      }
    }
    return namespaces.length - this.notCopied.size;
  }

  /**
   * Some collection's copy has not finished (`NamespaceCatalog.pendingCopies`). Copy states
   * change only in catalog writes (or with the phase): the answer is kept until the next one
   * (canCommit asks at every progress request, and the list is a walk of every namespace).
   */
  copiesPending(): boolean {
    this.pendingWatch ??= this.watchCatalog();
    if (this.changesFor(this.pendingWatch).full)
      this.pendingCopies = this.catalog.pendingCopies().length > 0;
    return this.pendingCopies;
  }

  private pendingWatch: CatalogWatch | null = null;
  /** `copiesPending` as of its watch's last full look. */
  private pendingCopies = false;

  private copiedWatch: CatalogWatch | null = null;
  /** Keys of the namespaces not copied as of the copied watch's last look. */
  private notCopied = new Set<string>();

  /** Partitions of one namespace record's current set. */
  partitionsOf(key: string): readonly PartitionRecord[] {
    const ns = this.catalog.byKey(key);
    if (!ns || ns.partitionSet === undefined) return NO_PARTITIONS;
    // Indexed by namespace key (rebuilt when the list is replaced or grows): asked for every
    // namespace twice a second by the verifier, a scan of all partitions each time was
    // quadratic — at 20,000 namespaces it held the event loop for tens of seconds.
    const all = this.partitions;
    if (this.partitionIndex?.of !== all || this.partitionIndex.length !== all.length) {
      const byKey = new Map<string, PartitionRecord[]>();
      for (const p of all) {
        const list = byKey.get(p.key);
        if (list) list.push(p);
        else byKey.set(p.key, [p]);
      }
      this.partitionIndex = { of: all, length: all.length, byKey };
    }
    // The indexed list itself when it holds only the current set (no copy per call: the verifier
    // and progress ask for every namespace several times a second).
    const list = this.partitionIndex.byKey.get(key);
    if (!list) return NO_PARTITIONS;
    const set = ns.partitionSet;
    return list.every((p) => p.set === set) ? list : list.filter((p) => p.set === set);
  }

  private partitionIndex: {
    of: PartitionRecord[];
    length: number;
    byKey: Map<string, PartitionRecord[]>;
  } | null = null;
}
