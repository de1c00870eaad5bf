import type { Document } from 'bson';
import { ApiError } from '@sync/contracts';
import type { ChangeEvent } from '../apply/change-event';
import type { CatalogEventRouter } from '../catalog/event-router';
import { deepSnapshot, type JobSession } from '../job/job-session';
import type { Clock } from '../ports/clock';
import type { EngineLogger } from '../ports/engine-logger';
import type { NamespaceRecord } from '../ports/job-store';
import type { SourceCluster } from '../ports/source-cluster';
import { sameRequest, sourceShardOf, waitForCoordination } from './shard-sync';
import { WatermarkGate, justBefore } from './watermark-gate';

/** What a worker's initial copy takes of one collection. */
export interface CopyShare {
  /** Keeps only this worker's documents (absent: all). */
  keep?: (doc: Document) => boolean;
  /** The top-level fields `keep` reads (a raw copy decodes only those). */
  keepFields?: string[];
}

/**
 * How the work of one sync is divided, chosen once when a job's runner starts: one worker for
 * the whole source (`LoneTopology`), or one worker per source shard (`PerShardTopology`). The
 * runner, the copy and change application ask it; nothing else looks at `job.shard`.
 */
export interface SyncTopology {
  /**
   * Before the copy: a per-shard follower waits for the lead worker's plan and adopts it; the
   * lead publishes it once the destination is prepared. False: stopped while waiting.
   */
  beforeCopy(session: JobSession, signal: AbortSignal): Promise<boolean>;
  /** This worker's share of a collection's initial copy, or null: another worker copies it. */
  initialCopyShare(session: JobSession, record: NamespaceRecord): CopyShare | null;
  /** Where the initial copy reads documents. */
  copySource(session: JobSession): Promise<SourceCluster>;
  /** The embedded verifier's live pass runs on this worker. */
  readonly verifiesLive: boolean;
  /** The cluster-time order across workers while change events are applied (null: none). */
  orderChanges(
    session: JobSession,
    router: CatalogEventRouter,
    signal: AbortSignal,
  ): Promise<WatermarkGate | null>;
}

export interface TopologyDeps {
  clock: Clock;
  logger: EngineLogger;
  /** Told what the worker waits for on the others (progress `waitingFor`). */
  waiting(what: string | null): void;
}

/** The worker syncs the whole source: reads everything, through the routers of a sharded one. */
export class LoneTopology implements SyncTopology {
  readonly verifiesLive = true;

  async beforeCopy(): Promise<boolean> {
    return true;
  }

  initialCopyShare(): CopyShare {
    return {};
  }

  async copySource(session: JobSession): Promise<SourceCluster> {
    return session.source;
  }

  async orderChanges(): Promise<null> {
    return null;
  }
}

/**
 * One worker per source shard (`--id`). The lead worker (the smallest shard id) plans and
 * prepares the destination; the others adopt its plan. Each reads only its own shard, directly:
 * the chunks its shard owned at T0 and the unsharded collections of the databases its shard is
 * primary of; its shard's own change stream, ordered with the others' by cluster-time
 * watermarks (watermark-gate.ts). Each runs the embedded verifier's live pass over its own share
 * (the documents it copies and applies: verify/shared-view.ts), and checks it again at commit.
 */
export class PerShardTopology implements SyncTopology {
  readonly verifiesLive = true;

  constructor(private readonly deps: TopologyDeps) {}

  private static assignment(session: JobSession) {
    const shard = session.job.shard;
    if (!shard) throw new Error('a per-shard topology for a job without a shard assignment');
    return shard;
  }

  private static leads(session: JobSession): boolean {
    const shard = PerShardTopology.assignment(session);
    return shard.id === shard.coordinatorID;
  }

  async beforeCopy(session: JobSession, signal: AbortSignal): Promise<boolean> {
    if (session.job.phase === 'joining') return this.join(session, signal);
    if (PerShardTopology.leads(session) && session.job.phase !== 'planned') {
      await this.announceReady(session);
    }
    return true;
  }

  initialCopyShare(session: JobSession, record: NamespaceRecord): CopyShare | null {
    const ownership = session.ownership;
    const me = sourceShardOf(PerShardTopology.assignment(session));
    if (!ownership) return {};
    const sharded = ownership.sharded(record.key);
    if (!sharded) return ownership.primaryOf(record.database) === me ? {} : null;
    if (!sharded.chunks.some((c) => c.shard === me)) return null;
    return {
      // Orphans (documents outside the shard's T0 chunks) are left out, as mongos would.
      keep: (doc) => ownership.ownerOf(record.database, record.key, doc) === me,
      keepFields: [...new Set(Object.keys(sharded.key).map((path) => path.split('.')[0]!))],
    };
  }

  copySource(session: JobSession): Promise<SourceCluster> {
    return session.readSource();
  }

  async orderChanges(
    session: JobSession,
    router: CatalogEventRouter,
    signal: AbortSignal,
  ): Promise<WatermarkGate | null> {
    const shard = PerShardTopology.assignment(session);
    if (!session.watermarks) throw new Error('a per-shard job without its watermark store');
    const shardSource = await session.readSource();
    const gate = new WatermarkGate({
      store: session.watermarks,
      me: shard.id,
      owner: sourceShardOf(shard),
      members: shard.members,
      clock: this.deps.clock,
      logger: this.deps.logger,
      start: justBefore(session.job.t0),
      recorded: () => session.job.ddlApplied,
      recordForeign: (ddl) =>
        router.recordForeignDdl(ddl.event as ChangeEvent, {
          token: { _data: ddl.token },
          clusterTime: ddl.clusterTime,
        }),
      advance: async () => {
        await shardSource.writeNoop('cluster-sync: an idle shard stream moved on');
      },
      waiting: this.deps.waiting,
      ownership: () => session.ownership,
    });
    gate.start(signal);
    return gate;
  }

  /**
   * A follower: waits until the lead worker has prepared the destination, then adopts its plan
   * (one T0, one listing and one chunk map for every worker) in one write.
   */
  private async join(session: JobSession, signal: AbortSignal): Promise<boolean> {
    const shard = PerShardTopology.assignment(session);
    const store = session.coordination!;
    const shared = await waitForCoordination(
      store,
      (r) => (r?.ready && r.coordinatorID === shard.coordinatorID ? r : undefined),
      { clock: this.deps.clock, signal, waiting: this.deps.waiting },
      () =>
        `waiting for the lead worker ${shard.coordinatorID} to start and prepare the destination`,
    ).catch((error: unknown) => {
      if (signal.aborted) return null;
      throw error;
    });
    if (!shared) return false;
    if (!sameRequest(shared.request, session.job.request)) {
      throw new ApiError(
        'SyncRequestMismatch',
        `the start request given to ${shard.id} differs from the one the lead worker ${shard.coordinatorID} was given; send every worker the identical request.`,
      );
    }
    const { plan } = shared;
    await session.save((j) => {
      j.t0 = plan.t0;
      j.listedUntil = plan.listedUntil;
      j.estimatedTotalBytes = plan.estimatedTotalBytes;
      j.namespaces = deepSnapshot(plan.namespaces).map((n) => {
        const { partitionSet: _unused, ...rest } = n;
        return { ...rest, copy: n.copy === 'none' ? 'none' : 'initial' };
      });
      j.shard = { ...j.shard!, sharding: plan.sharding };
      j.phase = 'prepared';
    });
    this.deps.logger.info('joined the per-shard sync', {
      shard: shard.id,
      coordinatorID: shard.coordinatorID,
    });
    return true;
  }

  /** The lead worker: the destination is prepared; the shared plan is the prepared catalog. */
  private async announceReady(session: JobSession): Promise<void> {
    const store = session.coordination!;
    const shared = await store.load();
    if (shared?.ready) return;
    const { job } = session;
    await store.set({
      ready: true,
      plan: {
        t0: job.t0,
        listedUntil: job.listedUntil,
        estimatedTotalBytes: job.estimatedTotalBytes,
        namespaces: job.namespaces.map((n) => {
          const { partitionSet: _unused, ...rest } = n;
          return rest;
        }),
        sharding: PerShardTopology.assignment(session).sharding!,
      },
    });
  }
}

/** The topology of a job: per shard when it has a shard assignment, lone otherwise. */
export function topologyOf(session: JobSession, deps: TopologyDeps): SyncTopology {
  return session.job.shard ? new PerShardTopology(deps) : new LoneTopology();
}
