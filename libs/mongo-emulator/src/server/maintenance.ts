import type { Timestamp } from 'bson';
import type { ReplicaSetNode } from '../node/replica-set-node';

export interface MaintenanceOptions {
  /** Periodic no-op interval (mongod's periodicNoopIntervalSecs, 10 s). */
  noopIntervalMs: number;
  /** Idle cursors are closed after this long (mongod's cursorTimeoutMillis, 10 min). */
  cursorTimeoutMs: number;
  /** How often the cursor and session reapers run. */
  reapIntervalMs: number;
}

/**
 * Background work of a primary: periodic no-op oplog writes (so change streams and
 * majority optimes keep advancing on an idle set, like mongod's NoopWriter), and the
 * reapers for idle cursors and expired logical sessions.
 */
export class NodeMaintenance {
  private timers: NodeJS.Timeout[] = [];
  private lastSeen: Timestamp | undefined;

  constructor(
    private readonly node: ReplicaSetNode,
    private readonly options: MaintenanceOptions,
  ) {}

  start(): void {
    if (this.timers.length) return;
    const noop = setInterval(() => this.writeNoopIfIdle(), this.options.noopIntervalMs);
    const reap = setInterval(() => this.reap(), this.options.reapIntervalMs);
    for (const t of [noop, reap]) t.unref();
    this.timers = [noop, reap];
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  /** mongod's NoopWriter only writes when nothing else advanced the oplog since its last run. */
  writeNoopIfIdle(): void {
    const newest = this.node.oplog.newest()?.ts;
    if (newest && this.lastSeen && !newest.equals(this.lastSeen)) {
      this.lastSeen = newest;
      return;
    }
    this.lastSeen = this.node.oplog.append({ op: 'noop', db: '', o: { msg: 'periodic noop' } }).ts;
  }

  reap(now = Date.now()): void {
    this.node.cursors.reapIdle(this.options.cursorTimeoutMs, now);
    const expired = this.node.sessions.reapExpired(now);
    if (expired.size) {
      this.node.cursors.killForSessions(expired);
      this.node.transactions.endSessions(expired);
    }
  }
}
