import type { Clock } from '../ports/clock';
import type { ClusterDirectory } from '../ports/cluster-directory';
import type { PersistedJob } from '../ports/job-store';
import { sourceShardOf } from '../shards/shard-sync';
import { JobSession } from './job-session';
import type { SyncJobOptions } from './sync-job-options';
import { SyncRunner, type RunnerHooks } from './sync-runner';

/** A session over a loaded job, with the ports of its current direction. */
export function openSession(
  persisted: PersistedJob,
  hosts: { source: string; destination: string },
  clusters: ClusterDirectory,
  clock: Clock,
): JobSession {
  const { job, partitions } = persisted;
  const session = new JobSession(
    job,
    partitions,
    clusters.source(job.source.name),
    clusters.destination(job.destination.name),
    clusters.jobStore(job.destination.name),
    hosts,
    clock,
    job.shard ? clusters.coordination(job.destination.name) : undefined,
    clusters.source(job.destination.name),
  );
  const shard = job.shard;
  if (shard) {
    session.watermarks = clusters.watermarks(job.destination.name);
    session.useShardSource(() => clusters.shardSource(job.source.name, sourceShardOf(shard)));
  }
  return session;
}

/** The background runner of a job, tuned from the engine's options. */
export function createRunner(
  options: SyncJobOptions,
  syncID: string,
  clock: Clock,
  hooks: RunnerHooks,
): SyncRunner {
  return new SyncRunner(
    {
      syncID,
      logger: options.logger,
      clock,
      copier: options.copier,
      partitioning: options.partitioning,
      changeApplication: options.phases?.changeApplication,
      maxTransientRetries: options.maxTransientRetries,
      retryBaseMs: options.retryBaseMs,
      inPlaceRetries: options.inPlaceRetries,
      inPlaceRetryBaseMs: options.inPlaceRetryBaseMs,
      historyGuard: options.historyGuard,
      balancerWatchMs: options.balancerWatchMs,
      verification: options.verification,
    },
    hooks,
  );
}
