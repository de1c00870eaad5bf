import {
  ApiError,
  checkRequestRules,
  checkTopologyRules,
  UnsafeRegexError,
  type ClusterShape,
  type StartRequest,
} from '@sync/contracts';
import { Timestamp } from 'bson';
import { NamespaceFilter } from '../namespaces/namespace-filter';
import { assignShard, sameRequest } from '../shards/shard-sync';
import { sameChunkMap } from '../shards/ownership';
import { sharedSyncCommitted } from '../shards/shard-commit';
import type { ClusterDescription } from '../ports/cluster-description';
import type { ClusterDirectory } from '../ports/cluster-directory';
import type { CoordinationRecord, CoordinationStore } from '../ports/coordination-store';
import type { EngineLogger } from '../ports/engine-logger';
import type {
  CommandRecord,
  JobRecord,
  PartitionRecord,
  ShardAssignment,
} from '../ports/job-store';
import {
  DEFAULT_PARTITIONING,
  planReadless,
  switchOnSets,
  type PartitioningOptions,
} from '../copy/partition-planner';
import { planSync } from '../plan/planner';
import { planSharding } from '../prepare/sharding-plan';
import { assertDestinationEmpty, DestinationNotEmptyError } from '../prepare/destination-preparer';

export type TopologyCheck = (
  request: StartRequest,
  source: ClusterShape,
  destination: ClusterShape,
) => void;

/** The request rules that need no cluster: each has its own error name. */
export function validateRequest(
  request: StartRequest,
  clusters: ClusterDirectory,
): NamespaceFilter {
  checkRequestRules(request, clusters.names());
  try {
    return new NamespaceFilter(request.includeNamespaces, request.excludeNamespaces);
  } catch (error) {
    if (error instanceof UnsafeRegexError) throw new ApiError('InvalidRequest', error.message);
    throw error;
  }
}

export interface StartChecks {
  filter: NamespaceFilter;
  sourceInfo: ClusterDescription;
  destinationInfo: ClusterDescription;
  coordination: CoordinationStore;
  shard: ShardAssignment | undefined;
  /** The shared record of a per-shard sync already on the destination, if any. */
  shared: CoordinationRecord | null;
}

/**
 * Every check of `start` before its first write (request rules, both clusters described,
 * topology rules, this worker's shard id, a per-shard sync already on the destination). Reads
 * only: `startJob` runs it first, and a worker's dry run (`SyncJob.validateStart`) runs it alone.
 */
export async function checkStart(
  request: StartRequest,
  deps: { clusters: ClusterDirectory; checkTopology?: TopologyCheck; shardId?: string },
): Promise<StartChecks> {
  const { clusters } = deps;
  const filter = validateRequest(request, clusters);
  const [sourceInfo, destinationInfo] = await Promise.all([
    clusters.source(request.source).describe(),
    clusters.destination(request.destination).describe(),
  ]);
  (deps.checkTopology ?? checkTopologyRules)(
    request,
    shapeOf(sourceInfo),
    shapeOf(destinationInfo),
  );
  const coordination = clusters.coordination(request.destination);
  const shared = await coordination.load();
  const shard =
    deps.shardId === undefined
      ? undefined
      : assignShard(deps.shardId, {
          name: request.source,
          kind: sourceInfo.kind,
          shards: sourceInfo.fingerprint.members,
        });
  if (!shard && shared && !sharedSyncCommitted(shared)) {
    throw new ApiError(
      'PerShardSyncInProgress',
      `the destination ${request.destination} holds a sync run by one worker per source shard (${shared.members.join(', ')}); launch one worker per shard with --id.`,
    );
  }
  return { filter, sourceInfo, destinationInfo, coordination, shard, shared };
}

export interface StartedJob {
  job: JobRecord;
  hosts: { source: string; destination: string };
  /** The partitions its first write named (a lone worker's small and capped collections). */
  partitions: PartitionRecord[];
}

/**
 * `start`: validates against the clusters, plans (T0 first), checks the destination is empty
 * and persists the job in ONE write (the job and its catalog; a lone worker's small collections'
 * partitions are written just before it, invisible until it names them). Nothing is written
 * before every check passed, so a refused start changes nothing.
 */
export async function startJob(
  request: StartRequest,
  deps: {
    clusters: ClusterDirectory;
    syncID: string;
    logger: EngineLogger;
    now: Date;
    checkTopology?: TopologyCheck;
    /** The start command's id, remembered in the job's first write. */
    command?: CommandRecord | null;
    /** `--id`: this worker syncs one source shard of a per-shard sync. */
    shardId?: string;
    /** Per-shard: claims the shard for this process before anything is written. */
    claim?: (coordination: CoordinationStore) => Promise<void>;
    /** The most namespaces this worker's memory holds (SyncJobOptions.maxNamespaces). */
    maxNamespaces?: { limit: number; why: string };
    /** How the copy partitions collections (SyncJobOptions.partitioning); planning estimates
     * use its target. */
    partitioning?: Partial<PartitioningOptions>;
  },
): Promise<StartedJob> {
  const { clusters, logger } = deps;
  const { filter, sourceInfo, destinationInfo, coordination, shard, shared } = await checkStart(
    request,
    deps,
  );
  const source = clusters.source(request.source);
  const destination = clusters.destination(request.destination);
  if (shard) await deps.claim?.(coordination);
  const base = {
    request,
    state: 'RUNNING' as const,
    source: { name: request.source, fingerprint: sourceInfo.fingerprint },
    destination: { name: request.destination, fingerprint: destinationInfo.fingerprint },
    nextPartitionSet: 1,
    reversals: 0,
    ...(deps.command ? { commands: [deps.command] } : {}),
    createdAt: deps.now,
    updatedAt: deps.now,
  };
  const hosts = { source: sourceInfo.displayHost, destination: destinationInfo.displayHost };
  const store = clusters.jobStore(request.destination);

  if (shard && shard.id !== shard.coordinatorID) {
    // A follower adopts the coordinator's plan once the destination is prepared (phase joining).
    const job: JobRecord = {
      _id: deps.syncID,
      ...base,
      phase: 'joining',
      t0: new Timestamp({ t: 0, i: 0 }),
      listedUntil: new Timestamp({ t: 0, i: 0 }),
      estimatedTotalBytes: 0,
      namespaces: [],
      shard,
    };
    await store.saveJob(job);
    logger.info('sync started; waiting for the lead worker to prepare the destination', {
      shard: shard.id,
      coordinatorID: shard.coordinatorID,
    });
    return { job, hosts, partitions: [] };
  }

  // The lead worker stops both balancers before T0, so the chunk map it records stays true. A
  // redelivered start finds them stopped by its first delivery: the modes that first delivery
  // found are the ones to restore. A lone worker into a sharded destination stops the
  // destination's balancer too (migrations there only slow the sync down) and restores it
  // after commit.
  const previous =
    shard && shared && !sharedSyncCommitted(shared) && sameRequest(shared.request, request)
      ? shared.balancers
      : null;
  const balancers = shard
    ? (previous ?? {
        source: await source.balancerMode(),
        destination: await destination.balancerMode(),
      })
    : destinationInfo.kind === 'sharded'
      ? { source: null, destination: await destination.balancerMode() }
      : null;
  try {
    if (shard) {
      await source.setBalancer(false);
      await destination.setBalancer(false);
      shard.sharding = await source.shardingSnapshot();
    } else if (balancers) {
      await destination.setBalancer(false);
    }
    const plan = await planSync(source, filter, logger, {
      partitionTargetBytes: deps.partitioning?.targetBytes,
    });
    const cap = deps.maxNamespaces;
    if (cap && plan.namespaces.length > cap.limit) {
      throw new ApiError(
        'CatalogTooLarge',
        `the selection holds ${plan.namespaces.length} namespaces; this worker's memory holds at most ${cap.limit} (${cap.why}). Narrow the selection (includeNamespaces/excludeNamespaces) and sync the rest in another sync, or give the worker a larger heap (NODE_OPTIONS=--max-old-space-size=<MiB>).`,
      );
    }
    const sourceSharded =
      sourceInfo.kind === 'sharded' ? await source.shardedCollections() : new Map();
    plan.namespaces = planSharding(request, plan.namespaces, sourceSharded);
    if (shard && !sameChunkMap(shard.sharding!, await source.shardingSnapshot())) {
      throw new ApiError(
        'ChunkMigrationInProgress',
        `the chunk map of ${request.source} changed while the sync was being planned (a chunk migration or movePrimary in flight); wait for it to finish and start again.`,
      );
    }
    try {
      await assertDestinationEmpty(destination, plan.namespaces);
    } catch (error) {
      if (error instanceof DestinationNotEmptyError)
        throw new ApiError('DestinationNotEmpty', error.message);
      throw error;
    }
    const job: JobRecord = {
      _id: deps.syncID,
      ...base,
      phase: 'planned',
      t0: plan.t0,
      listedUntil: plan.listedUntil,
      estimatedTotalBytes: plan.estimatedTotalBytes,
      namespaces: plan.namespaces,
      ...(shard ? { shard } : {}),
      ...(!shard && balancers ? { balancers } : {}),
    };
    if (shard) {
      await clusters.watermarks(request.destination).clear();
      await coordination.create({
        _id: 'sync',
        coordinatorID: shard.coordinatorID,
        members: shard.members,
        request,
        plan: {
          t0: plan.t0,
          listedUntil: plan.listedUntil,
          estimatedTotalBytes: plan.estimatedTotalBytes,
          namespaces: plan.namespaces,
          sharding: shard.sharding!,
        },
        ready: false,
        balancers: { source: balancers!.source, destination: balancers!.destination },
        commitSteps: {},
        createdAt: deps.now,
      });
    }
    // A lone worker plans its small and capped collections' partitions now (one each, no read),
    // written beside the catalog's records and named by the job's first write: no later job
    // write rewrites every namespace record to switch them on. (A per-shard worker knows its
    // share only once its copy begins.) Unnamed, they are invisible: a start that fails here
    // leaves nothing in force.
    const ahead = shard
      ? null
      : await planReadless(source, job.namespaces, job.nextPartitionSet, deps.syncID, {
          ...DEFAULT_PARTITIONING,
          ...deps.partitioning,
        });
    if (ahead) {
      switchOnSets(job, ahead);
      logger.info('partitions planned', {
        collections: ahead.sets.size,
        partitions: ahead.partitions.length,
      });
    }
    await store.saveJob(job, ahead?.partitions);
    logger.info('sync started', { source: request.source, destination: request.destination });
    return { job, hosts, partitions: ahead?.partitions ?? [] };
  } catch (error) {
    if (balancers) await restoreBalancers(source, destination, balancers).catch(() => undefined);
    throw error;
  }
}

/** Turns the balancers back on where they were on before the sync. */
export async function restoreBalancers(
  source: { setBalancer(on: boolean): Promise<void> },
  destination: { setBalancer(on: boolean): Promise<void> },
  modes: { source: string | null; destination: string | null },
): Promise<void> {
  if (modes.source && modes.source !== 'off') await source.setBalancer(true);
  if (modes.destination && modes.destination !== 'off') await destination.setBalancer(true);
}

export function shapeOf(info: ClusterDescription): ClusterShape {
  return { kind: info.kind, shardCount: info.shardCount };
}
