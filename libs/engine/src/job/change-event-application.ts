import type { Timestamp } from 'bson';
import {
  ChangeApplier,
  type AppliedWrites,
  type ChangeApplierOptions,
} from '../apply/change-applier';
import { COMMIT_LAG_LIMIT_SECONDS } from '../apply/commit-readiness';
import { ApplyError } from '../apply/errors';
import type { ChangeFeed, ChangeWriter, CheckpointStore, DocumentLookup } from '../apply/ports';
import { systemClock, type Clock } from '../ports/clock';
import type { ChangeApplication, ChangeApplicationStatus, PhaseContext } from './phases';

/** The adapters change application needs for one pass (built for the job's current direction). */
export interface ChangeApplicationPorts {
  feed: ChangeFeed;
  writer: ChangeWriter;
  lookup: DocumentLookup;
  /** Scoped to `ctx.checkpointKey`, stored in the destination's metadata database. */
  checkpoints: CheckpointStore;
}

export interface ChangeEventApplicationOptions {
  ports: (ctx: PhaseContext) => ChangeApplicationPorts;
  /** How often the source's latest cluster time is read for the lag (default 1000 ms). */
  lagPollMs?: number;
  commitLagLimitSeconds?: number;
  /** Applier tuning (lanes, checkpoint cadence, back-pressure). */
  applier?: Partial<
    Pick<
      ChangeApplierOptions,
      'lanes' | 'minLanes' | 'checkpointIntervalMs' | 'checkpointEveryEvents' | 'maxInFlight'
    >
  >;
  clock?: Clock;
}

/**
 * The ChangeApplier plugged into the job: the catalog's router and the start point come from
 * the job; the lag is the source's latest cluster time (polled) minus the applied position as it
 * is when asked, which includes idle high-water marks, so a quiet source shows ~0 rather than a
 * growing number. (Taken at the poll instead, a lag stayed up to a poll interval behind what was
 * applied: after a copy, the live verifier — which waits for a lag ≤ 1 s — waited ~1 s more.)
 */
export class ChangeEventApplication implements ChangeApplication {
  private applier: ChangeApplier | null = null;
  /** The source's cluster time at the last poll. */
  private latest: Timestamp | null = null;
  /** Every event up to the commit point is applied (`waitUntilApplied`): 0 until the next poll. */
  private drained = false;

  constructor(private readonly options: ChangeEventApplicationOptions) {}

  async run(ctx: PhaseContext): Promise<void> {
    const clock = this.options.clock ?? systemClock;
    const ports = this.options.ports(ctx);
    const applier = new ChangeApplier({
      ...this.options.applier,
      ...ports,
      router: ctx.router,
      startAtOperationTime: ctx.startAt,
      translation: { buildIndexes: ctx.job.request.buildIndexes },
      now: () => clock.now(),
      ...(ctx.retry ? { retry: ctx.retry } : {}),
      ...(ctx.gate ? { gate: ctx.gate } : {}),
      ...(ctx.appliedWrites ? { appliedWrites: this.caughtUpRepairs(ctx.appliedWrites) } : {}),
    });
    this.applier = applier;
    const stopPolling = new AbortController();
    const stop = AbortSignal.any([ctx.signal, stopPolling.signal]);
    const poller = (async () => {
      while (!stop.aborted) {
        try {
          this.latest = await ctx.source.clusterTime();
          this.drained = false;
        } catch (error) {
          ctx.logger.debug('reading the source cluster time for the lag failed', {
            error: error instanceof Error ? error.message : String(error),
          });
        }
        await clock.sleep(this.options.lagPollMs ?? 1000, stop);
      }
    })();
    try {
      await applier.run(ctx.signal);
    } finally {
      stopPolling.abort();
      await poller;
    }
  }

  /**
   * The verifier's repairs only while change application is caught up (lag ≤ 1 s): a document
   * found different for a while under a lag may simply have its events still on their way.
   */
  private caughtUpRepairs(writes: AppliedWrites): AppliedWrites {
    return {
      ...writes,
      repairs: (repair) =>
        writes.repairs?.(
          repair &&
            ((...args) => {
              const lag = this.status().lagTimeSeconds;
              return lag !== null && lag <= 1 && repair(...args);
            }),
        ),
    };
  }

  status(): ChangeApplicationStatus {
    const stats = this.applier?.stats();
    const limit = this.options.commitLagLimitSeconds ?? COMMIT_LAG_LIMIT_SECONDS;
    const lag = this.drained
      ? 0
      : this.applier && this.latest
        ? this.applier.lagSeconds(this.latest)
        : null;
    return {
      lagTimeSeconds: lag,
      totalEventsApplied: stats?.totalEventsApplied ?? 0,
      readyToCommit: stats?.running === true && lag !== null && lag <= limit,
    };
  }

  async waitUntilApplied(point: Timestamp, signal?: AbortSignal): Promise<void> {
    if (!this.applier) throw new ApplyError('change application has not started', true);
    await this.applier.waitUntilApplied(point, signal);
    this.drained = true;
  }
}
