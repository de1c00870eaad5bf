import type { Timestamp } from 'bson';
import { HistoryLostError } from '../apply/errors';
import type { Clock } from '../ports/clock';
import type { EngineLogger } from '../ports/engine-logger';
import type { HistoryWindow } from '../ports/source-cluster';
import type { JobSession } from './job-session';

export interface HistoryGuardOptions {
  /** Pause between two looks at the source's oplog window (default 10 s). */
  intervalMs?: number;
  /**
   * Warn when the expected remaining copy time (or the change-application lag) exceeds this
   * share of the time the start point still stays in the source's history (default 0.5).
   */
  warnRatio?: number;
}

/** What the guard needs to know of the run at each look. */
export interface GuardedRun {
  /** The change application has started (its resume point, not T0, is what must survive). */
  applying: boolean;
  lagTimeSeconds: number | null;
}

const seconds = (ms: number) => Math.max(0, Math.round(ms / 1000));
const tsSeconds = (ts: Timestamp) => ts.getHighBits() >>> 0;

/**
 * Oplog window guard: at the start of a run and every `intervalMs` while it goes on, compares
 * the source's change history (oldest vs newest oplog entry) with what the sync still needs
 * from it. While copying, T0 must stay in the history until change application opens its
 * stream: the copy's expected remaining time (bytes left at the copy rate measured so far) is
 * compared with how long T0 stays, i.e. the window minus T0's age. While applying, the lag is
 * compared with the window. A small margin is a progress warning (and a log line when it
 * appears); T0 already gone while copying fails the run with HistoryLost at once, instead of
 * after the copy. On a sharded source every shard's oplog is looked at and the tightest one
 * decides (T0 must be in each). A source whose history cannot be read is not guarded.
 *
 * The window's time span is how long the history lasts only once the oplog is full and losing
 * its oldest entries as new ones arrive. An oplog that has not filled yet (a new cluster, a
 * test cluster loaded just before the sync) keeps everything, however short its span: no
 * warning is raised for a history until this guard has seen its oldest entry move (mongod
 * truncates a full oplog in steps of about a hundredth of its size, so a history that lasts
 * minutes moves within seconds). T0 gone from the history fails the run whatever the span.
 */
export class HistoryGuard {
  /** Current warnings (progress `warnings`), replaced at every look. */
  warnings: string[] = [];
  /**
   * Seconds between the oldest entry of the source's history and the oldest one the sync still
   * needs (T0 while copying, the resume point while applying), tightest shard, as of the last
   * look; null before the first look or when the history cannot be read (progress
   * `estimatedOplogTimeRemaining`). While that history has not been seen losing entries this is
   * a lower bound (`oplogTimeRemainingIsLowerBound`): nothing is truncated yet.
   */
  oplogTimeRemainingSeconds: number | null = null;
  /** `oplogTimeRemainingSeconds` comes from a history not seen truncating: at least that long. */
  oplogTimeRemainingIsLowerBound = false;
  /** The oldest entry of each history (by shard; '' for a replica set) at its first look. */
  private readonly firstOldest = new Map<string, Timestamp>();
  /** Copy rate reference: the first look that saw copied bytes in this process. */
  private rateFrom: { at: number; bytes: number } | null = null;
  private unsupported = false;

  constructor(
    private readonly options: HistoryGuardOptions & { logger: EngineLogger; clock: Clock },
  ) {}

  /**
   * Looks every interval until `signal` aborts; calls `lost` (once, then stops) when T0 is
   * gone from the source's history before change application has started.
   */
  async watch(
    session: JobSession,
    signal: AbortSignal,
    run: () => GuardedRun,
    lost: (error: HistoryLostError) => void,
  ): Promise<void> {
    const interval = this.options.intervalMs ?? 10_000;
    while (!signal.aborted && !this.unsupported) {
      try {
        const failure = await this.check(session, run());
        if (failure) {
          if (!signal.aborted) lost(failure);
          return;
        }
      } catch (error) {
        // Looking is best effort: a failed read is retried at the next look.
        this.options.logger.debug('reading the source oplog window failed', {
          error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
        });
      }
      await this.options.clock.sleep(interval, signal).catch(() => undefined);
    }
  }

  /** One look; returns the HistoryLost failure when T0 is already gone. */
  async check(session: JobSession, run: GuardedRun): Promise<HistoryLostError | null> {
    const windows = await session.source.historyWindows();
    if (!windows || windows.length === 0) {
      this.unsupported = true;
      this.warnings = [];
      this.oplogTimeRemainingSeconds = null;
      this.oplogTimeRemainingIsLowerBound = false;
      return null;
    }
    for (const window of windows) {
      const shard = window.shard ?? '';
      if (!this.firstOldest.has(shard)) this.firstOldest.set(shard, window.oldest);
    }
    // A sharded source: every shard's oplog must keep what the sync needs; the tightest decides.
    const { job } = session;
    // While applying, the resume point (not T0) must survive: the span decides. No T0 yet (a
    // per-shard follower before it adopts the coordinator's plan): nothing to keep either.
    const t0 = run.applying || !job.t0 || job.t0.isZero() ? undefined : job.t0;
    if (t0) {
      const gone = windows.find((w) => w.oldest.greaterThan(t0));
      if (gone) return this.t0Lost(t0, gone);
    }
    const tightest = windows.reduce((a, b) =>
      this.headroom(b, t0) < this.headroom(a, t0) ? b : a,
    );
    return this.checkWindow(session, run, tightest, t0);
  }

  /** How long the sync can still rely on `window`: T0's remaining stay, or the window's span. */
  private headroom(window: HistoryWindow, t0: Timestamp | undefined): number {
    const span = Math.max(0, window.newestWallMs - window.oldestWallMs);
    if (!t0) return span;
    return Math.max(0, span - Math.max(0, window.newestWallMs - tsSeconds(t0) * 1000));
  }

  private t0Lost(t0: Timestamp, window: HistoryWindow): HistoryLostError {
    return new HistoryLostError(
      `the source's change history${window.shard ? ` on shard ${window.shard}` : ''} no longer reaches the sync's start point T0 (${t0.toString()}): its oldest entry is ${window.oldest.toString()}; enlarge the source's oplog (replSetResizeOplog) and start the sync again`,
      286,
    );
  }

  private checkWindow(
    session: JobSession,
    run: GuardedRun,
    window: HistoryWindow,
    t0: Timestamp | undefined,
  ): HistoryLostError | null {
    const { job } = session;
    const ratio = this.options.warnRatio ?? 0.5;
    const where = window.shard ? ` (shard ${window.shard})` : '';
    const windowMs = Math.max(0, window.newestWallMs - window.oldestWallMs);
    const warnings: string[] = [];
    if (t0) {
      if (window.oldest.greaterThan(t0)) return this.t0Lost(t0, window);
      const now = this.options.clock.now();
      const copied = session.tally.copiedBytes;
      if (!this.rateFrom || copied < this.rateFrom.bytes)
        this.rateFrom = { at: now, bytes: copied };
      const elapsed = now - this.rateFrom.at;
      const rate = elapsed >= 1000 ? (copied - this.rateFrom.bytes) / elapsed : 0; // bytes/ms
      const remaining = Math.max(0, (job.estimatedTotalBytes ?? 0) - copied);
      const t0AgeMs = Math.max(0, window.newestWallMs - tsSeconds(t0) * 1000);
      const headroomMs = Math.max(0, windowMs - t0AgeMs);
      this.oplogTimeRemainingSeconds = seconds(headroomMs);
      if (rate > 0 && remaining > 0) {
        const expectedMs = remaining / rate;
        if (expectedMs > headroomMs * ratio) {
          warnings.push(
            `OplogWindowSmall: the copy is expected to take about ${seconds(expectedMs)} s more (${remaining} bytes at ${Math.round(rate * 1000)} B/s), but the source's change history${where} (about ${seconds(windowMs)} s) keeps T0 for only about ${seconds(headroomMs)} s more; if T0 leaves the history first the sync fails with HistoryLost — enlarge the source's oplog (replSetResizeOplog) or reduce its write load`,
          );
        }
      }
    } else {
      this.oplogTimeRemainingSeconds = seconds(windowMs - (run.lagTimeSeconds ?? 0) * 1000);
    }
    if (!t0 && run.applying && run.lagTimeSeconds !== null) {
      if (run.lagTimeSeconds * 1000 > windowMs * ratio) {
        warnings.push(
          `OplogWindowSmall: change application is ${run.lagTimeSeconds} s behind the source and its change history${where} holds only about ${seconds(windowMs)} s; if the lag outgrows it the sync fails with HistoryLost — enlarge the source's oplog (replSetResizeOplog) or reduce its write load`,
        );
      }
    }
    // Not seen losing entries: the span is not how long the history lasts (see the class). The
    // tightest history decides the figure: if it is a lower bound, every history keeps at least
    // that long (a truncating one's estimate is larger); if not, it is the smallest.
    const truncating = this.truncating(window);
    this.oplogTimeRemainingIsLowerBound = !truncating;
    if (!truncating) warnings.length = 0;
    if (warnings.length > 0 && this.warnings.length === 0) {
      this.options.logger.warn('source oplog window margin is small', {
        warning: warnings[0],
        oldest: window.oldest.toString(),
        newest: window.newest.toString(),
        ...(window.shard ? { shard: window.shard } : {}),
      });
    }
    this.warnings = warnings;
    return null;
  }

  /** `window`'s oldest entry moved since this guard first looked at it: the oplog truncates. */
  private truncating(window: HistoryWindow): boolean {
    const first = this.firstOldest.get(window.shard ?? '');
    return first !== undefined && window.oldest.greaterThan(first);
  }
}
