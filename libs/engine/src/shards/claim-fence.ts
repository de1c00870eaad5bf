import { performance } from 'node:perf_hooks';
import { ApiError } from '@sync/contracts';

/**
 * What the destination adapters ask before they write, in a per-shard sync: is this process
 * still the holder of its shard's claim? A lone worker (no `--id`) has no claim and every write
 * passes.
 */
export interface ClaimGuard {
  /** The shard id (= syncID) whose claim this process holds. */
  readonly worker: string;
  /**
   * The epoch of the claim held (metadata writes carry it in their filters: `claimEpoch`), or
   * undefined when no claim was ever held (a lone worker; a per-shard worker before it claims).
   */
  epoch(): number | undefined;
  /** Throws ShardClaimLost once a claim was held and is lost or its lease ran out. */
  assertHeld(): void;
  /** ShardClaimLost once the claim is lost or its lease ran out; null before. */
  readonly lost: ApiError | null;
  /** A write was refused by a newer epoch: the claim is lost (the holder stops at once). */
  lose(error: ApiError): void;
}

/** The error of a worker that no longer holds its shard (named in progress and in the logs). */
export function shardClaimLost(worker: string, why: string): ApiError {
  return new ApiError(
    'ShardClaimLost',
    `this worker no longer holds shard ${worker} (${why}); it writes nothing more to the destination. Restart it: it takes the shard over again once no other worker holds it.`,
  );
}

/** Losses by a lapsed lease alone (no other holder seen): the holder may claim its shard again. */
const LAPSES = new WeakSet<ApiError>();

/**
 * The lease ran out (renewals not acknowledged in time: the process paused, the destination
 * slow or unreachable) and no other holder was seen. Named ShardClaimLost like any loss — the
 * run stops and writes nothing more — but the worker then claims its shard again as a restarted
 * process would: once the claim is stale by the destination's clock, under a new epoch.
 */
export function shardClaimLapsed(worker: string): ApiError {
  const error = new ApiError(
    'ShardClaimLost',
    `this worker no longer holds shard ${worker} (its lease ran out: no renewal of the claim was acknowledged in time); it writes nothing more until it has claimed the shard again (once the claim is stale by the destination's clock, under a new epoch), then resumes from its checkpoint`,
  );
  LAPSES.add(error);
  return error;
}

/** True when `error` is a lapsed lease (shardClaimLapsed), not a takeover by another worker. */
export function isLeaseLapse(error: unknown): boolean {
  return error instanceof ApiError && LAPSES.has(error);
}

/** True when `error` (or its cause) is ShardClaimLost. */
export function isShardClaimLost(error: unknown): boolean {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    if (e instanceof ApiError && e.error === 'ShardClaimLost') return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * The holder's side of the claim lease: ShardClaim records each acknowledged renewal, the
 * adapters check before each destination write. The lease is measured on this process's
 * MONOTONIC clock from the moment the last successful renewal was SENT (the destination stamped
 * its heartbeat no earlier), so it ends before any other worker can see the claim stale by the
 * destination's clock — whatever this host's wall clock says, however long the process was
 * paused. Once lost (lease run out, or a takeover seen) it stays lost.
 */
export class ClaimFence implements ClaimGuard {
  private held: { epoch: number; until: number } | null = null;
  private lostWith: ApiError | null = null;
  private listeners: Array<(error: ApiError) => void> = [];
  /** After `rearm`: the lost epoch; only a claim with a newer epoch is held again. */
  private rearmedAfter: number | null = null;

  constructor(
    readonly worker: string,
    /** Monotonic milliseconds (default `performance.now`); tests pass their clock. */
    readonly now: () => number = () => performance.now(),
  ) {}

  epoch(): number | undefined {
    return this.held?.epoch;
  }

  /** The claim (epoch) is held until `until` (monotonic ms), unless lost already. */
  hold(epoch: number, until: number): void {
    if (this.lostWith) {
      // Lost for good unless re-armed, and then only by a newer epoch (a new claim of the shard).
      if (this.rearmedAfter === null || epoch <= this.rearmedAfter) return;
      this.lostWith = null;
      this.rearmedAfter = null;
      this.held = null;
    }
    if (this.held && this.held.epoch === epoch) this.held.until = Math.max(this.held.until, until);
    else this.held = { epoch, until };
  }

  /** Milliseconds the lease has left (≤ 0: run out); Infinity when no claim was ever held. */
  remainingMs(): number {
    if (!this.held) return Infinity;
    return this.held.until - this.now();
  }

  /**
   * The claim is gone for good: every later write is refused with `error`, and the listeners
   * (the holder's ShardClaim: it stops the run) hear it once, asynchronously.
   */
  lose(error: ApiError): void {
    if (this.lostWith) return;
    this.lostWith = error;
    for (const listener of this.listeners) queueMicrotask(() => listener(error));
  }

  /**
   * A lapsed holder is about to claim its shard again (its run has stopped): writes stay refused
   * until a claim with an epoch newer than the lost one is held; the old claim's listeners go.
   */
  rearm(): void {
    if (!this.lostWith) return;
    this.rearmedAfter = this.held?.epoch ?? -1;
    this.listeners = [];
  }

  /** Called once when the claim is lost, however that is found out (a refused write included). */
  whenLost(listener: (error: ApiError) => void): void {
    this.listeners.push(listener);
    const lost = this.lostWith;
    if (lost) queueMicrotask(() => listener(lost));
  }

  /** The reason the claim was lost (null while held, or never held). */
  get lost(): ApiError | null {
    if (!this.lostWith && this.held && this.remainingMs() <= 0) {
      this.lose(shardClaimLapsed(this.worker));
    }
    return this.lostWith;
  }

  assertHeld(): void {
    const lost = this.lost;
    if (lost) throw lost;
  }
}
