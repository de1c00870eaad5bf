import type {
  WorkerClaim,
  BarrierRecord,
  CoordinationRecord,
  CoordinationStore,
} from '../ports/coordination-store';
import { deepSnapshot } from '../job/job-session';

/** CoordinationStore in memory (one per destination cluster), shared by the fake workers. */
export class FakeCoordinationStore implements CoordinationStore {
  record: CoordinationRecord | null = null;
  readonly barriers = new Map<string, BarrierRecord>();
  readonly claims = new Map<string, WorkerClaim>();
  /** Claim epochs stamped by `fence`, by worker. */
  readonly fences = new Map<string, number>();

  /** `now`: the destination's clock (`$$NOW`), the only clock claims are judged by. */
  constructor(readonly now: () => number = () => Date.now()) {}

  private readonly staleLimits = new Map<string, number>();

  async claim(worker: string, instance: string, staleMs: number): Promise<WorkerClaim> {
    const now = this.now();
    const held = this.claims.get(worker);
    // Stale after the longer of the holder's and the claimant's limits (as the Mongo store).
    const limit = Math.max(staleMs, this.staleLimits.get(worker) ?? staleMs);
    if (!held || held.instance === instance || held.heartbeatAt.getTime() < now - limit) {
      const epoch = !held ? 1 : held.instance === instance ? held.epoch : held.epoch + 1;
      this.claims.set(worker, { _id: worker, instance, heartbeatAt: new Date(now), epoch });
      this.staleLimits.set(worker, staleMs);
    }
    const claim = this.claims.get(worker)!;
    return { ...claim, heartbeatAt: new Date(claim.heartbeatAt) };
  }

  async takeOver(worker: string, instance: string, staleMs: number): Promise<WorkerClaim | null> {
    if (!this.claims.has(worker)) return null;
    return this.claim(worker, instance, staleMs);
  }

  async readClaim(worker: string): Promise<WorkerClaim | null> {
    const claim = this.claims.get(worker);
    return claim ? { ...claim, heartbeatAt: new Date(claim.heartbeatAt) } : null;
  }

  async load(): Promise<CoordinationRecord | null> {
    return this.record && deepSnapshot(this.record);
  }

  async create(record: CoordinationRecord): Promise<void> {
    this.barriers.clear();
    this.record = deepSnapshot(record);
  }

  async set(fields: Partial<Omit<CoordinationRecord, '_id'>>): Promise<void> {
    if (this.record) Object.assign(this.record, deepSnapshot(fields));
  }

  async markStep(step: string, worker: string): Promise<void> {
    if (!this.record) return;
    const done = (this.record.commitSteps[step] ??= []);
    if (!done.includes(worker)) done.push(worker);
  }

  async forgetSteps(steps: readonly string[], worker: string): Promise<void> {
    if (!this.record) return;
    for (const step of steps) {
      const done = this.record.commitSteps[step];
      if (done) this.record.commitSteps[step] = done.filter((w) => w !== worker);
    }
  }

  async arrive(barrier: string, worker: string): Promise<BarrierRecord> {
    const record = this.barriers.get(barrier) ?? { _id: barrier, arrived: [], released: false };
    if (!record.arrived.includes(worker)) record.arrived.push(worker);
    this.barriers.set(barrier, record);
    return deepSnapshot(record);
  }

  async barrier(barrier: string): Promise<BarrierRecord | null> {
    const record = this.barriers.get(barrier);
    return record ? deepSnapshot(record) : null;
  }

  async release(barrier: string): Promise<void> {
    const record = this.barriers.get(barrier);
    if (record) record.released = true;
  }

  async fence(worker: string, epoch: number): Promise<void> {
    this.fences.set(worker, Math.max(epoch, this.fences.get(worker) ?? 0));
  }
}
