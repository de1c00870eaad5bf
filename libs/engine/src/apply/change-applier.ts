import type { Timestamp } from 'bson';
import type { ChangeEvent, Namespace } from './change-event';
import { CheckpointTracker, type StreamPosition } from './checkpoint-tracker';
import { lagSeconds } from './commit-readiness';
import { DDL_OPERATION_TYPES } from './ddl-event';
import { ApplyError, CheckpointSaveError } from './errors';
import { laneOf } from './lane-router';
import type {
  ChangeFeed,
  ChangeFeedCursor,
  ChangeWriter,
  CheckpointStore,
  DocumentLookup,
  EventRouter,
  StartPoint,
} from './ports';
import { resumeTokenTime } from './resume-token';
import { compareTimestamps, maxTimestamp } from './timestamps';
import { assertApplicable, translateEvent, type TranslationOptions } from './translate-event';
import { WriteLane, type ShardKeyspace } from './write-lane';
import type { DocumentWrite } from './write-step';
import { retryInPlace, type InPlaceRetryOptions } from '../faults/retry-in-place';
import { describeFault, isTransientFault, worthRunningAgain } from '../faults/transient';
import { isShardClaimLost } from '../shards/claim-fence';

/**
 * Cluster-time ordering between workers that each read one shard's stream (a per-shard sync;
 * shards/watermark-gate.ts). Absent for a lone worker, which reads the whole source in order.
 */
export interface ApplyGate {
  /** An event at `time` may be applied now (no round trip). */
  allows(time: Timestamp): boolean;
  /**
   * Waits until it may; `own`: this worker's DDL at `time` (the lanes are drained). `drain`
   * applies what was read before `time`, when another shard's DDL requires it.
   */
  admit(
    time: Timestamp,
    signal: AbortSignal,
    own?: { token: string },
    drain?: () => Promise<void>,
  ): Promise<void>;
  /** Announces a DDL read from this worker's stream, before the read mark passes it. */
  announce(token: string, clusterTime: Timestamp, event: ChangeEvent): Promise<void>;
  markApplied(token: string): Promise<void>;
  noteRead(time: Timestamp | undefined): void;
  noteApplied(time: Timestamp | undefined): void;
  /** An empty read: an idle shard may need moving on. */
  idle(): void;
  /** This worker's share of the source's key space (moves between shards: write-lane.ts). */
  readonly keyspace: ShardKeyspace;
}

/**
 * Told of what change application changed on the destination (the incremental verifier's dirty
 * set): each document after the write batch holding it landed, each DDL after it took effect.
 * Called on the hot path: implementations must be cheap and must not throw.
 */
export interface AppliedWrites {
  /** `identity`: documentIdentity() of the document (namespace + canonical `_id`). */
  document(ns: Namespace, id: unknown, identity: string): void;
  ddl(event: ChangeEvent): void;
  /**
   * While it runs, change application hands over a way to rewrite one document from the
   * source's current version (`null` once it stops): see DocumentRepair.
   */
  repairs?(repair: DocumentRepair | null): void;
}

/**
 * Queues a lookup of the document `{_id: id}` in its write lane: the source's current version
 * replaces the destination's (or the destination's is removed when the source has none). In the
 * lane, it is ordered with the document's change events; the events after it are applied on top,
 * as after any lookup, so the document converges. Returns false when it cannot be queued now
 * (stopping, failed, lanes being resized). A per-shard worker offers none (`run`): another
 * shard may own the document's current version.
 */
export type DocumentRepair = (
  ns: Namespace,
  id: unknown,
  identity: string,
  collection: {
    /** The source collection's UUID (hex): the lookup reads that very collection. */
    uuid?: string;
    /** The destination collection's shard key fields, when it is sharded (see DocumentWrite). */
    shardKeyFields?: string[];
  },
) => boolean;

export interface ChangeApplierOptions {
  feed: ChangeFeed;
  writer: ChangeWriter;
  lookup: DocumentLookup;
  checkpoints: CheckpointStore;
  /** Routes document events by collection UUID and applies DDL (exactly once) with its metadata. */
  router: EventRouter;
  /** T0: the source cluster time read before the copy; used when no checkpoint exists yet. */
  startAtOperationTime: Timestamp;
  /**
   * Most parallel write lanes (default DEFAULT_LANES, 8). Lanes overlap destination round trips,
   * but each splits the writes it is given into its own bulks: spread over more lanes than the
   * load fills, the
   * same writes cost more commands, and every command costs CPU on the destination and here. So
   * the applier uses as few lanes as keep up: from `minLanes` it doubles the lanes in use while
   * its bulks average at least LANE_GROW_AT writes (the load fills them), and halves them while
   * they average fewer than LANE_SHRINK_BELOW, judged once a second.
   */
  lanes?: number;
  /** Fewest lanes in use (default 1). Equal to `lanes`, the count is fixed. */
  minLanes?: number;
  /** Persist the resume point at least this often while it moves (default 1000 ms)... */
  checkpointIntervalMs?: number;
  /** ...or after this many applied events, whichever comes first (default 5000). */
  checkpointEveryEvents?: number;
  /** Stop reading while this many events are read but not applied (default 20000). */
  maxInFlight?: number;
  /** buildIndexes mode of the job, strict field order... */
  translation?: TranslationOptions;
  now?: () => number;
  /**
   * Transient failures of one write, lookup, checkpoint or stream read are retried where they
   * happened (the stream is reopened after the last batch read) before they end the run.
   */
  retry?: InPlaceRetryOptions;
  /** Per-shard sync: the cluster-time order across workers. */
  gate?: ApplyGate;
  /** Told of every document written and DDL applied (the embedded verifier). */
  appliedWrites?: AppliedWrites;
}

export interface ApplierStats {
  running: boolean;
  totalEventsApplied: number;
  ignoredEvents: number;
  /** Documents made exact from the source after the halves of a move between shards met. */
  movesRepaired: number;
  /** Events read and not yet applied. */
  pendingEvents: number;
  /** Write lanes in use now (see ChangeApplierOptions.lanes). */
  activeLanes: number;
  /** Cluster time of the latest applied event. */
  lastAppliedEventTime?: Timestamp;
  /** Cluster time up to which everything is applied (includes idle high-water marks). */
  appliedTime?: Timestamp;
  lastCheckpointAt?: Date;
  failure?: unknown;
}

const ABORTED = Symbol('aborted');

/** Most write lanes unless tuned (ChangeApplierOptions.lanes). */
export const DEFAULT_LANES = 8;
/** Bulks averaging at least this many writes: the load fills more lanes (doubled). */
export const LANE_GROW_AT = 256;
/** Bulks averaging fewer writes than this: fewer lanes (halved) send the same writes in fewer commands. */
export const LANE_SHRINK_BELOW = 64;
/** The lanes in use are judged at most this often, and only over this many bulks. */
const LANE_REVIEW_MS = 1000;
const LANE_REVIEW_BULKS = 8;

/**
 * Change event application (the step after the initial copy). Reads the source's cluster-wide
 * change stream from T0 (or the saved resume point), routes document events to lanes by document
 * identity, runs DDL behind a barrier, and persists the resume point only where everything before
 * it is applied.
 *
 * Lifecycle for the state machine: `run(signal)` until the signal aborts (pause/stop: lanes are
 * drained and the checkpoint saved, then it resolves) or a fatal error (it rejects, e.g. with
 * HistoryLostError; the checkpoint saved still never passes an unapplied event). Resume = call
 * `run` again: it continues from the persisted checkpoint.
 */
export class ChangeApplier {
  private tracker = new CheckpointTracker();
  private lanes: WriteLane[] = [];
  /** Lanes in use: documents are routed over the first `activeLanes` of `lanes`. */
  private activeLanes = 1;
  /** Bulks sent and the writes they held since the lanes in use were last judged. */
  private bulks = 0;
  private bulkWrites = 0;
  private lanesReviewedAt = 0;
  private running = false;
  private failure: unknown;
  private totalApplied = 0;
  private ignored = 0;
  /** Documents made exact from the source after a move's halves met (per-shard workers). */
  private movesRepaired = 0;
  private lastEventTime: Timestamp | undefined;
  private startTime: Timestamp;
  private lastSavedToken: unknown;
  private lastSaveAt = 0;
  private appliedAtLastSave = 0;
  private lastCheckpointAt: Date | undefined;
  private saving: Promise<void> = Promise.resolve();
  private backgroundSave = false;
  private waiters = new Set<() => void>();
  /**
   * Per-shard: the time of the event this worker waits to apply, everything read before it
   * applied (its lanes drained). A drain to a point before it is complete.
   */
  private blockedAt: Timestamp | undefined;
  /** Aborts when the run fails (a lane's write): stops a wait at the shard watermark. */
  private failed = new AbortController();
  /** The lanes in use are being resized (drained first): nothing may be queued beside events. */
  private resizing = false;
  /** The current run's signal: once it aborts, the lanes drain and take nothing new. */
  private runSignal: AbortSignal | undefined;

  constructor(private readonly options: ChangeApplierOptions) {
    this.startTime = options.startAtOperationTime;
  }

  stats(): ApplierStats {
    return {
      running: this.running,
      totalEventsApplied: this.totalApplied,
      ignoredEvents: this.ignored,
      movesRepaired: this.movesRepaired,
      pendingEvents: this.tracker.pending,
      activeLanes: this.activeLanes,
      lastAppliedEventTime: this.lastEventTime,
      appliedTime: this.appliedTime,
      lastCheckpointAt: this.lastCheckpointAt,
      failure: this.failure,
    };
  }

  /** Lag for progress; null before anything is known. */
  lagSeconds(sourceLatest: Timestamp): number | null {
    return lagSeconds(sourceLatest, this.appliedTime);
  }

  get appliedTime(): Timestamp | undefined {
    return this.tracker.safePosition?.clusterTime ?? this.startTime;
  }

  async run(signal: AbortSignal): Promise<void> {
    if (this.running) throw new ApplyError('the change applier is already running', false);
    this.running = true;
    this.runSignal = signal;
    this.failure = undefined;
    this.failed = new AbortController();
    let cursor: ChangeFeedCursor | undefined;
    try {
      const saved = await this.options.checkpoints.load();
      const start: StartPoint = saved
        ? { resumeAfter: saved.resumeToken }
        : { startAtOperationTime: this.options.startAtOperationTime };
      if (saved?.clusterTime) this.startTime = saved.clusterTime;
      this.tracker = new CheckpointTracker(
        saved ? { token: saved.resumeToken, clusterTime: saved.clusterTime } : undefined,
      );
      this.lastSavedToken = saved?.resumeToken;
      this.lanes = Array.from({ length: Math.max(1, this.options.lanes ?? DEFAULT_LANES) }, () =>
        this.newLane(),
      );
      this.activeLanes = this.fewestLanes();
      this.bulks = this.bulkWrites = 0;
      this.lanesReviewedAt = (this.options.now ?? Date.now)();
      this.tracker.onAdvance(() => {
        this.options.gate?.noteApplied(this.tracker.safePosition?.clusterTime);
        this.notify();
      });

      cursor = await this.openFeed(start, signal);
      if (!this.options.gate) this.options.appliedWrites?.repairs?.(this.repair);
      // Where the stream is reopened after a transient read failure: after the last batch,
      // every event of which is dispatched (lanes hold the ones not yet written).
      let readPosition = start;
      let readFailures = 0;
      while (!signal.aborted && this.failure === undefined) {
        if (!(await this.waitForRoom(signal))) break;
        let batch;
        try {
          batch = await raceAbort(cursor.next(), signal);
        } catch (error) {
          if (!isTransientFault(error) || ++readFailures > (this.options.retry?.attempts ?? 5))
            throw error;
          this.options.retry?.onRetry?.({
            what: 'change stream read',
            attempt: readFailures,
            delayMs: 0,
            error,
          });
          await cursor.close().catch(() => undefined);
          cursor = undefined;
          cursor = await this.openFeed(readPosition, signal);
          continue;
        }
        if (batch === ABORTED) break;
        readFailures = 0;
        const lastEvent = batch.events[batch.events.length - 1];
        if (batch.resumeToken) readPosition = { resumeAfter: batch.resumeToken };
        else if (lastEvent) readPosition = { resumeAfter: lastEvent._id };
        const gate = this.options.gate;
        if (gate) await this.announceBatch(gate, batch.events, batch.highWaterTime);
        let batchTime: Timestamp | undefined;
        for (const event of batch.events) {
          if (this.failure !== undefined) break;
          const position = positionOf(event);
          batchTime = maxTimestamp(batchTime, position.clusterTime);
          if (gate && position.clusterTime && !gate.allows(position.clusterTime)) {
            // Another shard's read mark or DDL holds this event. Waiting for read marks lets
            // the lanes write on; a DDL before it first has every earlier event applied (its
            // worker waits for this worker's applied mark to pass it).
            this.blockedAt = position.clusterTime;
            this.notify();
            try {
              await gate.admit(
                position.clusterTime,
                AbortSignal.any([signal, this.failed.signal]),
                undefined,
                () => this.drainLanes(),
              );
            } catch (error) {
              if (signal.aborted || this.failure !== undefined) break;
              this.fail(locate(error, event, position));
              break;
            } finally {
              this.blockedAt = undefined;
            }
          }
          const barrier = this.dispatch(event, position, signal);
          if (barrier) await barrier;
        }
        if (this.failure !== undefined) break;
        if (batch.resumeToken) {
          this.tracker.addDone({
            token: batch.resumeToken,
            clusterTime: maxTimestamp(batch.highWaterTime, batchTime),
          });
        }
        // Not awaited: a save is one destination round trip the stream read need not wait for.
        this.checkpointInBackground();
      }
      await this.drainLanes();
      if (this.failure !== undefined) throw this.failure;
      await this.maybeCheckpoint(true);
    } catch (error) {
      this.failure ??= error;
      // Finish what lanes hold and keep the (always safe) position they reached — unless this
      // process lost its shard: then it writes nothing more, not even its resume point.
      if (!isShardClaimLost(this.failure)) {
        await this.drainLanes().catch(() => undefined);
        await this.maybeCheckpoint(true).catch(() => undefined);
      }
      throw this.failure;
    } finally {
      this.options.appliedWrites?.repairs?.(null);
      await cursor?.close().catch(() => undefined);
      this.running = false;
      this.notify();
    }
  }

  /**
   * Commit support: resolves once everything up to `commitPoint` (a source
   * cluster time read after the source was write-blocked) is applied on the destination and the
   * resume point is persisted. Rejects if the applier fails or stops first.
   */
  async waitUntilApplied(commitPoint: Timestamp, signal?: AbortSignal): Promise<void> {
    for (;;) {
      if (this.failure !== undefined) throw this.failure;
      const applied = this.tracker.safePosition?.clusterTime;
      // Waiting at an event past the point with everything read before it applied.
      const blockedPast =
        this.blockedAt !== undefined &&
        compareTimestamps(this.blockedAt, commitPoint) > 0 &&
        this.tracker.pending === 0;
      if ((applied && compareTimestamps(applied, commitPoint) >= 0) || blockedPast) {
        await this.maybeCheckpoint(true);
        return;
      }
      if (!this.running) throw new ApplyError('the change applier is not running', true);
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
      await this.waitForChange(signal);
    }
  }

  /**
   * Per-shard sync: every DDL of a batch is announced before the read mark passes it, and the
   * mark moves to the batch's end (its high-water time on an empty batch).
   */
  private async announceBatch(
    gate: ApplyGate,
    events: ChangeEvent[],
    highWater: Timestamp | undefined,
  ): Promise<void> {
    let last: Timestamp | undefined;
    for (const event of events) {
      const position = positionOf(event);
      last = maxTimestamp(last, position.clusterTime);
      if (!DDL_OPERATION_TYPES.has(event.operationType) || !position.clusterTime) continue;
      await retryInPlace(
        'DDL announcement',
        () => gate.announce(tokenData(position.token), position.clusterTime!, event),
        this.options.retry,
      );
    }
    gate.noteRead(maxTimestamp(highWater, last));
    if (events.length === 0) gate.idle();
  }

  /** Returns a promise only for DDL (a barrier); document events are dispatched synchronously. */
  private dispatch(
    event: ChangeEvent,
    position: StreamPosition,
    signal?: AbortSignal,
  ): Promise<void> | undefined {
    const type = event.operationType;
    try {
      assertApplicable(event);
    } catch (error) {
      this.fail(locate(error, event, position));
      return undefined;
    }
    if (DDL_OPERATION_TYPES.has(type)) {
      const gate = this.options.gate;
      return (async () => {
        await this.drainLanes();
        const token = tokenData(position.token);
        if (gate && position.clusterTime && signal) {
          await gate.admit(position.clusterTime, signal, { token });
        }
        const seq = this.tracker.add(position);
        await this.options.router.applyDdl(event, position);
        this.options.appliedWrites?.ddl(event);
        if (gate)
          await retryInPlace('DDL release', () => gate.markApplied(token), this.options.retry);
        this.applied([seq], position.clusterTime);
      })().catch((error) => this.fail(locate(error, event, position)));
    }
    let translation;
    let route: ReturnType<EventRouter['route']> | undefined;
    try {
      route = this.options.router.route(event);
      if ('ignore' in route) {
        translation = { kind: 'ignore' as const, reason: route.ignore };
      } else {
        translation = translateEvent(
          { ...event, ns: route.ns },
          () => true,
          this.options.gate
            ? { ...this.options.translation, perShard: true }
            : this.options.translation,
          route.key,
        );
      }
    } catch (error) {
      this.fail(locate(error, event, position));
      return undefined;
    }
    if (translation.kind === 'ignore') {
      this.ignored += 1;
      this.tracker.addDone(position);
      return undefined;
    }
    if (translation.kind === 'document') {
      if (route && 'key' in route) {
        if (route.shardKeyFields) translation.write.shardKeyFields = route.shardKeyFields;
        if (/^[0-9a-f]{32}$/.test(route.key)) translation.write.collectionUuid = route.key;
      }
      if (this.orphan(event, translation.write.collectionUuid)) {
        this.ignored += 1;
        this.tracker.addDone(position);
        return undefined;
      }
      const seq = this.tracker.add(position);
      const write = translation.write;
      const lanes = this.reviewLanes();
      if (lanes === this.activeLanes) {
        this.lanes[laneOf(write.identity, lanes)].push(write, seq);
        return undefined;
      }
      // A document keeps its lane while it has writes pending: the count changes only once
      // every lane is drained (a barrier, like DDL's, at most once per review).
      this.resizing = true;
      return this.drainLanes().then(
        () => {
          this.resizing = false;
          this.activeLanes = lanes;
          this.lanes[laneOf(write.identity, lanes)].push(write, seq);
        },
        (error: unknown) => this.fail(error),
      );
    }
    return undefined;
  }

  /** See DocumentRepair. Not counted as an applied event and holds back no checkpoint. */
  private readonly repair: DocumentRepair = (ns, id, identity, collection) => {
    // Never once the run is stopping: its lanes drain before it ends (the commit's `drained`
    // step stops it), and a repair queued after that drain could land after the destination
    // opens, over the application's writes.
    if (!this.running || this.runSignal?.aborted || this.failure !== undefined || this.resizing)
      return false;
    const write: DocumentWrite = {
      ns,
      identity,
      steps: [{ kind: 'lookup', documentKey: { _id: id } }],
      supersedes: true,
    };
    if (collection.uuid !== undefined) write.collectionUuid = collection.uuid;
    if (collection.shardKeyFields) write.shardKeyFields = collection.shardKeyFields;
    this.lanes[laneOf(identity, this.activeLanes)].push(write, null);
    return true;
  };

  private fewestLanes(): number {
    return Math.min(this.lanes.length, Math.max(1, this.options.minLanes ?? 1));
  }

  /** The lanes to use from now on (see ChangeApplierOptions.lanes). */
  private reviewLanes(): number {
    const most = this.lanes.length;
    const fewest = this.fewestLanes();
    if (fewest === most || this.bulks < LANE_REVIEW_BULKS) return this.activeLanes;
    const now = (this.options.now ?? Date.now)();
    if (now - this.lanesReviewedAt < LANE_REVIEW_MS) return this.activeLanes;
    const perBulk = this.bulkWrites / this.bulks;
    this.lanesReviewedAt = now;
    this.bulks = this.bulkWrites = 0;
    if (perBulk >= LANE_GROW_AT) return Math.min(most, this.activeLanes * 2);
    if (perBulk < LANE_SHRINK_BELOW) return Math.max(fewest, Math.floor(this.activeLanes / 2));
    return this.activeLanes;
  }

  /**
   * A per-shard worker's event for a document its shard does not own (by the T0 chunk map): a
   * write made on the shard directly, outside its chunks (an orphan). The routers never show
   * such a document, and no worker copies it: it is left out here too.
   */
  private orphan(event: ChangeEvent, collectionUuid: string | undefined): boolean {
    const keyspace = this.options.gate?.keyspace;
    if (!keyspace || !event.documentKey || !event.ns?.coll) return false;
    const fields = keyspace.keyFields(collectionUuid);
    // Unsharded at T0, or a documentKey without the whole shard key: never judged an orphan.
    if (!fields || !fields.every((f) => f in event.documentKey!)) return false;
    return !keyspace.owns(
      { db: event.ns.db, coll: event.ns.coll },
      collectionUuid,
      event.documentKey,
    );
  }

  /** Opens the stream, retrying a transient failure in place (a failover while resuming). */
  private openFeed(start: StartPoint, signal: AbortSignal): Promise<ChangeFeedCursor> {
    return retryInPlace(
      'change stream open',
      () => this.options.feed.open(start),
      this.options.retry,
      signal,
    );
  }

  private newLane(): WriteLane {
    return new WriteLane({
      writer: this.options.writer,
      lookup: this.options.lookup,
      onApplied: (seqs) => this.applied(seqs),
      onError: (error) => this.fail(error),
      retry: this.options.retry,
      ...(this.options.gate ? { keyspace: this.options.gate.keyspace } : {}),
      onMoveRepaired: (n) => (this.movesRepaired += n),
      onBulk: (writes) => {
        this.bulks += 1;
        this.bulkWrites += writes;
      },
      ...(this.options.appliedWrites ? { appliedWrites: this.options.appliedWrites } : {}),
    });
  }

  private applied(seqs: number[], time?: Timestamp): void {
    for (const seq of seqs) this.tracker.complete(seq);
    this.totalApplied += seqs.length;
    const safe = this.tracker.safePosition?.clusterTime;
    this.lastEventTime = maxTimestamp(this.lastEventTime, time ?? safe);
  }

  private async drainLanes(): Promise<void> {
    await Promise.all(this.lanes.map((lane) => lane.drain()));
  }

  private fail(error: unknown): void {
    this.failure ??= error;
    this.failed.abort();
    this.notify();
  }

  /** Backpressure: bounded memory whatever the source's write rate. */
  private async waitForRoom(signal: AbortSignal): Promise<boolean> {
    const limit = this.options.maxInFlight ?? 20000;
    while (this.tracker.outstanding >= limit) {
      if (this.failure !== undefined || signal.aborted) return false;
      await this.waitForChange(signal);
    }
    return true;
  }

  /** A due save, at most one at a time; its failure (after in-place retries) ends the run. */
  private checkpointInBackground(): void {
    if (this.backgroundSave) return;
    this.backgroundSave = true;
    this.maybeCheckpoint(false)
      .catch((error) => this.fail(error))
      .finally(() => (this.backgroundSave = false));
  }

  private async maybeCheckpoint(force: boolean): Promise<void> {
    const position = this.tracker.safePosition;
    if (!position || position.token === this.lastSavedToken) return;
    const now = (this.options.now ?? Date.now)();
    const due =
      force ||
      now - this.lastSaveAt >= (this.options.checkpointIntervalMs ?? 1000) ||
      this.totalApplied - this.appliedAtLastSave >= (this.options.checkpointEveryEvents ?? 5000);
    if (!due) return;
    // Serialised: the run loop and a commit may both ask; saves must not reorder.
    // A failed save already failed the run; a later (forced) save tries again.
    const previous = this.saving.catch(() => undefined);
    this.saving = previous.then(async () => {
      const latest = this.tracker.safePosition!;
      if (latest.token === this.lastSavedToken) return;
      const savedAt = new Date(now);
      await retryInPlace(
        'checkpoint save',
        () =>
          this.options.checkpoints.save({
            resumeToken: latest.token,
            clusterTime: latest.clusterTime,
            savedAt,
          }),
        this.options.retry,
      ).catch((error: unknown) => {
        throw checkpointFailed(error);
      });
      this.lastSavedToken = latest.token;
      this.lastSaveAt = now;
      this.appliedAtLastSave = this.totalApplied;
      this.lastCheckpointAt = savedAt;
    });
    await this.saving;
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }

  private waitForChange(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

/**
 * Names where a failure happened (the event's namespace and cluster time) on the error itself,
 * so progress and the persisted failure can say it without changing the error's class.
 */
function locate(error: unknown, event: ChangeEvent, position: StreamPosition): unknown {
  if (error instanceof Error) {
    const located = error as Error & { namespace?: string; eventTime?: Timestamp };
    if (located.namespace === undefined && event.ns?.db !== undefined) {
      located.namespace =
        event.ns.coll !== undefined ? `${event.ns.db}.${event.ns.coll}` : event.ns.db;
    }
    located.eventTime ??= position.clusterTime;
  }
  return error;
}

/** Resume token `_data` (hex KeyString: lexicographic order is stream order). */
export function tokenData(token: unknown): string {
  const data = (token as { _data?: unknown } | null)?._data;
  return typeof data === 'string' ? data : JSON.stringify(data ?? token);
}

function positionOf(event: ChangeEvent): StreamPosition {
  return { token: event._id, clusterTime: event.clusterTime ?? resumeTokenTime(event._id) };
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  // A batch abandoned by an abort is never applied nor checkpointed; only silence its error.
  promise.catch(() => undefined);
  if (signal.aborted) return Promise.resolve(ABORTED);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** A failed save as CheckpointSaveError (named in progress), retryable unless refused with a code. */
function checkpointFailed(error: unknown): unknown {
  if (error instanceof ApplyError) return error;
  return new CheckpointSaveError(
    `saving the change stream's resume point in the destination's sync metadata failed: ${describeFault(error)}`,
    worthRunningAgain(error),
    { cause: error },
  );
}
