import type { LeaderLease } from '@sync/contracts';
import { randomUUID } from 'node:crypto';
import type { EpochStore } from './epoch-store';
import type { RedisLease } from './redis-lease';

export interface LeadershipOptions {
  lease: RedisLease;
  epochs: EpochStore;
  id: string;
  /** This replica's API URL; null until it listens (it cannot lead before others can reach it). */
  url: () => string | null;
  /** Monotonic milliseconds (performance.now): wall-clock jumps must not stretch a lease. */
  now?: () => number;
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

/**
 * Leader election among coordinator replicas. `tick()` runs every ttl/3: the leader renews its
 * lease; a follower tries to take it and otherwise remembers who holds it (to forward commands
 * there). Taking the lease is followed by a fencing epoch ($inc on the destination); only then
 * does this replica lead, and it stops leading as soon as its lease may have expired: renewal
 * refused, or not confirmed within the TTL (Redis away). Workers refuse older epochs, so a
 * leader that acts late anyway cannot undo a newer leader's commands.
 */
export class Leadership {
  private term: { value: string; epoch: number; renewedAt: number } | null = null;
  private known: LeaderLease | null = null;
  private readonly now: () => number;
  private running = false;

  constructor(private readonly options: LeadershipOptions) {
    this.now = options.now ?? (() => performance.now());
  }

  /** The epoch to stamp on commands, or null when this replica does not lead right now. */
  epoch(): number | null {
    if (!this.term) return null;
    if (this.now() - this.term.renewedAt >= this.options.lease.ttlMs) return null;
    return this.term.epoch;
  }

  isLeader(): boolean {
    return this.epoch() !== null;
  }

  /** Who leads as far as this replica knows (itself included), for forwarding and progress. */
  leader(): LeaderLease | null {
    return this.known;
  }

  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      if (this.term) await this.renew(this.term);
      else await this.tryToLead();
    } finally {
      this.running = false;
    }
  }

  /** On shutdown: hand the lease back so another replica leads at once, not after the TTL. */
  async release(): Promise<void> {
    const term = this.term;
    this.term = null;
    if (term) await this.options.lease.release(term.value).catch(() => false);
  }

  private async renew(term: { value: string; renewedAt: number }): Promise<void> {
    const sentAt = this.now();
    try {
      if (await this.options.lease.renew(term.value)) {
        term.renewedAt = sentAt;
        return;
      }
      this.stepDown('the lease was lost (expired and taken, or Redis restarted empty)');
    } catch {
      if (this.epoch() === null) this.stepDown('the lease could not be renewed within its TTL');
    }
  }

  private async tryToLead(): Promise<void> {
    const url = this.options.url();
    if (!url) return;
    const lease: LeaderLease = { id: this.options.id, url, token: randomUUID() };
    const value = JSON.stringify(lease);
    const sentAt = this.now();
    try {
      if (!(await this.options.lease.acquire(value))) {
        this.known = parseLease(await this.options.lease.holder());
        return;
      }
    } catch {
      this.known = null; // Redis is away: nobody can be known to lead
      return;
    }
    let epoch: number;
    try {
      epoch = await this.options.epochs.next(this.options.id);
    } catch (error) {
      this.options.log?.('took the lease but could not record an epoch; giving it back', {
        error: error instanceof Error ? error.message : String(error),
      });
      await this.options.lease.release(value).catch(() => false);
      return;
    }
    this.term = { value, epoch, renewedAt: sentAt };
    this.known = lease;
    this.options.log?.('leading the coordinator replicas', { epoch });
  }

  private stepDown(reason: string): void {
    this.options.log?.('no longer leading', { reason, epoch: this.term?.epoch });
    this.term = null;
    this.known = null;
  }
}

export function parseLease(value: string | null): LeaderLease | null {
  if (!value) return null;
  try {
    const parsed = JSON.parse(value) as LeaderLease;
    return typeof parsed.id === 'string' && typeof parsed.url === 'string' ? parsed : null;
  } catch {
    return null;
  }
}
