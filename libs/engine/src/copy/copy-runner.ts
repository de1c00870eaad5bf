import type { BuildIndexesMode } from '@sync/contracts';
import type { JobSession } from '../job/job-session';
import type { EngineLogger } from '../ports/engine-logger';
import type { SourceCluster } from '../ports/source-cluster';
import type { SyncTopology } from '../shards/topology';
import type { NamespaceRecord, PartitionRecord } from '../ports/job-store';
import { prepareCollection } from '../prepare/destination-preparer';
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
  type PartitioningOptions,
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
 * set written first, switched on by one job write), copies the partitions in parallel, then marks
 * the collections done in one job write. A crash anywhere leaves either the old set or the new one
 * in effect, never a mix; a restart copies again what is not marked done.
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
    const keys = new Set(pending.map((r) => r.key));
    await this.session.save((job) => {
      for (const ns of job.namespaces) if (keys.has(ns.key)) ns.copy = 'done';
    });
    return 'completed';
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

  private async partition(records: NamespaceRecord[], signal: AbortSignal): Promise<void> {
    if (records.length === 0) return;
    const { session } = this;
    const partitioning = { ...DEFAULT_PARTITIONING, ...this.options.partitioning };
    const sets = new Map<string, number>();
    const fresh: PartitionRecord[] = [];
    let next = session.job.nextPartitionSet;
    // Split points are sampled where the copy reads: a per-shard worker samples its own shard.
    const sampled =
      session.job.phase === 'prepared' ? await this.topology.copySource(session) : session.source;
    // Sets numbered in catalog order, planned several collections at a time (each plan is a
    // few reads: with many small collections the round trips, not the reads, are the cost).
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
    if (signal.aborted) return;
    for (const plan of planned) fresh.push(...plan);
    await session.store.addPartitions(fresh);
    await session.save((job) => {
      job.nextPartitionSet = next;
      for (const ns of job.namespaces) {
        const set = sets.get(ns.key);
        if (set !== undefined) ns.partitionSet = set;
      }
    });
    session.partitions = [...session.partitions, ...fresh];
    this.options.logger.info('partitions planned', {
      collections: records.length,
      partitions: fresh.length,
    });
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
      ...(share?.keep ? { keep: share.keep, keepFields: share.keepFields } : {}),
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
