import { ApiError } from '@sync/contracts';
import { moveJob, reversedCatalog, swappedJob, swappedRequest } from '../operations/reverse';
import type { Clock } from '../ports/clock';
import type { ClusterDirectory } from '../ports/cluster-directory';
import type { CoordinationRecord } from '../ports/coordination-store';
import type { EngineLogger } from '../ports/engine-logger';
import type { JobRecord } from '../ports/job-store';
import { sameChunkMap, type ShardingSnapshot } from './ownership';
import { pairShards, waitForCoordination } from './shard-sync';

export interface ShardReverseDeps {
  clusters: ClusterDirectory;
  logger: EngineLogger;
  clock: Clock;
  signal: AbortSignal;
  waiting?: (what: string | null) => void;
}

/**
 * The checks of a per-shard `reverse`, made by every worker before it changes anything (so a
 * refused reverse is refused by all of them alike): the new source (the old destination) has as
 * many shards as the sync has workers, and its chunk map is still the one recorded at the commit
 * — the reverse reads it shard by shard from the commit's time, so every write since then must
 * be on the shard that map names. Returns the new source's chunk map and the shard pairing.
 */
export async function checkShardReverse(
  old: JobRecord,
  clusters: ClusterDirectory,
): Promise<{ sharding: ShardingSnapshot; sources: Record<string, string> }> {
  const shard = old.shard!;
  const newSource = clusters.source(old.destination.name);
  const info = await newSource.describe();
  const sources = pairShards(shard.members, info.fingerprint.members, old.destination.name);
  const atCommit = old.commit?.destinationSharding;
  if (!atCommit) {
    throw new ApiError(
      'ReverseNotAllowed',
      `the commit of this per-shard sync did not record ${old.destination.name}'s chunk map, which a reverse reads by; it was committed by an older version.`,
    );
  }
  const sharding = await newSource.shardingSnapshot();
  if (!sameChunkMap(atCommit, sharding)) {
    throw new ApiError(
      'ChunkMigrationSinceCommit',
      `the chunk map of ${old.destination.name} changed since the commit (its balancer was started, or a chunk or primary moved); a per-shard reverse reads each of its shards from the commit's time and cannot follow a migration since. Nothing was changed.`,
    );
  }
  return { sharding, sources };
}

/**
 * Reverse of a per-shard sync. Each worker keeps its id and claim; from now on it reads one
 * shard of the old destination (`pairShards`) and writes to the old source.
 *
 * The lead worker plans once for all: it stops both balancers (recording the modes to restore
 * as the old sync found them), relaxes the new destination's indexes, and writes the new shared
 * record on the new destination — start time (its commit's destination time), catalog, the new
 * source's chunk map, the pairing — marked with the reverse's number. The others wait for that
 * record and adopt it. Every worker then writes its swapped job there and deletes the old one.
 *
 * Idempotent: a record already written for this reverse is adopted, not planned again, and the
 * job write comes last (a crash before it repeats the reverse from REVERSING).
 */
export async function reverseShardJob(old: JobRecord, deps: ShardReverseDeps): Promise<JobRecord> {
  const { clusters } = deps;
  const shard = old.shard!;
  const target = (old.reversals ?? 0) + 1;
  const store = clusters.coordination(old.source.name);
  const planned = (r: CoordinationRecord | null) =>
    r?.reversals === target && r.ready && r.coordinatorID === shard.coordinatorID ? r : undefined;
  let record = planned(await store.load());
  if (!record && shard.id === shard.coordinatorID) record = await planReverse(old, target, deps);
  record ??= await waitForCoordination(
    store,
    planned,
    deps,
    () => `reverse: waiting for the lead worker ${shard.coordinatorID} to plan it`,
  );
  const { plan } = record;
  const job = swappedJob(old, {
    t0: plan.t0,
    listedUntil: plan.listedUntil,
    namespaces: plan.namespaces,
    now: new Date(deps.clock.now()),
  });
  job.estimatedTotalBytes = plan.estimatedTotalBytes;
  // The pairing is this reverse's alone: a previous reverse's must not carry over (reversed
  // back, every worker reads the shard of its own id again).
  const { sources: _previous, ...assignment } = shard;
  job.shard = {
    ...assignment,
    claimsOn: shard.claimsOn ?? old.destination.name,
    sharding: plan.sharding,
    ...(plan.sources ? { sources: plan.sources } : {}),
  };
  await moveJob(old, job, deps);
  return job;
}

async function planReverse(
  old: JobRecord,
  target: number,
  deps: ShardReverseDeps,
): Promise<CoordinationRecord> {
  const { clusters, logger } = deps;
  const shard = old.shard!;
  const newSource = clusters.source(old.destination.name);
  const newDestination = clusters.destination(old.source.name);
  const { sharding, sources } = await checkShardReverse(old, clusters);
  const before = await clusters.coordination(old.destination.name).load();
  // Both stay stopped until the reversed sync commits (the old destination's was kept stopped
  // by the commit; the old source's was restored then).
  await newSource.setBalancer(false);
  await newDestination.setBalancer(false);
  const { namespaces, listedAt } = await reversedCatalog(old, clusters);
  await clusters.watermarks(old.source.name).clear();
  const identity = Object.entries(sources).every(([worker, source]) => worker === source);
  const record: CoordinationRecord = {
    _id: 'sync',
    coordinatorID: shard.coordinatorID,
    members: shard.members,
    request: swappedRequest(old.request),
    plan: {
      t0: old.commit!.destinationTime!,
      listedUntil: listedAt,
      estimatedTotalBytes: old.estimatedTotalBytes,
      namespaces,
      sharding,
      ...(identity ? {} : { sources }),
    },
    ready: true,
    // Restored when the reversed sync commits, as each cluster was before the first sync.
    balancers: {
      source: before?.balancers.destination ?? null,
      destination: before?.balancers.source ?? null,
    },
    commitSteps: {},
    reversals: target,
    createdAt: new Date(deps.clock.now()),
  };
  await clusters.coordination(old.source.name).create(record);
  logger.info('per-shard reverse planned', {
    source: old.destination.name,
    destination: old.source.name,
    pairs: sources,
  });
  return record;
}
