import { ApiError } from '@sync/contracts';
import { sameCluster } from '../ports/cluster-description';
import type { ClusterDirectory } from '../ports/cluster-directory';
import type { PersistedJob } from '../ports/job-store';

export interface RestoredJob {
  persisted: PersistedJob;
  hosts: { source: string; destination: string };
}

/**
 * Boot: finds this instance's persisted job on the launched clusters (after a reverse both may
 * hold one: the most recently updated wins) and checks it belongs to these clusters. Null: no
 * job (IDLE). Throws ApiError JobClusterMismatch for a job made for other clusters.
 */
export async function findPersistedJob(clusters: ClusterDirectory): Promise<RestoredJob | null> {
  const found: Array<{ name: string; persisted: PersistedJob }> = [];
  for (const name of clusters.names()) {
    const persisted = await clusters.jobStore(name).load();
    if (persisted) found.push({ name, persisted });
  }
  if (found.length === 0) return null;
  found.sort((a, b) => b.persisted.job.updatedAt.getTime() - a.persisted.job.updatedAt.getTime());
  const { name, persisted } = found[0]!;
  const { job } = persisted;
  if (job.destination.name !== name || !clusters.names().includes(job.source.name)) {
    throw mismatch(
      `the persisted sync (${job.source.name} → ${job.destination.name}) was found on cluster ${name}`,
    );
  }
  const [sourceInfo, destinationInfo] = await Promise.all([
    clusters.source(job.source.name).describe(),
    clusters.destination(job.destination.name).describe(),
  ]);
  if (!sameCluster(job.source.fingerprint, sourceInfo.fingerprint)) {
    throw mismatch(`cluster ${job.source.name} is not the source the sync was started with`);
  }
  if (!sameCluster(job.destination.fingerprint, destinationInfo.fingerprint)) {
    throw mismatch(
      `cluster ${job.destination.name} is not the destination the sync was started with`,
    );
  }
  return {
    persisted,
    hosts: { source: sourceInfo.displayHost, destination: destinationInfo.displayHost },
  };
}

function mismatch(detail: string): ApiError {
  return new ApiError(
    'JobClusterMismatch',
    `${detail}; refusing to resume it. Relaunch with the original clusters.`,
  );
}
