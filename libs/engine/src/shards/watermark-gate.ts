import { Timestamp } from 'bson';
import { ApplyError } from '../apply/errors';
import { compareTimestamps, maxTimestamp } from '../apply/timestamps';
import type { Namespace } from '../apply/change-event';
import type { ShardKeyspace } from '../apply/write-lane';
import type { Clock } from '../ports/clock';
import type { ShardOwnership } from './ownership';
import type { EngineLogger } from '../ports/engine-logger';
import type {
  DdlAnnouncement,
  WatermarkSnapshot,
  WatermarkStore,
  WorkerWatermark,
} from '../ports/watermark-store';

export interface WatermarkGateDeps {
  store: WatermarkStore;
  /** This worker's shard id. */
  me: string;
  /** The source shard this worker reads, when not `me` (after a reverse: shard-sync.ts). */
  owner?: string;
  /** Every worker of the sync (source shard ids). */
  members: readonly string[];
  clock: Clock;
  logger: EngineLogger;
  /** Where this worker's stream starts when nothing is published yet (T0 or its checkpoint). */
  start: Timestamp;
  /** The last DDL recorded in this worker's catalog, its own or another worker's. */
  recorded(): { clusterTime: Timestamp; token: string } | undefined;
  /** Records another worker's applied DDL in this worker's catalog (one job write). */
  recordForeign(ddl: DdlAnnouncement): Promise<void>;
  /** Writes a no-op on this worker's shard, so that its idle stream reads past it. */
  advance?(): Promise<void>;
  /** Told what the worker waits for (progress `waitingFor`); null when it stops waiting. */
  waiting?(what: string | null): void;
  /** How often a waiting worker reads the watermarks again (default 50 ms). */
  pollMs?: number;
  /** How often marks are published and read while nothing waits (default 100 ms). */
  publishMs?: number;
  /** Least time between two no-ops on an idle shard (default 500 ms). */
  advanceMs?: number;
  /** The chunk map at T0: which shard owns a document (null before the plan is adopted). */
  ownership?: () => ShardOwnership | null;
}

/** The first DDL of the stream, for ordering: (clusterTime, token) pairs. */
function before(a: { clusterTime: Timestamp; token: string }, time: Timestamp, token: string) {
  const order = compareTimestamps(a.clusterTime, time);
  return order < 0 || (order === 0 && a.token < token);
}

/**
 * A per-shard worker's place in the sync's cluster-time order. Each worker reads only its own
 * shard's change stream; what keeps the workers consistent with each other is this rule:
 *
 * - an event at cluster time t is applied only when every other worker has READ its stream
 *   through t (so every DDL at or before t, on any shard, is announced) and every DDL
 *   announced at or before t has been applied by its reader and recorded in this worker's
 *   catalog;
 * - a DDL at T is applied by the worker whose stream holds it, once every other worker has
 *   APPLIED everything before T (the others stop at their first event at or after T).
 *
 * So each DDL is applied exactly once, after every earlier write of every shard and before every
 * later one, and a collection created, renamed or dropped on one shard's stream is known to every
 * worker before any of its events elsewhere. Document events need no further ordering: every
 * write is addressed by its full document key (shard key and `_id`), and a document moved
 * between shards is repaired from the source when the halves conflict (see write-lane.ts).
 *
 * Marks are published every `publishMs` and whenever the worker starts waiting; an idle shard's
 * stream is moved on by a no-op write when another worker has read further (MongoDB's shards
 * also write one every 10 s on their own).
 */
export class WatermarkGate {
  private snap: WatermarkSnapshot = { marks: [], ddl: [] };
  private readThrough: Timestamp;
  private appliedBefore: Timestamp;
  private published = '';
  private lastAdvance = 0;
  private publishing: Promise<void> = Promise.resolve();
  private loop: Promise<void> | null = null;
  private stopping: AbortController | null = null;
  /** When this worker was last held back by the gate, and when it last read the marks. */
  private heldAt = Number.NEGATIVE_INFINITY;
  private refreshedAt = Number.NEGATIVE_INFINITY;
  /** The cluster time this worker waits for the others to read through (published). */
  private needs: Timestamp | undefined;

  constructor(private readonly deps: WatermarkGateDeps) {
    this.readThrough = deps.start;
    this.appliedBefore = deps.start;
  }

  private get others(): string[] {
    return this.deps.members.filter((m) => m !== this.deps.me);
  }

  /** Publishes and refreshes in the background until `signal` aborts or `stop` is called. */
  start(signal: AbortSignal): void {
    if (this.loop) return;
    const stopping = new AbortController();
    this.stopping = stopping;
    const until = AbortSignal.any([signal, stopping.signal]);
    this.loop = (async () => {
      while (!until.aborted) {
        try {
          await this.publish();
          // Read the others' marks often only while they matter: this worker was held back
          // lately, or another one waits; otherwise once a second (an idle sync stays quiet).
          const now = this.deps.clock.now();
          if (now - this.heldAt < 2_000 || this.othersWait() || now - this.refreshedAt >= 1_000)
            await this.refresh();
        } catch (error) {
          this.deps.logger.debug('publishing the shard watermarks failed; retrying', {
            error: error instanceof Error ? error.message : String(error),
          });
        }
        await this.deps.clock.sleep(this.deps.publishMs ?? 100, until).catch(() => undefined);
      }
    })();
  }

  /** Ends the background loop, publishing the last marks (the others may be waiting on them). */
  async stop(): Promise<void> {
    this.stopping?.abort();
    await this.loop;
    this.loop = null;
    await this.publish().catch(() => undefined);
  }

  /** This worker's share of the key space, from the T0 chunk map (see write-lane.ts). */
  readonly keyspace: ShardKeyspace = {
    keyFields: (uuid) => {
      const sharded = this.deps.ownership?.()?.sharded(uuid);
      return sharded ? Object.keys(sharded.key) : undefined;
    },
    owns: (ns: Namespace, uuid, doc) => {
      const ownership = this.deps.ownership?.();
      if (!ownership) throw new ApplyError('a per-shard worker without its chunk map', false);
      return ownership.ownerOf(ns.db, uuid, doc) === (this.deps.owner ?? this.deps.me);
    },
  };

  /** The stream was read through `time` (every DDL up to it announced first). */
  noteRead(time: Timestamp | undefined): void {
    this.readThrough = maxTimestamp(this.readThrough, time) ?? this.readThrough;
  }

  /** Every event of this worker's stream before `time` is applied. */
  noteApplied(time: Timestamp | undefined): void {
    this.appliedBefore = maxTimestamp(this.appliedBefore, time) ?? this.appliedBefore;
  }

  /** Announces a DDL met on this worker's stream (before the read mark passes it). */
  async announce(token: string, clusterTime: Timestamp, event: object): Promise<void> {
    await this.deps.store.announce({
      token,
      worker: this.deps.me,
      clusterTime,
      event: event as never,
    });
  }

  /** This worker applied its DDL: the others may record it and go on. */
  async markApplied(token: string): Promise<void> {
    await this.deps.store.markApplied(token);
  }

  /**
   * True when an event at `time` may be applied without waiting (the fast path: no round trip);
   * otherwise the caller drains its lanes and calls `admit`.
   */
  allows(time: Timestamp): boolean {
    this.throwIfHalted();
    const allowed = this.horizonReached(time) && !this.pendingDdl(time);
    if (!allowed) this.heldAt = this.deps.clock.now();
    return allowed;
  }

  /** Another worker waited for the others' read marks when the marks were last read. */
  private othersWait(): boolean {
    return this.snap.marks.some((m) => m.worker !== this.deps.me && m.needs !== undefined);
  }

  /**
   * Waits until an event at `time` may be applied; `own` is this worker's DDL at `time`, which
   * also waits for every other worker to have applied everything before it. `drain` applies
   * everything this worker read before `time` (its lanes): called only when another shard's
   * DDL precedes the event (its worker waits for this worker's applied mark to pass it) —
   * waiting for the others' read marks lets the lanes write on. Without `drain` the caller has
   * drained already.
   */
  async admit(
    time: Timestamp,
    signal: AbortSignal,
    own?: { token: string },
    drain?: () => Promise<void>,
  ): Promise<void> {
    let drained = false;
    const drainNow = async (): Promise<void> => {
      if (drained) return;
      if (drain) await drain();
      drained = true;
      this.noteApplied(time);
      await this.publish();
    };
    if (!drain || own) await drainNow();
    let refreshed = false;
    const began = this.deps.clock.now();
    let told = false;
    try {
      for (;;) {
        if (signal.aborted) throw new ApplyError('stopped at the shard watermark', true);
        this.throwIfHalted();
        const pending = this.pendingDdl(time, own?.token);
        if (pending) await drainNow();
        if (pending?.applied) {
          await this.deps.recordForeign(pending);
          continue;
        }
        const ready =
          !pending &&
          this.horizonReached(time) &&
          (!own || this.othersAppliedBefore(time)) &&
          (refreshed || !own);
        if (ready) return;
        if (!pending && !this.horizonReached(time)) this.needs = time;
        const what = this.describeWait(time, pending, own);
        this.deps.waiting?.(what);
        if (!told && this.deps.clock.now() - began > 5_000) {
          told = true; // once per wait: a long one is worth a line in the log
          this.deps.logger.info("waiting for the other shards' workers", { waitingFor: what });
        }
        this.maybeAdvance();
        await this.deps.clock.sleep(this.deps.pollMs ?? 50, signal).catch(() => undefined);
        await this.publish();
        await this.refresh();
        refreshed = true;
      }
    } finally {
      this.deps.waiting?.(null);
      if (this.needs) {
        this.needs = undefined;
        void this.publish().catch(() => undefined);
      }
    }
  }

  /** After an empty read: moves this shard's stream on when another worker has read further. */
  idle(): void {
    this.throwIfHalted();
    this.maybeAdvance();
  }

  private maybeAdvance(): void {
    const advance = this.deps.advance;
    if (!advance) return;
    // Only when another worker waits for this shard's stream to pass a time (an idle shard
    // otherwise stays quiet, as MongoDB's own shards do between their periodic no-ops).
    const waitedOn = this.snap.marks.some(
      (m) =>
        m.worker !== this.deps.me &&
        m.needs !== undefined &&
        compareTimestamps(m.needs, this.readThrough) > 0,
    );
    const now = this.deps.clock.now();
    if (!waitedOn || now - this.lastAdvance < (this.deps.advanceMs ?? 500)) return;
    this.lastAdvance = now;
    advance().catch((error: unknown) =>
      this.deps.logger.debug('a no-op write to move the shard stream on failed', {
        error: error instanceof Error ? error.message : String(error),
      }),
    );
  }

  private throwIfHalted(): void {
    const halt = this.snap.halt;
    if (!halt) return;
    const error = new ApplyError(
      `${halt.message} (stopped by the worker of shard ${halt.worker}; every worker of the sync stops)`,
      false,
    );
    error.name = halt.name;
    throw error;
  }

  private horizonReached(time: Timestamp): boolean {
    for (const worker of this.others) {
      const mark = this.mark(worker);
      if (!mark || compareTimestamps(mark.readThrough, time) < 0) return false;
    }
    return true;
  }

  private othersAppliedBefore(time: Timestamp): boolean {
    for (const worker of this.others) {
      const mark = this.mark(worker);
      if (!mark || compareTimestamps(mark.appliedBefore, time) < 0) return false;
    }
    return true;
  }

  /**
   * The first DDL of another worker that must be recorded here before an event at `time`: at
   * or before `time` for a document event; strictly before this worker's own DDL at `time`
   * (ties broken by token) for a DDL.
   */
  private pendingDdl(time: Timestamp, ownToken?: string): DdlAnnouncement | undefined {
    const recorded = this.deps.recorded();
    for (const ddl of this.snap.ddl) {
      if (ddl.worker === this.deps.me) continue;
      if (recorded && !before(recorded, ddl.clusterTime, ddl.token)) continue;
      const order = compareTimestamps(ddl.clusterTime, time);
      const precedes = ownToken === undefined ? order <= 0 : before(ddl, time, ownToken);
      if (precedes) return ddl;
      if (order > 0) return undefined; // sorted: nothing later precedes
    }
    return undefined;
  }

  private mark(worker: string): WorkerWatermark | undefined {
    return this.snap.marks.find((m) => m.worker === worker);
  }

  private describeWait(
    time: Timestamp,
    pending: DdlAnnouncement | undefined,
    own: { token: string } | undefined,
  ): string {
    if (pending) {
      return `a DDL of shard ${pending.worker} at ${show(pending.clusterTime)} (${describeDdl(pending)}): waiting for its worker to apply it`;
    }
    const behind = this.others.filter((w) => {
      const mark = this.mark(w);
      if (!mark) return true;
      if (compareTimestamps(mark.readThrough, time) < 0) return true;
      return own !== undefined && compareTimestamps(mark.appliedBefore, time) < 0;
    });
    return own
      ? `applying a DDL at ${show(time)}: waiting for ${behind.join(', ')} to apply everything before it`
      : `cluster time ${show(time)}: waiting for ${behind.join(', ')} to read that far`;
  }

  private publish(): Promise<void> {
    const mark = {
      worker: this.deps.me,
      readThrough: this.readThrough,
      appliedBefore: this.appliedBefore,
      ...(this.needs ? { needs: this.needs } : {}),
    };
    const key = `${mark.readThrough.toString()}|${mark.appliedBefore.toString()}|${this.needs?.toString() ?? ''}`;
    if (key === this.published) return this.publishing;
    // Serialised: marks only grow, and two writes must not land out of order.
    this.publishing = this.publishing
      .catch(() => undefined)
      .then(async () => {
        await this.deps.store.publish(mark);
        this.published = key;
      });
    return this.publishing;
  }

  private async refresh(): Promise<void> {
    const since = this.deps.recorded()?.clusterTime ?? this.deps.start;
    this.snap = await this.deps.store.snapshot(since);
    this.refreshedAt = this.deps.clock.now();
  }
}

function describeDdl(ddl: DdlAnnouncement): string {
  const event = ddl.event as { operationType?: string; ns?: { db?: string; coll?: string } };
  const ns = event.ns ? `${event.ns.db ?? ''}${event.ns.coll ? `.${event.ns.coll}` : ''}` : '';
  return `${event.operationType ?? 'DDL'} ${ns}`.trim();
}

/** The least cluster time after `time` (used for "everything at or before `time`"). */
export function justAfter(time: Timestamp): Timestamp {
  return new Timestamp({ t: time.t, i: time.i + 1 });
}

/** The greatest cluster time before `time` ("nothing before `time` is known yet"). */
export function justBefore(time: Timestamp): Timestamp {
  if (time.i > 0) return new Timestamp({ t: time.t, i: time.i - 1 });
  return time.t > 0 ? new Timestamp({ t: time.t - 1, i: 0xffffffff }) : time;
}

/** `Timestamp(1732700000, 5)`, as mongosh shows it. */
function show(time: Timestamp): string {
  return `Timestamp(${time.t}, ${time.i})`;
}
