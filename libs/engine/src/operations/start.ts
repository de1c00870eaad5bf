import {
  ApiError,
  checkRequestRules,
  checkTopologyRules,
  UnsafeRegexError,
  type ClusterShape,
  type StartRequest,
} from '@sync/contracts';
import { NamespaceFilter } from '../namespaces/namespace-filter';
import type { ClusterDescription } from '../ports/cluster-description';
import type { ClusterDirectory } from '../ports/cluster-directory';
import type { EngineLogger } from '../ports/engine-logger';
import type { CommandRecord, JobRecord } from '../ports/job-store';
import { planSync } from '../plan/planner';
import { planSharding } from '../prepare/sharding-plan';
import { assertDestinationEmpty, DestinationNotEmptyError } from '../prepare/destination-preparer';

export type TopologyCheck = (
  request: StartRequest,
  source: ClusterShape,
  destination: ClusterShape,
) => void;

/** The request rules that need no cluster (SEED-API §4.1): each has its own error name. */
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

export interface StartedJob {
  job: JobRecord;
  hosts: { source: string; destination: string };
}

/**
 * `start`: validates against the clusters, plans (T0 first), checks the destination is empty
 * and persists the job in ONE write (the job document holds its whole plan). Nothing is written
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
  },
): Promise<StartedJob> {
  const { clusters, logger } = deps;
  const filter = validateRequest(request, clusters);
  const source = clusters.source(request.source);
  const destination = clusters.destination(request.destination);
  const [sourceInfo, destinationInfo] = await Promise.all([
    source.describe(),
    destination.describe(),
  ]);
  (deps.checkTopology ?? checkTopologyRules)(
    request,
    shapeOf(sourceInfo),
    shapeOf(destinationInfo),
  );
  const plan = await planSync(source, filter, logger);
  const sourceSharded =
    sourceInfo.kind === 'sharded' ? await source.shardedCollections() : new Map();
  plan.namespaces = planSharding(request, plan.namespaces, sourceSharded);
  try {
    await assertDestinationEmpty(destination, plan.namespaces);
  } catch (error) {
    if (error instanceof DestinationNotEmptyError)
      throw new ApiError('DestinationNotEmpty', error.message);
    throw error;
  }
  const job: JobRecord = {
    _id: deps.syncID,
    request,
    state: 'RUNNING',
    phase: 'planned',
    t0: plan.t0,
    listedUntil: plan.listedUntil,
    estimatedTotalBytes: plan.estimatedTotalBytes,
    source: { name: request.source, fingerprint: sourceInfo.fingerprint },
    destination: { name: request.destination, fingerprint: destinationInfo.fingerprint },
    namespaces: plan.namespaces,
    nextPartitionSet: 1,
    reversals: 0,
    ...(deps.command ? { commands: [deps.command] } : {}),
    createdAt: deps.now,
    updatedAt: deps.now,
  };
  await clusters.jobStore(request.destination).saveJob(job);
  logger.info('sync started', { source: request.source, destination: request.destination });
  return {
    job,
    hosts: { source: sourceInfo.displayHost, destination: destinationInfo.displayHost },
  };
}

export function shapeOf(info: ClusterDescription): ClusterShape {
  return { kind: info.kind, shardCount: info.shardCount };
}
