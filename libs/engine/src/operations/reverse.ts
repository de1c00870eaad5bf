import type { Timestamp } from 'bson';
import { ApiError, type StartRequest } from '@sync/contracts';
import { keyOf, listingByName } from '../catalog/namespace-catalog';
import type { ClusterDirectory } from '../ports/cluster-directory';
import type { EngineLogger } from '../ports/engine-logger';
import type { JobRecord, NamespaceRecord } from '../ports/job-store';
import { planDestinationIndexes } from '../prepare/index-relaxation';

/** `reverse` needs a committed reversible job whose commit recorded the destination time. */
export function assertReversible(job: JobRecord | undefined, hasChangeApplication: boolean): void {
  if (!job?.request.reversible || !job.request.enableUserWriteBlocking) {
    throw new ApiError(
      'ReverseNotAllowed',
      'reverse needs a committed sync that was started with reversible: true (and enableUserWriteBlocking: true).',
    );
  }
  if (!hasChangeApplication) {
    throw new ApiError(
      'InvalidState',
      'reverse is not available: this build has no change event application.',
    );
  }
  if (!job.commit?.destinationTime) {
    throw new ApiError(
      'ReverseNotAllowed',
      'the commit did not record the destination time a reverse starts from.',
    );
  }
}

/**
 * Reverse, the swap: the old destination becomes the source from its commit-time cluster
 * time, without a copy. The new catalog is keyed by the NEW source's collection UUIDs (they
 * differ from the old source's), and the new destination's own unique / hidden / TTL indexes are
 * relaxed like before a copy — events applied in parallel may transiently collide on a unique
 * key (two documents swapping values) — and recorded to be restored at the next commit.
 *
 * Idempotent: the post-swap job is written to the new destination in one write and the old one
 * deleted after it; a crash before the write repeats the swap, after it finds `reversed` done.
 */
export async function reverseJob(
  old: JobRecord,
  deps: { clusters: ClusterDirectory; logger: EngineLogger; now: Date },
): Promise<JobRecord> {
  const { namespaces, listedAt } = await reversedCatalog(old, deps.clusters);
  const job = swappedJob(old, {
    t0: old.commit!.destinationTime!,
    listedUntil: listedAt,
    namespaces,
    now: deps.now,
  });
  await moveJob(old, job, deps);
  return job;
}

/**
 * The catalog of the reversed sync, read from the new source (the old destination), with the
 * new destination's unique / hidden / TTL indexes relaxed as before a copy.
 */
export async function reversedCatalog(
  old: JobRecord,
  clusters: ClusterDirectory,
): Promise<{ namespaces: NamespaceRecord[]; listedAt: Timestamp }> {
  const newSource = clusters.source(old.destination.name);
  const newDestination = clusters.destination(old.source.name);
  const namespaces: NamespaceRecord[] = [];
  const listedAt = await newSource.clusterTime();
  const byDb = new Map<string, NamespaceRecord[]>();
  for (const ns of old.namespaces) {
    const list = byDb.get(ns.database);
    if (list) list.push(ns);
    else byDb.set(ns.database, [ns]);
  }
  for (const [db, records] of byDb) {
    const infos = listingByName(await newSource.listCollections(db));
    for (const record of records) {
      const info = infos.get(record.collection);
      if (!info) continue;
      let relaxedIndexes: NamespaceRecord['relaxedIndexes'] = [];
      let indexes: NamespaceRecord['indexes'] = [];
      if (info.type === 'collection') {
        // Planned from the new SOURCE's indexes, so a repeated swap plans the same relaxation.
        indexes = await newSource.listIndexes(db, record.collection);
        const plan = planDestinationIndexes(indexes, 'beforeDataCopy');
        relaxedIndexes = plan.relaxed;
        const current = await newDestination.listIndexes(db, record.collection);
        for (const relaxed of plan.relaxed) {
          const spec = plan.specs.find((s) => s.name === relaxed.name)!;
          const now = current.find((i) => i.name === relaxed.name);
          if (now && sameSpec(now, spec)) continue;
          if (now) await newDestination.dropIndex(db, record.collection, relaxed.name);
          await newDestination.createIndexes(db, record.collection, [spec]);
        }
      }
      const { partitionSet: _set, ...rest } = record;
      namespaces.push({
        ...rest,
        key: keyOf(db, info),
        options: info.options,
        indexes,
        relaxedIndexes,
        listedAt,
        copy: info.type === 'collection' ? 'done' : 'none',
      });
    }
  }
  return { namespaces, listedAt };
}

/** The job with its roles swapped: RUNNING from `t0` on the new source, nothing to copy. */
export function swappedJob(
  old: JobRecord,
  plan: { t0: Timestamp; listedUntil: Timestamp; namespaces: NamespaceRecord[]; now: Date },
): JobRecord {
  const job: JobRecord = {
    ...old,
    request: swappedRequest(old.request),
    state: 'RUNNING',
    phase: 'copied',
    t0: plan.t0,
    listedUntil: plan.listedUntil,
    source: old.destination,
    destination: old.source,
    namespaces: plan.namespaces,
    reversals: (old.reversals ?? 0) + 1,
    updatedAt: plan.now,
  };
  delete job.commit;
  delete job.ddlApplied;
  delete job.failure;
  return job;
}

export function swappedRequest(request: StartRequest): StartRequest {
  return { ...request, source: request.destination, destination: request.source };
}

/** The swapped job written to the new destination in one write, then the old one deleted. */
export async function moveJob(
  old: JobRecord,
  job: JobRecord,
  deps: { clusters: ClusterDirectory; logger: EngineLogger },
): Promise<void> {
  await deps.clusters.jobStore(job.destination.name).saveJob(job);
  await deps.clusters.jobStore(old.destination.name).deleteJob();
  deps.logger.info('sync reversed', { source: job.source.name, destination: job.destination.name });
}

/** The relaxed spec is already in place (same options, compared as the server lists them). */
function sameSpec(current: Record<string, unknown>, wanted: Record<string, unknown>): boolean {
  const norm = (spec: Record<string, unknown>) => {
    const { v: _v, ns: _ns, ...rest } = spec;
    return JSON.stringify(
      Object.fromEntries(
        Object.entries(rest)
          .map(([k, v]): [string, unknown] => [k, plain(v)])
          .sort(([a], [b]) => (a < b ? -1 : 1)),
      ),
    );
  };
  return norm(current) === norm(wanted);
}

function plain(value: unknown): unknown {
  if (value && typeof value === 'object' && 'valueOf' in value) {
    const v = (value as { valueOf(): unknown }).valueOf();
    if (typeof v !== 'object') return v;
  }
  return value;
}
