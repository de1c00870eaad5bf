import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { ApiError } from '@sync/contracts';
import { systemClock, type Clock } from '../ports/clock';
import type { CoordinationStore, WorkerClaim } from '../ports/coordination-store';
import type { EngineLogger } from '../ports/engine-logger';
import { ClaimFence, shardClaimLost } from './claim-fence';

/** Heartbeat period of a shard claim by default (workers: --claimRenewMs). */
export const DEFAULT_CLAIM_RENEW_MS = 1_000;
/** A claim not renewed for this long is free to take over, by default (--claimStaleMs). */
export const DEFAULT_CLAIM_STALE_MS = 6_000;

/** Renewals sent while earlier ones are unacknowledged (a slow destination), at most. */
const MAX_RENEWALS_IN_FLIGHT = 3;

export interface ShardClaimOptions {
  /** Heartbeat period (default DEFAULT_CLAIM_RENEW_MS, 1 s). */
  renewMs?: number;
  /**
   * A claim whose heartbeat is older than this by the DESTINATION's clock is free to take over
   * (default DEFAULT_CLAIM_STALE_MS, 6 s).
   */
  staleMs?: number;
  /**
   * The holder stops writing this long before its claim could go stale: it holds the claim
   * until (sending time of its last acknowledged renewal) + staleMs − leaseMarginMs, on its own
   * monotonic clock (default staleMs / 5: 1.2 s of 6 s). Covers clock-rate drift and a write
   * still in flight when the lease ends.
   */
  leaseMarginMs?: number;
  /**
   * This process's claim instance (default: random). A worker that took its shard over before
   * its engine existed (a standby) passes the id it took it with: the engine's own claim is then
   * a renewal of the same epoch, not a second takeover.
   */
  instance?: string;
  /**
   * Standby: `acquire` never claims a free shard and never refuses a live holder; it watches the
   * claim (reads only, and a takeover attempt that matches nothing while the holder is fresh)
   * and takes it over once its heartbeat is stale by the destination's clock, however long
   * that takes — then fences the older epochs off and renews, as a restarted worker does.
   */
  standby?: boolean;
  /**
   * How often a standby tries the takeover (default renewMs / 2, at most 500 ms): a dead
   * holder is replaced at most this long after its claim went stale.
   */
  standbyPollMs?: number;
  /**
   * After a lapsed lease (no renewal acknowledged in time, no other holder seen) the engine
   * claims its shard again and resumes, as a restarted process would (default true); false:
   * the worker stays stopped with ShardClaimLost until it is restarted.
   */
  reclaimAfterLapse?: boolean;
  /** A standby: called at each look at the claim while it is held by another (or absent). */
  onStandby?: (holder: WorkerClaim | null) => void;
  /**
   * The lease state the destination adapters check before each write (the composition root
   * shares one with them); a private one otherwise.
   */
  fence?: ClaimFence;
}

/**
 * One process per shard: a worker holds its shard id in the destination's `workers` collection
 * and renews it while it lives. Staleness is judged by the destination's clock alone (the
 * claim's update compares the heartbeat with the server's `$$NOW`), so a skewed host clock
 * changes nothing.
 *
 * Fencing: every takeover by another process increments the claim's epoch, which the new holder
 * stamps on the metadata it writes (CoordinationStore.fence) and carries in its writes'
 * filters, so an old holder's metadata writes match nothing. And the holder stops writing on
 * its own before its claim can go stale (the lease, see ClaimFence): renewals failing or the
 * process paused, it writes nothing more and its run stops with ShardClaimLost.
 *
 * A second live process launched with the same `--id` is refused (`DuplicateShardWorker`) once
 * it sees the holder's heartbeat advance; a worker restarted after a crash waits, however long
 * it takes, until the dead one's claim is stale by the destination's clock, and takes it over.
 */
export class ShardClaim {
  readonly instance: string;
  readonly fence: ClaimFence;
  private renewing: AbortController | null = null;
  private held: WorkerClaim | null = null;

  constructor(
    private readonly worker: string,
    private readonly clock: Clock,
    private readonly logger: EngineLogger,
    private readonly options: ShardClaimOptions = {},
  ) {
    this.instance = options.instance ?? randomBytes(8).toString('hex');
    this.fence =
      options.fence ??
      new ClaimFence(worker, clock === systemClock ? () => performance.now() : () => clock.now());
    if (this.renewMs >= this.staleMs - this.marginMs) {
      throw new Error(
        `shard claim: renewMs (${this.renewMs}) must be shorter than staleMs − leaseMarginMs (${this.staleMs - this.marginMs})`,
      );
    }
  }

  private get staleMs(): number {
    return this.options.staleMs ?? DEFAULT_CLAIM_STALE_MS;
  }

  private get renewMs(): number {
    return this.options.renewMs ?? DEFAULT_CLAIM_RENEW_MS;
  }

  private get pollMs(): number {
    return this.options.standbyPollMs ?? Math.max(1, Math.min(500, this.renewMs / 2));
  }

  private get marginMs(): number {
    return this.options.leaseMarginMs ?? this.staleMs / 5;
  }

  /** The epoch of the claim this process holds (undefined before it holds one). */
  get epoch(): number | undefined {
    return this.held?.epoch;
  }

  /**
   * Claims the shard on `store` — waiting out a dead predecessor's claim however long it takes,
   * refused only when the holder is seen alive (its heartbeat advances twice) — fences the older
   * epochs off, then renews the claim and watches the lease. `onLost` is called once when the
   * claim is lost (taken over, or the lease ran out); the fence refuses writes from then on.
   */
  async acquire(
    store: CoordinationStore,
    onLost: (error: ApiError) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    if (this.options.standby) return this.takeOver(store, onLost, signal);
    let first: WorkerClaim | null = null;
    const beats = new Set<number>();
    for (;;) {
      if (signal?.aborted) throw signal.reason ?? new Error('claiming the shard was aborted');
      const sent = this.fence.now();
      const held = await store.claim(this.worker, this.instance, this.staleMs);
      if (held.instance === this.instance) {
        this.held = held;
        // Before any other write: the older epochs' writes match nothing from here on.
        await store.fence(this.worker, held.epoch);
        this.fence.hold(held.epoch, sent + this.staleMs - this.marginMs);
        break;
      }
      first ??= held;
      beats.add(held.heartbeatAt.getTime());
      // Alive: another process took the claim over meanwhile, or the heartbeat advanced twice
      // (once could be a dead process's last renewal, still in flight when it died).
      if (held.instance !== first.instance || held.epoch !== first.epoch || beats.size > 2)
        throw this.duplicate(held);
      // A restart right after a crash finds its own dead predecessor's fresh claim: it goes
      // stale (by the destination's clock) unless its holder renews it.
      await this.clock.sleep(Math.min(1_000, this.renewMs), signal);
    }
    this.logger.info('shard claimed', { worker: this.worker, epoch: this.held.epoch });
    this.renew(store, onLost);
  }

  /**
   * Standby: waits (however long) until the holder's claim is stale by the destination's clock,
   * then takes it over (epoch + 1), fences the older epochs off and renews. Never claims a shard
   * nobody holds: a standby stands by an active worker. Rejects only when `signal` aborts.
   */
  private async takeOver(
    store: CoordinationStore,
    onLost: (error: ApiError) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    let announced = false;
    for (;;) {
      if (signal?.aborted) throw signal.reason ?? new Error('standby aborted');
      const sent = this.fence.now();
      let held: WorkerClaim | null = null;
      try {
        held = await store.takeOver(this.worker, this.instance, this.staleMs);
      } catch (error) {
        this.logger.warn('standby: reading the shard claim failed; retrying', {
          worker: this.worker,
          error: error instanceof Error ? error.message : String(error),
        });
      }
      if (held && held.instance === this.instance) {
        this.held = held;
        await store.fence(this.worker, held.epoch);
        this.fence.hold(held.epoch, sent + this.staleMs - this.marginMs);
        break;
      }
      if (!announced) {
        announced = true;
        this.logger.info('standby: waiting for the active worker of this shard to stop', {
          worker: this.worker,
          holder: held?.instance ?? null,
          epoch: held?.epoch ?? null,
        });
      }
      this.options.onStandby?.(held);
      await this.clock.sleep(this.pollMs, signal);
    }
    this.logger.info('standby: the shard was taken over', {
      worker: this.worker,
      epoch: this.held.epoch,
    });
    this.renew(store, onLost);
  }

  stop(): void {
    this.renewing?.abort();
    this.renewing = null;
  }

  private renew(store: CoordinationStore, onLost: (error: ApiError) => void): void {
    this.stop();
    const controller = new AbortController();
    this.renewing = controller;
    const epoch = this.held!.epoch;
    let told = false;
    const lose = (error: ApiError): void => {
      this.fence.lose(error);
      controller.abort();
      if (told) return;
      told = true;
      onLost(this.fence.lost ?? error);
    };
    // However the loss is found out (a metadata write refused by a newer epoch, the lease seen
    // run out by a write): the run stops at once.
    this.fence.whenLost(lose);
    // The watchdog: the lease runs out when no renewal was acknowledged in time (renewals
    // failing, a partition, the process paused): the run stops at once.
    void (async () => {
      while (!controller.signal.aborted) {
        const left = this.fence.remainingMs();
        if (left <= 0 || this.fence.lost) {
          lose(this.fence.lost!);
          return;
        }
        await this.clock.sleep(Math.max(1, Math.min(left, this.renewMs)), controller.signal);
      }
    })();
    // Renewals are sent every renewMs whether or not the previous one was acknowledged (at most
    // MAX_RENEWALS_IN_FLIGHT at a time): one slow round trip then costs no lease, as a later
    // renewal's acknowledgement extends it (from ITS sending time: each is safe on its own).
    let inFlight = 0;
    const renewOnce = async (): Promise<void> => {
      const sent = this.fence.now();
      try {
        const held = await store.claim(this.worker, this.instance, this.staleMs);
        if (controller.signal.aborted) return;
        if (held.instance !== this.instance || held.epoch !== epoch) {
          lose(
            shardClaimLost(
              this.worker,
              `another worker took the shard over: instance ${held.instance}, claim epoch ${held.epoch} (this one held epoch ${epoch})`,
            ),
          );
          return;
        }
        this.fence.hold(epoch, sent + this.staleMs - this.marginMs);
        const took = this.fence.now() - sent;
        if (took > this.renewMs) {
          this.logger.warn('renewing the shard claim was slow', {
            tookMs: Math.round(took),
            leaseLeftMs: Math.round(this.fence.remainingMs()),
          });
        }
      } catch (error) {
        if (controller.signal.aborted) return;
        this.logger.warn('renewing the shard claim failed; retrying', {
          error: error instanceof Error ? error.message : String(error),
          leaseLeftMs: Math.round(this.fence.remainingMs()),
        });
      }
    };
    void (async () => {
      while (!controller.signal.aborted) {
        await this.clock.sleep(this.renewMs, controller.signal).catch(() => undefined);
        if (controller.signal.aborted) return;
        if (inFlight >= MAX_RENEWALS_IN_FLIGHT) continue;
        inFlight += 1;
        void renewOnce().finally(() => (inFlight -= 1));
      }
    })();
  }

  private duplicate(held: WorkerClaim): ApiError {
    return new ApiError(
      'DuplicateShardWorker',
      `another worker runs shard ${this.worker}: it is alive (its heartbeat advances, last at ${held.heartbeatAt.toISOString()} by the destination's clock); each source shard needs exactly one active worker. Stop the other one, or start this one with --standby to wait as its standby (it takes the shard over within seconds of the active one's death); a worker that died is taken over ${Math.round(this.staleMs / 100) / 10} s after its last heartbeat.`,
    );
  }
}
