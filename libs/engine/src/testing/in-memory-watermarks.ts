import type { Timestamp } from 'bson';
import { compareTimestamps, maxTimestamp } from '../apply/timestamps';
import type {
  DdlAnnouncement,
  SyncHalt,
  WatermarkSnapshot,
  WatermarkStore,
  WorkerWatermark,
} from '../ports/watermark-store';

/** WatermarkStore in memory (unit tests of the per-shard order). */
export class FakeWatermarkStore implements WatermarkStore {
  readonly marks = new Map<string, WorkerWatermark>();
  readonly ddl = new Map<string, DdlAnnouncement>();
  haltRecord: SyncHalt | undefined;

  async publish(mark: WorkerWatermark): Promise<void> {
    const held = this.marks.get(mark.worker);
    this.marks.set(mark.worker, {
      worker: mark.worker,
      readThrough: maxTimestamp(held?.readThrough, mark.readThrough)!,
      appliedBefore: maxTimestamp(held?.appliedBefore, mark.appliedBefore)!,
      ...(mark.needs ? { needs: mark.needs } : {}),
    });
  }

  async announce(ddl: Omit<DdlAnnouncement, 'applied'>): Promise<void> {
    const held = this.ddl.get(ddl.token);
    this.ddl.set(ddl.token, { ...ddl, applied: held?.applied ?? false });
  }

  async markApplied(token: string): Promise<void> {
    const held = this.ddl.get(token);
    if (held) held.applied = true;
  }

  async snapshot(since?: Timestamp): Promise<WatermarkSnapshot> {
    const marks = [...this.marks.values()].map((m) => ({ ...m }));
    const ddl = [...this.ddl.values()]
      .filter((d) => !since || compareTimestamps(d.clusterTime, since) >= 0)
      .sort(
        (a, b) => compareTimestamps(a.clusterTime, b.clusterTime) || (a.token < b.token ? -1 : 1),
      )
      .map((d) => ({ ...d }));
    return { marks, ddl, ...(this.haltRecord ? { halt: { ...this.haltRecord } } : {}) };
  }

  async halt(halt: SyncHalt): Promise<void> {
    this.haltRecord ??= halt;
  }

  async clear(): Promise<void> {
    this.marks.clear();
    this.ddl.clear();
    this.haltRecord = undefined;
  }
}
