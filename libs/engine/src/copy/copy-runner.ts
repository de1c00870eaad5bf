import type { BuildIndexesMode } from '@sync/contracts';
import type { JobSession } from '../job/job-session';
import type { EngineLogger } from '../ports/engine-logger';
import type { SourceCluster } from '../ports/source-cluster';
import type { SyncTopology } from '../shards/topology';
import type { NamespaceRecord, PartitionRecord } from '../ports/job-store';
import { createdByCopy, prepareCollection } from '../prepare/destination-preparer';
import {
  Copier,
  DEFAULT_COPIER,
  type CopierOptions,
  type CopyOutcome,
  type CopyTarget,
} from './copier';
import {
  DEFAULT_PARTITIONING,
  planPartitions,
  planReadless,
  switchOnSets,
  type PartitioningOptions,
  type PlannedSets,
} from './partition-planner';
import { runPool } from '../verify/verify-pass';

/** Collections whose partitions are planned at once. */
const PLANNING_CONCURRENCY = 8;

export interface CopyRunnerOptions {
  syncID: string;
  copier?: Partial<CopierOptions>;
  partitioning?: Partial<PartitioningOptions>;
  logger: EngineLogger;
}

/**
 * Copies the catalog's pending collections (the initial copy): partitions each one (a new partition
 * set written first, switched on by one job write), copies the partitions in parallel; the
 * caller's phase write then records the initial copy's collections done (a collection that
 * entered the sync later is marked done by this runner's own job write). A crash anywhere
 * leaves either the old set or the new one in effect, never a mix; a restart copies again what
 * is not marked done.
 */
export class CopyRunner {
  /** Current source names by collection key (moved by source DDL during the copy). */
  private readonly sourceNames = new Map<string, { db: string; coll: string }>();

  constructor(
    private readonly session: JobSession,
    /** How the work is divided between workers (which share of each collection is this one's). */
    private readonly topology: SyncTopology,
    private readonly options: CopyRunnerOptions,
  ) {}

  /** Copies every pending collection; 'aborted' when the signal fired first. */
  async copyPending(signal: AbortSignal): Promise<CopyOutcome> {
    const pending = this.session.catalog.pendingCopies();
    if (pending.length === 0) return 'completed';
    // The initial copy takes this worker's share of each collection (all of it for a lone
    // worker; a per-shard worker's shard's own chunks, read from that shard). A collection that
    // enters the sync later is copied whole, through the routers, by the worker whose shard
    // stream announced it.
    const initial = this.session.job.phase === 'prepared';
    const mine = initial
      ? pending.filter((r) => this.topology.initialCopyShare(this.session, r) !== null)
      : pending;
    await this.partition(
      mine.filter((r) => r.partitionSet === undefined),
      signal,
    );
    if (signal.aborted) return 'aborted';
    const partitions = mine.flatMap((r) => this.session.partitionsOf(r.key));
    const source = initial ? await this.topology.copySource(this.session) : this.session.source;
    const outcome = await this.copier(source).run(partitions, signal);
    if (outcome === 'aborted' || signal.aborted) return 'aborted';
    await this.createUnwritten(mine, signal);
    if (signal.aborted) return 'aborted';
    // The initial copy's collections are recorded copied by the job's phase (`copied`: one
    // write however many there are); one that entered the sync later by its own record.
    const keys = new Set(pending.filter((r) => r.copy === 'pending').map((r) => r.key));
    if (keys.size > 0) {
      await this.session.save((job) => {
        for (const ns of job.namespaces) if (keys.has(ns.key)) ns.copy = 'done';
      });
    }
    return 'completed';
  }

  /**
   * The collections left to the copy's first insert (createdByCopy) that it wrote nothing to:
   * created now, before they count as copied (a restart creates them again; creating an existing
   * collection changes nothing).
   */
  private async createUnwritten(records: NamespaceRecord[], signal: AbortSignal): Promise<void> {
    const buildIndexes = this.session.job.request.buildIndexes;
    const unwritten = records.filter(
      (r) =>
        createdByCopy(r, buildIndexes) &&
        this.session.partitionsOf(r.key).every((p) => p.copiedDocuments === 0),
    );
    await runPool(
      unwritten.map(
        (r) => () => this.session.destination.createCollection(r.database, r.collection, {}),
      ),
      PLANNING_CONCURRENCY,
      signal,
    );
  }

  /**
   * A collection that entered the sync while change events are applied: created on the
   * destination with its options and relaxed indexes, then copied like the initial copy.
   */
  async copyIn(
    record: NamespaceRecord,
    buildIndexes: BuildIndexesMode,
    signal: AbortSignal,
  ): Promise<CopyOutcome> {
    const prepared = await prepareCollection(
      this.session.destination,
      buildIndexes,
      record,
      this.options.logger,
    );
    await this.session.save(() => {
      const current = this.session.catalog.byKey(record.key);
      if (current) current.relaxedIndexes = prepared.relaxedIndexes;
    });
    this.options.logger.info('collection entered the sync; copying it', {
      namespace: `${record.database}.${record.collection}`,
    });
    return this.copyPending(signal);
  }

  /**
   * The partitions of the collections whose plan reads nothing (small or capped ones: one
   * partition each) that have no set yet, written now and switched on by the job write that
   * records the destination's preparation (`switchOnSets`). A lone worker's start plans them
   * already (its first job write names them); this covers a job planned without them. Null
   * when there is nothing to plan.
   */
  async planAhead(records: NamespaceRecord[]): Promise<PlannedSets | null> {
    const { session } = this;
    const planned = await planReadless(
      session.source,
      records,
      session.job.nextPartitionSet,
      this.options.syncID,
      { ...DEFAULT_PARTITIONING, ...this.options.partitioning },
    );
    if (planned) await session.store.addPartitions(planned.partitions);
    return planned;
  }

  /** After that write: the session sees the partitions. */
  adopt(planned: PlannedSets): void {
    this.session.partitions = [...this.session.partitions, ...planned.partitions];
    this.options.logger.info('partitions planned', {
      collections: planned.sets.size,
      partitions: planned.partitions.length,
    });
  }

  private async partition(records: NamespaceRecord[], signal: AbortSignal): Promise<void> {
    const { session } = this;
    // Split points are sampled where the copy reads: a per-shard worker samples its own shard.
    const sampled =
      session.job.phase === 'prepared' && records.length > 0
        ? await this.topology.copySource(session)
        : session.source;
    const planned = await this.planSets(records, sampled, signal);
    if (!planned) return;
    await session.save((job) => switchOnSets(job, planned));
    this.adopt(planned);
  }

  /**
   * Plans `records`' partitions as new sets, numbered in catalog order from the job's next set,
   * and writes them (invisible until a job write names their sets). Null: nothing planned.
   */
  private async planSets(
    records: NamespaceRecord[],
    sampled: SourceCluster,
    signal: AbortSignal,
  ): Promise<PlannedSets | null> {
    if (records.length === 0) return null;
    const { session } = this;
    const partitioning = { ...DEFAULT_PARTITIONING, ...this.options.partitioning };
    const sets = new Map<string, number>();
    let next = session.job.nextPartitionSet;
    // Planned several collections at a time (each plan is a few reads: with many small
    // collections the round trips, not the reads, are the cost).
    const planned: PartitionRecord[][] = [];
    for (const record of records) sets.set(record.key, next++);
    await runPool(
      records.map((record, i) => async () => {
        planned[i] = await planPartitions(
          sampled,
          record,
          {
            syncID: this.options.syncID,
            set: sets.get(record.key)!,
            sourceName: this.sourceNames.get(record.key),
          },
          partitioning,
        );
      }),
      PLANNING_CONCURRENCY,
      signal,
    );
    if (signal.aborted) return null;
    const partitions: PartitionRecord[] = [];
    for (const plan of planned) partitions.push(...plan);
    await session.store.addPartitions(partitions);
    return { sets, next, partitions };
  }

  private copier(source: SourceCluster): Copier {
    const { session } = this;
    return new Copier(
      source,
      session.destination,
      session.store,
      session.tally,
      this.options.logger,
      {
        resolve: (p) => this.target(p),
        relocate: (p) => this.relocate(p),
        done: (p) => session.partitionChanged(p.key),
      },
      { ...DEFAULT_COPIER, ...this.options.copier },
      session.job.t0,
    );
  }

  private target(partition: PartitionRecord): CopyTarget {
    const record = this.session.catalog.byKey(partition.key);
    if (!record) throw new Error(`partition ${partition._id} has no namespace record`);
    const destination = { db: record.database, coll: record.collection };
    const share =
      this.session.job.phase === 'prepared'
        ? this.topology.initialCopyShare(this.session, record)
        : null;
    const parts = Math.max(1, this.session.partitionsOf(record.key).length);
    return {
      source: this.sourceNames.get(record.key) ?? destination,
      destination,
      estimatedBytes: record.estimatedBytes / parts,
      ...(isUuid(record.key) ? { uuid: record.key } : {}),
      ...(share?.keep
        ? { keep: share.keep, keepFields: share.keepFields }
        : record.type === 'collection'
          ? { whole: true }
          : {}),
    };
  }

  /** The collection's name on the source now, found by UUID (a rename keeps it). */
  private async relocate(partition: PartitionRecord): Promise<CopyTarget | null> {
    const record = this.session.catalog.byKey(partition.key);
    if (!record || !isUuid(record.key)) return null;
    const db = this.sourceNames.get(record.key)?.db ?? record.database;
    const info = (await this.session.source.listCollections(db)).find((c) => c.uuid === record.key);
    if (!info) return null;
    this.sourceNames.set(record.key, { db, coll: info.name });
    return this.target(partition);
  }
}

function isUuid(key: string): boolean {
  return /^[0-9a-f]{32}$/.test(key);
}
