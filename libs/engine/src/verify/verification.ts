import { copyOf, type CopyStatus } from '../catalog/namespace-catalog';
import { isCopied } from '../progress/namespace-detail';
import type { VerificationMode } from '@sync/contracts';
import { defaultIndexName } from '../prepare/sharding-plan';
import { createdByCopy } from '../prepare/destination-preparer';
import type { AppliedWrites, DocumentRepair } from '../apply/change-applier';
import type { ChangeEvent, Namespace } from '../apply/change-event';
import type { JobSession } from '../job/job-session';
import type { CatalogWatch } from '../job/catalog-watch';
import type { Clock } from '../ports/clock';
import type { EngineLogger } from '../ports/engine-logger';
import type { CopyPhase, JobRecord, NamespaceRecord, PartitionRecord } from '../ports/job-store';
import { retryInPlace, type InPlaceRetryOptions } from '../faults/retry-in-place';
import type { IdRange } from '../ports/source-cluster';
import {
  DirtyTracker,
  type Backlog,
  type DirtyId,
  type DirtyLimits,
  type NamespaceState,
  type NamespaceWork,
  type RangeState,
  type TrackedNamespace,
  COPY_BACKLOG_REUSE_MS,
} from './dirty-tracker';
import {
  checkDocuments,
  checkMetadata,
  checkRange,
  IDS_PER_READ,
  IndexListingCache,
  ListingCache,
  type NamespaceCheckOptions,
  type NamespaceVerdict,
  type VerifiableCluster,
  type VerifyTarget,
} from './namespace-verifier';
import { runPool } from './verify-pass';
import { documentIdentity } from '../apply/doc-key';
import { SharedView } from './shared-view';
import { idText } from './document-diff';
import { topologyOf, type CopyShare } from '../shards/topology';

/**
 * `disabled` (start with verification.enabled false), `pending` (copy not done), `live` (while
 * change events are applied: differences are re-checked, never final), `final` (the commit's
 * pass, source drained), `passed`, `failed` (the commit stops: VerificationFailed).
 */
export type VerificationPhase = 'disabled' | 'pending' | 'live' | 'final' | 'passed' | 'failed';

export interface VerificationMismatch {
  namespace: string;
  problems: string[];
  /** Sample `_id`s (canonical Extended JSON). */
  ids: string[];
}

/** What the verifier still has to read (progress `verification.backlog`). */
export interface VerificationBacklog {
  /** Documents change application wrote that no check has found equal yet. */
  dirtyDocuments: number;
  /** `_id` ranges not known equal: written past the dirty-set caps, or different when read. */
  dirtyRanges: number;
  /** Copied ranges not checked once yet. */
  uncheckedRanges: number;
  /** Seconds since the oldest write no check has seen yet. */
  oldestDirtySeconds: number;
}

/** What the commit's final pass read. */
export interface FinalPassFigures {
  /** `skipped`: verification.enabled false, the commit did not verify. */
  mode: VerificationMode | 'skipped';
  namespaces: number;
  /** Ranges digested whole (never checked, dirty, or every range in `full` mode). */
  rangesRead: number;
  /** Source documents the pass read (digested ranges and re-checked `_id`s). */
  documentsRead: number;
  ms: number;
}

/** The `verification` section of progress (mergeable: counts add up). */
export interface VerificationStatus {
  phase: VerificationPhase;
  namespacesTotal: number;
  namespacesVerified: number;
  /** Namespaces whose last check found a difference. */
  mismatches: number;
  /** Live pass: namespaces that differed while changes were applied, to be checked again. */
  pendingRecheck: number;
  /** The first namespaces that differ, with sample `_id`s. */
  samples: VerificationMismatch[];
  /** How the commit's final pass reads documents (the start request's `verification.mode`). */
  mode?: VerificationMode;
  /** The dirty set: what a check has not seen yet. */
  backlog?: VerificationBacklog;
  /** The live pass has caught up (canCommit waits for it). */
  caughtUp?: boolean;
  /**
   * Documents the live pass found stuck different (see `DirtyTracker.documentChecked`) and had
   * rewritten from the source's current version, each logged as a warning.
   */
  documentsRepaired?: number;
  /** Verifier reads retried in place after a transient failure, and the last one. */
  retriedReads?: number;
  lastRetry?: string;
  /** Set once the commit's `verified` step ran (or skipped it). */
  finalPass?: FinalPassFigures;
}

export interface VerificationOptions {
  logger: EngineLogger;
  clock: Clock;
  /** Ranges digested at once by the commit's final pass (default 4; the live pass reads one). */
  concurrency?: number;
  /**
   * The live pass looks for dirty ranges and documents every `min(recheckMs, 0.5 s)`; what differed
   * is re-checked after a pause growing from `recheckMs` (default 5 s) to 60 s.
   */
  recheckMs?: number;
  /**
   * canCommit waits while a write older than this has not been checked (default 10 s: the live
   * pass checks a write within ~2 s on an idle machine; the margin keeps a loaded one from
   * flapping canCommit, and the final pass reads at most these seconds' writes).
   */
  caughtUpMs?: number;
  /**
   * The live pass checks a written document once its oldest unchecked write is this old
   * (default 1 s): a document written many times a second is read once a second at most.
   */
  settleMs?: number;
  /** Bounds of the dirty set (see DirtyLimits). */
  limits?: DirtyLimits;
  /** Namespaces whose metadata one live check compares (default LIVE_METADATA_SLICE). */
  metadataSlice?: number;
  /** Transient read failures retried in place (tests shorten the backoff). */
  retry?: Pick<InPlaceRetryOptions, 'attempts' | 'baseMs' | 'maxMs'>;
}

const MAX_SAMPLES = 10;

/** Below this a collection's ranges are light work for the live pass. */
export const SMALL_NAMESPACE_BYTES = 1024 * 1024;
/** Small whole collections digested in one read per side (`digestWhole`). */
const DIGEST_BATCH = 50;

/** A small collection's whole range, waiting to be digested with others of its database. */
interface BatchedRange {
  name: string;
  state: NamespaceState;
  target: VerifyTarget;
  range: RangeState;
}

const wholeRange = (range: IdRange) => !('min' in range) && !('max' in range);
/** Light tasks (metadata checks, small collections' ranges) run at once in the live pass. */
const LIGHT_CONCURRENCY = 8;

/**
 * Bytes per read batch of a digest (on each side, per running range). Measured on 50k × 1 KB
 * documents, final pass at concurrency 4: batches of 1000 documents grew the worker's heap by
 * ~95 MB and its RSS by 78–99 MB, batches of 200 by ~15 MB and 0–14 MB, in about the same time.
 * Small batches also hold each emulator/mongod command for less time, so the live pass delays
 * change application's writes less.
 */
const READ_BATCH_BYTES = 200 * 1024;
const MAX_READ_BATCH_DOCUMENTS = 1000;

/** A mismatch found by the commit's final pass: the commit stops and names what differs. */
export class VerificationFailedError extends Error {
  constructor(readonly mismatches: VerificationMismatch[]) {
    const shown = mismatches
      .slice(0, MAX_SAMPLES)
      .map((m) => `${m.namespace}: ${m.problems.slice(0, 5).join('; ')}`);
    const more =
      mismatches.length > MAX_SAMPLES ? `; and ${mismatches.length - MAX_SAMPLES} more` : '';
    super(
      `the destination differs from the source in ${mismatches.length} namespace(s) — ${shown.join(' | ')}${more}`,
    );
    this.name = 'VerificationFailed';
  }
}

export function verificationEnabled(job: JobRecord): boolean {
  return job.request.verification?.enabled !== false;
}

export function verificationMode(job: JobRecord): VerificationMode {
  return job.request.verification?.mode ?? 'incremental';
}

/**
 * A live range check that finds its digests different lists up to this many differing
 * documents, which are then re-checked alone (more: the whole range is re-read later).
 */
const LIVE_LISTED_DIFFERENCES = 1_000;

/**
 * Namespaces whose metadata one live check compares: a cycle with more checks them slice by
 * slice. When a copy of 100,000 small collections ends, all of them are due at once; a heap
 * snapshot then found ~50 MB held by one check's tasks and verdicts (~500 B a namespace).
 */
const LIVE_METADATA_SLICE = 5_000;

/** The live pass pauses at least this many times its last cycle's bookkeeping time. */
const LIVE_BOOKKEEPING_RATIO = 10;

/** DDL that replaces a namespace's documents without document events. */
const REPLACING_DDL = new Set(['drop', 'dropDatabase', 'rename']);

/**
 * The embedded verifier of one job, incremental: every copied `_id` range is checked once by the
 * live pass, then KEPT verified by the writes change application reports (`appliedWrites`):
 * each written document is dirty until a check that started after its write finds both sides
 * byte-equal (past the dirty set's caps, its whole range is). The commit's final pass (after the
 * drain, unique indexes restored, before the destination opens) reads only what is still dirty
 * or never checked, plus every namespace's type, options and indexes; `verification.mode: full`
 * re-reads everything. The dirty set lives in memory: a restarted worker checks every range again.
 */
export class Verification {
  /** Namespaces the live pass found equal on both sides, as of its last cycle. */
  private verifiedCount = 0;
  readonly tracker: DirtyTracker;
  private current: VerificationStatus | null = null;
  private live = false;
  /** Mismatches of the live pass's last checks, by namespace (progress samples). */
  private readonly liveMismatches = new Map<string, VerificationMismatch>();
  private retriedReads = 0;
  private lastRetry: string | null = null;
  /** A DDL made the tracker forget namespaces: the next follow walks the whole catalog. */
  private walkCatalog = false;
  /** Change application's repair while it runs (AppliedWrites.repairs). */
  private repair: DocumentRepair | null = null;
  private repaired = 0;
  private finalFigures: FinalPassFigures | null = null;

  /** What change application reports: documents written, DDL applied. */
  readonly appliedWrites: AppliedWrites = {
    document: (ns: Namespace, id: unknown, identity: string) =>
      this.tracker.markDocument(ns.db, ns.coll, id, identity),
    ddl: (event: ChangeEvent) => {
      const ns = event.ns;
      if (!ns?.db) return;
      if (REPLACING_DDL.has(event.operationType)) {
        this.tracker.invalidate(ns.db, ns.coll);
        if (event.to) this.tracker.invalidate(event.to.db, event.to.coll);
        // The tracker forgot those namespaces, ranges and all; the catalog write that renamed
        // or dropped them may already have been followed (the live pass can run between the
        // two), so the next look walks the whole catalog and gives them their ranges again —
        // else a write to the new name stayed unchecked, holding canCommit.
        this.walkCatalog = true;
      } else {
        this.tracker.metadataChanged(ns.db, ns.coll);
      }
    },
    repairs: (repair: DocumentRepair | null) => {
      this.repair = repair;
    },
  };

  constructor(private readonly options: VerificationOptions) {
    this.tracker = new DirtyTracker(() => options.clock.now(), options.limits);
  }

  /** Progress: the last pass's figures, or what the persisted job says. */
  status(
    job: JobRecord | undefined,
    finalPassDone: boolean,
    session?: JobSession,
  ): VerificationStatus | null {
    if (!job) return null;
    const total = job.namespaces.length;
    const empty = { namespacesTotal: total, mismatches: 0, pendingRecheck: 0, samples: [] };
    if (!verificationEnabled(job)) {
      return {
        phase: 'disabled',
        namespacesVerified: 0,
        ...empty,
        ...(this.finalFigures ? { finalPass: this.finalFigures } : {}),
      };
    }
    const extra = this.extraStatus(job, session);
    if (finalPassDone && this.current?.phase !== 'failed')
      return { phase: 'passed', namespacesVerified: total, ...empty, ...extra };
    return { ...(this.current ?? { phase: 'pending', namespacesVerified: 0, ...empty }), ...extra };
  }

  private extraStatus(job: JobRecord, session?: JobSession): Partial<VerificationStatus> {
    // While the initial copy runs, a second-old backlog (canCommit waits for the copy anyway).
    const backlog: Backlog = this.tracker.backlog(
      job.phase === 'copied' ? 0 : COPY_BACKLOG_REUSE_MS,
    );
    return {
      mode: verificationMode(job),
      backlog: {
        dirtyDocuments: backlog.dirtyDocuments,
        dirtyRanges: backlog.dirtyRanges,
        uncheckedRanges: backlog.uncheckedRanges,
        oldestDirtySeconds: Math.round(backlog.oldestUncheckedMs / 100) / 10,
      },
      caughtUp: this.caughtUp(job, session, backlog),
      retriedReads: this.retriedReads,
      ...(this.repaired > 0 ? { documentsRepaired: this.repaired } : {}),
      ...(this.lastRetry ? { lastRetry: this.lastRetry } : {}),
      ...(this.finalFigures ? { finalPass: this.finalFigures } : {}),
    };
  }

  /**
   * canCommit's verifier condition: while the live pass runs, every copied range checked once,
   * every namespace's options and indexes compared since they last changed (the final pass then
   * compares only what changed after: its work does not grow with the namespace count), and no
   * write older than `caughtUpMs` unchecked. Without a live pass (verification off, a per-shard
   * sync verified by its coordinator at commit, a live pass stopped) nothing to wait for.
   */
  caughtUp(job: JobRecord, session?: JobSession, backlog?: Backlog): boolean {
    if (!verificationEnabled(job) || !this.live) return true;
    return (
      this.followsCatalog(session) &&
      this.tracker.caughtUp(this.caughtUpMs, backlog) &&
      this.tracker.uncheckedMetadata() === 0
    );
  }

  /**
   * The live pass has looked at the catalog as it is now. A copy that ended (or a partition, a
   * DDL) since its last look may hold ranges the tracker does not know yet: a small collection
   * planned and copied between two looks would otherwise count as checked before any read.
   */
  private followsCatalog(session?: JobSession): boolean {
    const memo = this.followed;
    if (!memo || (session && memo.session !== session)) return false;
    return !memo.session.catalogChangedFor(memo.watch);
  }

  /** The commit's pass: throws VerificationFailedError when anything differs. */
  async finalPass(session: JobSession, signal: AbortSignal): Promise<void> {
    const mode = verificationMode(session.job);
    if (!verificationEnabled(session.job)) {
      this.finalFigures = {
        mode: 'skipped',
        namespaces: 0,
        rangesRead: 0,
        documentsRead: 0,
        ms: 0,
      };
      this.options.logger.warn('verification: disabled by the start request; the commit skips it');
      return;
    }
    const began = this.options.clock.now();
    const targets = this.follow(session, true);
    const work = this.tracker.plan({
      all: true,
      full: mode === 'full',
      recheckMs: this.recheckMs,
    });
    const figures = { rangesRead: 0, documentsRead: 0 };
    const verdicts = await this.check(
      'final',
      session,
      targets,
      this.metadataToRecheck(session, targets, mode === 'full'),
      work,
      signal,
      figures,
    );
    const failed = verdicts.filter((v) => v.problems.length > 0);
    this.finalFigures = {
      mode,
      namespaces: verdicts.length,
      ...figures,
      ms: this.options.clock.now() - began,
    };
    this.options.logger.info('verification: final pass done', {
      ...this.finalFigures,
      mismatches: failed.length,
    });
    this.current = { ...this.current!, phase: failed.length > 0 ? 'failed' : 'passed' };
    if (failed.length > 0) throw new VerificationFailedError(failed.map(mismatchOf));
  }

  /**
   * While change events are applied: checks every copied range once, then what change
   * application writes (dirty documents and ranges), until `signal` (the runner stops at the
   * drain). Never fails the sync: a difference here may be a change not applied yet, and is
   * checked again. A cycle that fails (after its reads' retries in place) is tried again.
   *
   * `yieldTo` is awaited before each read: it holds the live pass while change application is
   * behind, so verification reads never slow the catch-up a cut-over waits for.
   */
  async runLive(
    session: JobSession,
    signal: AbortSignal,
    yieldTo?: () => Promise<void>,
    current: () => JobSession = () => session,
  ): Promise<void> {
    if (this.live || !verificationEnabled(session.job)) return;
    this.live = true;
    // Looks for due work twice a second: a write is checked ~settleMs after it lands.
    const tick = Math.min(500, this.recheckMs);
    let failures = 0;
    try {
      while (!signal.aborted) {
        const began = this.options.clock.now();
        try {
          await this.liveCycle(current(), signal, yieldTo);
          failures = 0;
        } catch (error) {
          if (signal.aborted) break;
          failures += 1;
          this.options.logger.warn('verification: a live check failed; trying again', {
            error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
          });
        }
        // Cycles start a tick apart: one that read for longer (a large range) is followed at
        // once, as what it waited for (the catalog, writes since) is due by then — after a copy,
        // a tick more after its last range was a tick more before canCommit. A cycle's
        // bookkeeping walks the unsettled namespaces (all of them after a catalog write): the
        // pause grows with its cost, so the live pass keeps to ~1/11 of a core.
        const elapsed = this.options.clock.now() - began;
        const pause =
          failures > 0
            ? Math.min(60_000, this.recheckMs * 2 ** failures)
            : Math.max(tick - elapsed, LIVE_BOOKKEEPING_RATIO * this.lastBookkeepingMs);
        await this.options.clock.sleep(pause, signal).catch(() => undefined);
      }
    } finally {
      this.live = false;
    }
  }

  private get caughtUpMs(): number {
    return this.options.caughtUpMs ?? 10_000;
  }

  private get concurrency(): number {
    return this.options.concurrency ?? 4;
  }

  private get recheckMs(): number {
    return this.options.recheckMs ?? 5_000;
  }

  /** Synchronous time the last live cycle spent on its bookkeeping (not its reads), ms. */
  private lastBookkeepingMs = 0;

  private async liveCycle(
    session: JobSession,
    signal: AbortSignal,
    yieldTo?: () => Promise<void>,
  ): Promise<void> {
    const began = this.options.clock.now();
    const targets = this.follow(session, false);
    const now = this.options.clock.now();
    // Metadata found equal since its last change settles a namespace: only unsettled ones can
    // be due.
    const metadata: string[] = [];
    for (const state of this.tracker.eachActive()) {
      if (state.metadataOk) continue;
      const name = state.name;
      // A collection still copying is compared once it holds its final metadata (see
      // preparedAndCopied), and once no other of its database still copies: a check lists its
      // database's collections on both sides, so a database is compared in one check, not a
      // listing for every few collections that finished.
      const target = targets.get(name);
      if (!target || target.copying || this.followed?.copying.has(target.database)) continue;
      const pause = Math.min(60_000, this.recheckMs * 2 ** Math.max(0, state.metadataDiffers - 1));
      if (state.metadataDiffers === 0 || now - state.metadataCheckedAt >= pause)
        metadata.push(name);
    }
    const work = this.tracker.plan({
      all: false,
      recheckMs: this.recheckMs,
      settleMs: this.options.settleMs ?? 1_000,
    });
    let bookkeeping = this.options.clock.now() - began;
    if (metadata.length > 0 || work.length > 0) {
      // The live pass gives way to change application only while it keeps up itself: a
      // verifier starved by a steady write load would hold canCommit false for ever.
      const keepingUp = this.tracker.caughtUp(Math.max(1_000, this.caughtUpMs / 2));
      // Metadata in slices: once a copy of 100,000 small collections ends, every one of them
      // is due at once, and one check would hold a task and a verdict for each until its end.
      const slice = this.options.metadataSlice ?? LIVE_METADATA_SLICE;
      // While a copy runs, large ranges are read one at a time: the copy's reads and writes go
      // first. Once no namespace copies, they go `concurrency` at a time like the final pass's
      // (still behind `yieldTo`): after a copy of large collections, the ranges copied last are
      // all that holds canCommit, and one at a time each waited for the round trips of the last.
      const copying = session.job.phase !== 'copied' || (this.followed?.copying.size ?? 0) > 0;
      for (let from = 0; from === 0 || from < metadata.length; from += slice) {
        if (signal.aborted) break;
        await this.check(
          'live',
          session,
          targets,
          metadata.slice(from, from + slice),
          from === 0 ? work : [],
          signal,
          undefined,
          keepingUp ? yieldTo : undefined,
          copying ? 1 : this.concurrency,
        );
      }
    }
    const refreshing = this.options.clock.now();
    this.refreshLiveStatus(session);
    bookkeeping += this.options.clock.now() - refreshing;
    this.lastBookkeepingMs = bookkeeping;
  }

  /**
   * Per-namespace progress and the live status, from the tracker: a settled namespace is equal,
   * so only unsettled ones and those named by a live mismatch are looked at.
   */
  private refreshLiveStatus(session: JobSession): void {
    // A parked namespace waits for its copy: unsettled, not clean.
    let unsettled = this.tracker.parkedNamespaces;
    let clean = 0;
    for (const state of this.tracker.eachActive()) {
      if (!state.ranges) continue;
      unsettled += 1;
      if (isClean(state)) clean += 1;
    }
    this.verifiedCount = this.tracker.rangedNamespaces - unsettled + clean;
    let differing = 0;
    for (const name of [...this.liveMismatches.keys()]) {
      const dot = name.indexOf('.');
      const state = this.tracker.get(name.slice(0, dot), name.slice(dot + 1));
      if (!state?.ranges) continue;
      if (isClean(state)) this.liveMismatches.delete(name);
      else differing += 1;
    }
    this.current = {
      phase: 'live',
      namespacesTotal: session.job.namespaces.length,
      namespacesVerified: this.verifiedCount,
      mismatches: 0,
      pendingRecheck: differing,
      samples: [...this.liveMismatches.values()].slice(0, MAX_SAMPLES),
    };
  }

  /** Found equal on both sides by the live pass (per-namespace progress). */
  isVerified(record: Pick<NamespaceRecord, 'database' | 'collection'>): boolean {
    const state = this.tracker.get(record.database, record.collection);
    return !!state && isClean(state);
  }

  /** The tracker follows the catalog; the targets of every synced namespace, by name. */
  /** How the work is divided (a per-shard worker verifies its own share of each namespace). */
  private topologyOf(session: JobSession) {
    return topologyOf(session, {
      clock: this.options.clock,
      logger: this.options.logger,
      waiting: () => undefined,
    });
  }

  /**
   * The live pass's view of the catalog, kept between cycles: an entry per catalog record,
   * rebuilt only when what it was built from changed. The pass looks twice a second, and at
   * 100,000 namespaces building every target afresh took ~0.5 s of CPU each time.
   */
  private followed: FollowMemo | null = null;

  private follow(session: JobSession, final: boolean): Map<string, VerifyTarget> {
    const topology = this.topologyOf(session);
    // The commit's pass walks the whole catalog whatever changed; the live pass what changed.
    const walkAll = final || this.walkCatalog;
    this.walkCatalog = false;
    const { memo: live, changed } = this.followLive(session, topology, walkAll);
    let targets = live.targets;
    let tracked: Iterable<TrackedNamespace> = trackedOf(live.entries);
    if (final) {
      // The commit's view differs from the live one only where indexes were relaxed (compared
      // now, restored) or a copy is pending (not compared): those are built again, the rest
      // reused — at 100,000 namespaces, building every target took ~1 s of the cutover.
      targets = new Map();
      const list: TrackedNamespace[] = [];
      for (const record of session.job.namespaces) {
        let entry = live.entries.get(record.key);
        if (
          !entry ||
          record.relaxedIndexes.length > 0 ||
          copyOf(record, session.job.phase) === 'pending'
        ) {
          const partitions = session.partitionsOf(record.key);
          entry = followEntry(session, topology, record, partitions, doneCount(partitions), true);
        }
        if (entry.target) targets.set(entry.name, entry.target);
        const tracked = trackedFor(entry);
        if (tracked) list.push(tracked);
      }
      tracked = list;
    }
    if (changed && !final) this.tracker.syncSome(changed);
    else this.tracker.sync(tracked);
    // Without `_id` reads on both sides a dirty document is checked with its whole range.
    const source = session.source as VerifiableCluster;
    const destination = session.destinationReader;
    if (!source.readByIds || !destination?.readByIds) {
      for (const state of [...this.tracker.eachUnsettled()]) this.tracker.promoteIds(state);
    }
    return targets;
  }

  /**
   * The live view of the catalog, brought up to date: only changed records are rebuilt. Between
   * catalog writes only partitions finish, and the session names their namespaces: then only
   * those are looked at, and `changed` lists what the tracker must follow again (null: the
   * whole catalog was walked).
   */
  private followLive(
    session: JobSession,
    topology: ReturnType<typeof topologyOf>,
    walkAll: boolean,
  ): { memo: FollowMemo; changed: TrackedNamespace[] | null } {
    const never = session.job.request.buildIndexes === 'never';
    const ownership = session.ownership;
    let memo = this.followed;
    // A new session, chunk map or index rule: built afresh.
    if (!memo || memo.session !== session || memo.ownership !== ownership || memo.never !== never) {
      if (memo) memo.session.unwatchCatalog(memo.watch);
      memo = {
        session,
        ownership,
        never,
        generation: 0,
        entries: new Map(),
        targets: new Map(),
        watch: session.watchCatalog(),
        copying: new Map(),
      };
      this.followed = memo;
    }
    const { entries, targets } = memo;
    const changes = session.changesFor(memo.watch);
    if (!changes.full && !walkAll) {
      const changed: TrackedNamespace[] = [];
      for (const key of changes.keys) {
        const record = session.catalog.byKey(key);
        if (!record) continue;
        const entry = this.refollow(memo, session, topology, record);
        const tracked = entry && trackedFor(entry);
        if (tracked) changed.push(tracked);
      }
      return { memo, changed };
    }
    const generation = ++memo.generation;
    for (const record of session.job.namespaces) {
      const entry = this.refollow(memo, session, topology, record) ?? entries.get(record.key)!;
      entry.generation = generation;
    }
    for (const [key, entry] of entries) {
      if (entry.generation === generation) continue;
      entries.delete(key);
      forget(targets, entry);
      countCopying(memo, entry, -1);
    }
    return { memo, changed: null };
  }

  /** The entry of `record` rebuilt if what it was built from changed (null: it had not). */
  private refollow(
    memo: FollowMemo,
    session: JobSession,
    topology: ReturnType<typeof topologyOf>,
    record: NamespaceRecord,
  ): FollowEntry | null {
    const partitions = session.partitionsOf(record.key);
    const done = doneCount(partitions);
    let entry = memo.entries.get(record.key);
    if (entry && builtFrom(entry, record, session.job.phase, partitions, done)) return null;
    if (entry) {
      forget(memo.targets, entry);
      countCopying(memo, entry, -1);
    }
    entry = followEntry(session, topology, record, partitions, done, false);
    entry.generation = memo.generation;
    memo.entries.set(record.key, entry);
    countCopying(memo, entry, 1);
    if (entry.target) memo.targets.set(entry.name, entry.target);
    return entry;
  }

  /**
   * The namespaces whose options and indexes the final pass compares: in full mode all; else
   * those the live pass has not found equal since their last DDL (a restart forgets what it
   * found: all of them then), and those whose relaxed indexes this commit restored (compared as
   * restored, unique included). At 100,000 namespaces the commit then reads the metadata of what
   * changed, not of everything.
   */
  private metadataToRecheck(
    session: JobSession,
    targets: Map<string, VerifyTarget>,
    full: boolean,
  ): string[] {
    if (full) return [...targets.keys()];
    const relaxed = new Set(
      session.job.namespaces.filter((n) => n.relaxedIndexes.length > 0).map((n) => n.key),
    );
    return [...targets.entries()]
      .filter(
        ([name, target]) =>
          (target.key !== undefined && relaxed.has(target.key)) ||
          !this.stateOf(targets, name)?.metadataOk,
      )
      .map(([name]) => name);
  }

  /**
   * A document the live pass found stuck different, written again from the source through its
   * write lane, once: what change events cannot reproduce (e.g. fields a pipeline update moved:
   * its event lists them like fields updated in place) would otherwise keep the commit from
   * passing its final check until the application wrote the document again. Never silent: a
   * warning names it and progress counts it. A document still different after its repair stays
   * a mismatch, for the final pass to report.
   */
  private repairDocument(session: JobSession, target: VerifyTarget, entry: DirtyId): void {
    if (entry.repaired || !this.repair) return;
    const ns = { db: target.database, coll: target.collection };
    const shardKey =
      target.key !== undefined ? session.catalog.byKey(target.key)?.shardKey : undefined;
    const collection = {
      ...(target.uuid !== undefined ? { uuid: target.uuid } : {}),
      ...(shardKey ? { shardKeyFields: Object.keys(shardKey.key) } : {}),
    };
    if (!this.repair(ns, entry.id, entry.identity, collection)) return;
    entry.repaired = true;
    this.repaired += 1;
    this.options.logger.warn(
      'verification: a document stayed different from the source with no write pending; ' +
        "rewritten from the source's current version",
      {
        namespace: `${target.database}.${target.collection}`,
        _id: idText(entry.id),
      },
    );
  }

  private stateOf(targets: Map<string, VerifyTarget>, name: string): NamespaceState | undefined {
    const target = targets.get(name);
    return target ? this.tracker.get(target.database, target.collection) : undefined;
  }

  /**
   * One check: the metadata of `metadata` namespaces, the ranges and documents of `work`, as one
   * pool of tasks (the final pass several at once, the live pass one large range at a time while
   * a copy runs, yielding to change application). Each result goes to the tracker; verdicts per
   * namespace.
   */
  private async check(
    phase: 'live' | 'final',
    session: JobSession,
    targets: Map<string, VerifyTarget>,
    metadata: string[],
    work: NamespaceWork[],
    signal: AbortSignal,
    figures?: { rangesRead: number; documentsRead: number },
    beforeTask?: () => Promise<void>,
    /** Large ranges read at once (the final pass: `concurrency`). */
    heavyConcurrency = this.concurrency,
  ): Promise<NamespaceVerdict[]> {
    const destination = session.destinationReader;
    if (!destination) throw new Error('the destination cannot be read for verification');
    // Metadata through the routers; documents where this worker copied them from (a per-shard
    // worker: its own shard), seen through its share of each namespace.
    const source = session.source as VerifiableCluster;
    const documentSource =
      work.length > 0
        ? ((await this.topologyOf(session).copySource(session)) as VerifiableCluster)
        : source;
    const sides = (target: VerifyTarget) =>
      target.share?.keep
        ? {
            source: new SharedView(documentSource, target.share as ShareWithKeep),
            destination: new SharedView(destination, target.share as ShareWithKeep),
          }
        : { source: documentSource, destination };
    const tracker = this.tracker;
    // Metadata is read before its check settles: collection listings once per pass, index
    // listings several collections at once. A DDL after the pass began leaves its namespace
    // unsettled, to be checked again, whatever this pass read.
    const passStart = tracker.sequence;
    const status: VerificationStatus = {
      phase,
      namespacesTotal: session.job.namespaces.length,
      namespacesVerified: phase === 'live' ? this.verifiedCount : 0,
      mismatches: 0,
      pendingRecheck: 0,
      samples: phase === 'live' ? [...this.liveMismatches.values()] : [],
    };
    if (phase === 'final' || !this.current) this.current = status;
    const retry: InPlaceRetryOptions = {
      clock: this.options.clock,
      ...this.options.retry,
      onRetry: (event) => {
        this.retriedReads += 1;
        const error = event.error instanceof Error ? event.error : new Error(String(event.error));
        this.lastRetry = `${event.what}: ${error.name} (attempt ${event.attempt})`;
        this.options.logger.debug('verification: read retried in place', {
          read: event.what,
          attempt: event.attempt,
          error: `${error.name}: ${error.message}`,
        });
      },
    };
    const check: NamespaceCheckOptions = {
      ...(phase === 'live' ? { listDifferences: LIVE_LISTED_DIFFERENCES } : {}),
      // The live pass skips the relaxed indexes (targetOf) and compares the others whole, so
      // what it found equal needs no second look at commit.
      compareUnique: true,
      listings: new ListingCache(),
      indexes: new IndexListingCache(),
      retry,
      signal,
    };
    const byName = new Map<string, { verdict: NamespaceVerdict; remaining: number }>();
    const entryOf = (name: string) => {
      let entry = byName.get(name);
      if (!entry) {
        const verdict: NamespaceVerdict = {
          namespace: name,
          documents: { source: 0, destination: 0 },
          problems: [],
          ids: [],
          mismatchedRanges: [],
        };
        byName.set(name, (entry = { verdict, remaining: 0 }));
      }
      return entry;
    };
    const sample = (verdict: NamespaceVerdict, problems: string[], ids: string[]) => {
      const room = Math.max(0, 5 - verdict.ids.length);
      verdict.ids.push(...ids.slice(0, room));
      verdict.problems.push(...problems.slice(0, Math.max(1, room)));
    };
    const done = (name: string) => {
      const entry = byName.get(name)!;
      if (--entry.remaining > 0) return;
      const { verdict } = entry;
      const { source: s, destination: d } = verdict.documents;
      if (s !== d)
        verdict.problems.unshift(`document count differs: source ${s}, destination ${d}`);
      if (phase === 'final') {
        if (verdict.problems.length === 0) status.namespacesVerified += 1;
        else status.mismatches += 1;
        if (verdict.problems.length > 0 && status.samples.length < MAX_SAMPLES)
          status.samples.push(mismatchOf(verdict));
      } else if (verdict.problems.length > 0) {
        this.liveMismatches.set(name, mismatchOf(verdict));
      }
    };
    // Large ranges go `heavyConcurrency` at a time (the live pass: one while a copy runs, as
    // it shares the clusters with it and with change application); in the live pass, metadata
    // checks and small collections' ranges — round trips, not bytes — go several at once beside
    // them. The final pass runs everything `concurrency` at a time.
    const tasks: Array<() => Promise<void>> = [];
    const light: Array<() => Promise<void>> = [];
    const add = (name: string, task: () => Promise<void>, small = false) => {
      entryOf(name).remaining += 1;
      (small && phase === 'live' ? light : tasks).push(async () => {
        await task();
        done(name);
      });
    };
    // Small: one range (one partition) of a collection under SMALL_NAMESPACE_BYTES — a
    // collection split into several ranges is still read one range at a time.
    const isSmall = (target: VerifyTarget) =>
      target.estimatedBytes !== undefined &&
      target.estimatedBytes < SMALL_NAMESPACE_BYTES &&
      target.ranges.length <= 1;
    for (const name of metadata) {
      const target = targets.get(name)!;
      if (target.type === 'collection') check.indexes!.announce(target.database, target.collection);
    }
    for (const name of metadata) {
      const target = targets.get(name)!;
      add(
        name,
        async () => {
          const problems = await checkMetadata(source, destination, target, check);
          entryOf(name).verdict.problems.unshift(...problems);
          const state = tracker.get(target.database, target.collection);
          if (state && phase === 'live' && state.metadataChangedAt <= passStart) {
            tracker.metadataChecked(state, problems.length === 0, this.options.clock.now());
          }
        },
        true,
      );
    }
    const checkOne = async (
      name: string,
      state: NamespaceState,
      target: VerifyTarget,
      side: ReturnType<typeof sides>,
      range: RangeState,
    ) => {
      const startSeq = tracker.sequence;
      const result = await checkRange(side.source, side.destination, target, range.range, check);
      const equal = result.problems.length === 0;
      if (!equal && phase === 'live' && result.complete) {
        // Only these documents differ (likely writes not applied yet): re-checked alone.
        tracker.rangeSettledExcept(
          state,
          range,
          startSeq,
          result.differing.map((id) => ({
            id,
            identity: documentIdentity(target.key ?? name, '', { _id: id }),
          })),
        );
      } else tracker.rangeChecked(state, range, startSeq, equal);
      if (figures) {
        figures.rangesRead += 1;
        figures.documentsRead += result.source;
      }
      const { verdict } = entryOf(name);
      verdict.documents.source += result.source;
      verdict.documents.destination += result.destination;
      if (result.problems.length > 0) {
        verdict.mismatchedRanges.push(range.range);
        sample(verdict, result.problems, result.ids);
      }
    };
    // Small whole collections of one database are digested together, one read per side for up
    // to DIGEST_BATCH of them (`digestWhole`); any that differ are checked again alone, which
    // names the documents. Not with a per-shard share or a collation (their `_id` order).
    const together = new Map<string, BatchedRange[]>();
    const batched = !!documentSource.digestWhole && !!destination.digestWhole;
    for (const { state, ranges, ids } of work) {
      const name = state.name;
      const target = targets.get(name);
      if (!target) continue; // not synced (anymore): nothing to compare
      const side = sides(target);
      for (const range of ranges) {
        if (
          batched &&
          isSmall(target) &&
          wholeRange(range.range) &&
          !target.share?.keep &&
          !target.collated
        ) {
          const list = together.get(target.database) ?? [];
          together.set(target.database, list);
          list.push({ name, state, target, range });
          entryOf(name).remaining += 1;
          continue;
        }
        add(name, () => checkOne(name, state, target, side, range), isSmall(target));
      }
      for (let i = 0; i < ids.length; i += IDS_PER_READ) {
        const batch = ids.slice(i, i + IDS_PER_READ);
        add(name, async () => {
          const startSeq = tracker.sequence;
          const result = await checkDocuments(
            side.source,
            side.destination,
            target,
            batch.map((e) => e.id),
            check,
          );
          batch.forEach((entry, k) => {
            const stuck = tracker.documentChecked(state, entry, startSeq, result.equal[k]!);
            if (stuck && phase === 'live') this.repairDocument(session, target, entry);
          });
          if (figures) figures.documentsRead += result.read;
          if (result.problems.length > 0)
            sample(entryOf(name).verdict, result.problems, result.ids);
        });
      }
    }
    for (const [database, list] of together) {
      for (let i = 0; i < list.length; i += DIGEST_BATCH) {
        const group = list.slice(i, i + DIGEST_BATCH);
        const run = async () => {
          const startSeq = tracker.sequence;
          const collections = group.map((g) => g.target.collection);
          const what = `digest of ${group.length} collections of ${database}`;
          const read = (cluster: VerifiableCluster, where: string) =>
            retryInPlace(
              `${what} on the ${where}`,
              () => cluster.digestWhole!(database, collections, { signal }),
              retry,
              signal,
            );
          const [s, d] = await Promise.all([
            read(documentSource, 'source'),
            read(destination, 'destination'),
          ]).catch((error: unknown) => {
            if (signal.aborted) throw error;
            this.options.logger.debug('verification: a batched digest failed; checking alone', {
              database,
              error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
            });
            return [null, null] as const;
          });
          for (const [k, g] of group.entries()) {
            const a = s?.[k];
            const b = d?.[k];
            if (a && b && a.count === b.count && a.hash === b.hash) {
              tracker.rangeChecked(g.state, g.range, startSeq, true);
              if (figures) {
                figures.rangesRead += 1;
                figures.documentsRead += a.count;
              }
              const { verdict } = entryOf(g.name);
              verdict.documents.source += a.count;
              verdict.documents.destination += b.count;
            } else {
              await checkOne(g.name, g.state, g.target, sides(g.target), g.range);
            }
            done(g.name);
          }
        };
        (phase === 'live' ? light : tasks).push(run);
      }
    }
    await Promise.all([
      runPool(tasks, heavyConcurrency, signal, beforeTask),
      runPool(light, LIGHT_CONCURRENCY, signal, beforeTask),
    ]);
    return [...byName.values()].map((e) => e.verdict);
  }
}

/** The live pass's catalog view between cycles (Verification.follow). */
interface FollowMemo {
  session: JobSession;
  ownership: unknown;
  never: boolean;
  generation: number;
  entries: Map<string, FollowEntry>;
  /** By current name: what a check reads. */
  targets: Map<string, VerifyTarget>;
  /** What changed in the session's catalog since the last look. */
  watch: CatalogWatch;
  /** Entries whose target is still copying, by database (the live pass's metadata rule). */
  copying: Map<string, number>;
}

/** Counts `entry` in (+1) or out (-1) of its database's entries still copying. */
function countCopying(memo: FollowMemo, entry: FollowEntry, delta: 1 | -1): void {
  if (!entry.target?.copying) return;
  const left = (memo.copying.get(entry.database) ?? 0) + delta;
  if (left > 0) memo.copying.set(entry.database, left);
  else memo.copying.delete(entry.database);
}

/**
 * One catalog record as the verifier follows it, and the record fields, partitions and done
 * count it was built from (one flat object of one shape, every field set when it is made: at
 * 100,000 namespaces a nested object, and fields added later into a property array of their
 * own, cost ~150 bytes per namespace). What the tracker follows is derived from it when asked
 * (`trackedFor`), not kept.
 */
interface FollowEntry {
  name: string;
  /** Absent: a collection still being copied whose partitions are not planned yet. */
  target: VerifyTarget | undefined;
  /** Its ranges are this worker's to check (else only its metadata is compared). */
  tracks: boolean;
  generation: number;
  key: string;
  database: string;
  collection: string;
  type: NamespaceRecord['type'];
  /** As of the job's phase (copyOf): an initial copy's record changes with the phase. */
  copy: CopyStatus;
  partitionSet: number | undefined;
  estimatedBytes: number;
  relaxedIndexes: NamespaceRecord['relaxedIndexes'];
  shardKey: NamespaceRecord['shardKey'];
  partitions: readonly PartitionRecord[];
  done: number;
}

function builtFrom(
  from: FollowEntry,
  r: NamespaceRecord,
  phase: CopyPhase,
  partitions: readonly PartitionRecord[],
  done: number,
): boolean {
  return (
    r.key === from.key &&
    r.database === from.database &&
    r.collection === from.collection &&
    r.type === from.type &&
    copyOf(r, phase) === from.copy &&
    r.partitionSet === from.partitionSet &&
    r.estimatedBytes === from.estimatedBytes &&
    r.relaxedIndexes === from.relaxedIndexes &&
    r.shardKey === from.shardKey &&
    partitions === from.partitions &&
    done === from.done
  );
}

function doneCount(partitions: readonly PartitionRecord[]): number {
  let done = 0;
  for (const p of partitions) if (p.status === 'done') done += 1;
  return done;
}

function forget(targets: Map<string, VerifyTarget>, entry: FollowEntry): void {
  if (entry.target && targets.get(entry.name) === entry.target) targets.delete(entry.name);
}

function* trackedOf(entries: Map<string, FollowEntry>): Iterable<TrackedNamespace> {
  for (const entry of entries.values()) {
    const tracked = trackedFor(entry);
    if (tracked) yield tracked;
  }
}

/**
 * The target and tracker entry of one record. Records change in place (copy state, partition
 * set, a rename), so the fields they were built from are kept and compared; partition statuses
 * only move to done within a set, so the count of done ones says when readiness changed.
 */
function followEntry(
  session: JobSession,
  topology: ReturnType<typeof topologyOf>,
  record: NamespaceRecord,
  partitions: readonly PartitionRecord[],
  done: number,
  final: boolean,
): FollowEntry {
  const { key, database, collection, type, partitionSet, estimatedBytes } = record;
  const { relaxedIndexes, shardKey } = record;
  const copy = copyOf(record, session.job.phase);
  const entry: FollowEntry = {
    // Joined, not a template: one flat string instead of a chain of concatenations.
    name: [database, collection].join('.'),
    target: undefined,
    tracks: false,
    generation: 0,
    key,
    database,
    collection,
    type,
    copy,
    partitionSet,
    estimatedBytes,
    relaxedIndexes,
    shardKey,
    partitions,
    done,
  };
  // A collection being copied: its ranges are checked as their partitions finish.
  if (copy === 'pending' && (final || partitionSet === undefined)) return entry;
  const share = topology.initialCopyShare(session, record);
  const target = targetOf(session, record, final);
  // Another worker's documents (a per-shard sync): only the metadata is compared here.
  if (!share) {
    target.ranges = [];
    target.metadataOnly = true;
    entry.target = target;
    return entry;
  }
  if (copy === 'pending' && !preparedAndCopied(session, record, partitions, done))
    target.copying = true;
  if (share.keep) target.share = share;
  entry.target = target;
  entry.tracks = true;
  return entry;
}

/**
 * A collection under its initial copy holds its final options and indexes once every partition
 * of it is copied, unless the copy's first insert was to create it (createdByCopy) and none
 * wrote a document: that one is created when the whole copy ends. Its metadata is compared from
 * then on, beside the rest of the copy: at 20,000 small collections, comparing every one only
 * once the whole copy had ended held canCommit back 3–4 s after it.
 */
function preparedAndCopied(
  session: JobSession,
  record: NamespaceRecord,
  partitions: readonly PartitionRecord[],
  done: number,
): boolean {
  if (partitions.length === 0 || done < partitions.length) return false;
  return (
    !createdByCopy(record, session.job.request.buildIndexes) ||
    partitions.some((p) => p.copiedDocuments > 0)
  );
}

/** What the tracker follows of an entry whose ranges this worker checks (else undefined). */
function trackedFor(entry: FollowEntry): TrackedNamespace | undefined {
  const { target } = entry;
  if (!entry.tracks || !target) return undefined;
  const { key, partitionSet, copy, type, partitions } = entry;
  return {
    database: entry.database,
    collection: entry.collection,
    // The copy finishing keeps the signature: ranges checked while it ran stay checked.
    signature: key,
    generation:
      ((partitionSet ?? -1) + 1) * 4 + (copy === 'none' ? 0 : 2) + (type === 'view' ? 1 : 0),
    ranges: target.ranges,
    ready: readiness(copy, partitions, target.ranges.length),
    natural: partitions.some((p) => p.natural),
    view: type === 'view',
  };
}

function mismatchOf(verdict: NamespaceVerdict): VerificationMismatch {
  return { namespace: verdict.namespace, problems: verdict.problems, ids: verdict.ids };
}

/** Every synced namespace of the catalog, with its copy partitions as ranges. */
export function targetsOf(session: JobSession, final: boolean): VerifyTarget[] {
  return session.job.namespaces.map((r) => targetOf(session, r, final));
}

/**
 * A whole collection as one range, shared by every target that has no bounds (ranges are never
 * changed once built): at 100,000 single-partition collections, a list and a range object each
 * cost ~7 MB.
 */
const WHOLE_COLLECTION: IdRange[] = Object.freeze([Object.freeze({})]) as unknown as IdRange[];

/** A catalog key that is a collection UUID (32 hex digits), not a view's `view:<name>`. */
const UUID_KEY = /^[0-9a-f]{32}$/;
/** `buildIndexes: never` compares the `_id` index only (shared: never changed). */
const ID_INDEX_ONLY: string[] = Object.freeze(['_id_']) as unknown as string[];

function targetOf(session: JobSession, record: NamespaceRecord, final: boolean): VerifyTarget {
  const partitions = session.partitionsOf(record.key);
  // No partition, a natural-order one, or one unbounded partition (most of many small
  // collections): the shared whole-collection list.
  let ranges = WHOLE_COLLECTION;
  if (
    !partitions.some((p) => p.natural) &&
    partitions.some((p) => partitions.length > 1 || 'min' in p || 'max' in p)
  ) {
    ranges = [];
    for (const p of partitions) {
      const range: IdRange = {};
      if ('min' in p) range.min = p.min;
      if ('max' in p) range.max = p.max;
      ranges.push(range);
    }
  }
  // Built with the fields most targets have, in one literal: objects of one shape share V8's
  // hidden class and hold those fields in the object itself. (Spreads of conditional parts gave
  // each of 100,000 targets a map of its own, ~330 bytes apiece.) The rare ones are added after,
  // only where they apply, and no list of relaxed index names is made for a namespace without
  // (most of them): an empty list and a property array for fields that were nearly always
  // added cost ~70 bytes per namespace.
  const target: VerifyTarget = {
    key: record.key,
    database: record.database,
    collection: record.collection,
    type: record.type,
    uuid: UUID_KEY.test(record.key) ? record.key : undefined,
    estimatedBytes: record.estimatedBytes,
    ranges,
    batchSize: readBatchDocuments(record),
  };
  if (record.options.collation !== undefined) target.collated = true;
  if (session.job.request.buildIndexes === 'never') target.indexNames = ID_INDEX_ONLY;
  if (!final && record.relaxedIndexes.length > 0)
    target.skipIndexes = record.relaxedIndexes.map((i) => i.name);
  // A sharded destination needs an index on the key: the supporting index the sync built,
  // or the one shardCollection creates on an empty collection under MongoDB's default name.
  if (record.shardKey) {
    const ignore: string[] = [];
    if (record.shardKey.supportingIndex) ignore.push(record.shardKey.supportingIndex);
    ignore.push(defaultIndexName(record.shardKey.key));
    target.ignoreDestinationIndexes = ignore;
  }
  return target;
}

/** Documents per digest read batch: READ_BATCH_BYTES of the collection's average document. */
function readBatchDocuments(record: NamespaceRecord): number {
  const average = record.estimatedCount > 0 ? record.estimatedBytes / record.estimatedCount : 1024;
  if (!Number.isFinite(average) || average <= 0) return MAX_READ_BATCH_DOCUMENTS;
  const documents = Math.floor(READ_BATCH_BYTES / average);
  return Math.min(MAX_READ_BATCH_DOCUMENTS, Math.max(1, documents));
}

type ShareWithKeep = Required<Pick<CopyShare, 'keep'>> & Pick<CopyShare, 'keepFields'>;

/** Every range checked and none found different, the metadata equal, no `_id` different. */
function isClean(state: NamespaceState): boolean {
  const ranges = state.ranges;
  if (!ranges || !state.metadataOk) return false;
  for (const r of ranges) if (!r.checked || r.differs !== 0) return false;
  return noneDiffers(state.ids.values());
}

/** No entry found different when last checked (a walk, not a list: called per namespace). */
function noneDiffers(entries: Iterable<{ differs: number }>): boolean {
  for (const e of entries) if (e.differs !== 0) return false;
  return true;
}

/** Which ranges are copied (a range is checked only then): all, once the namespace is. */
function readiness(
  copy: CopyStatus,
  partitions: ReadonlyArray<{ status: string; natural: boolean }>,
  ranges: number,
): boolean[] | undefined {
  if (copy !== 'pending') return undefined;
  // Read whole once the namespace is copied (`isCopied`: no partitions in the session yet is
  // nothing copied, so a range is never read before its copy landed).
  if (partitions.some((p) => p.natural) || partitions.length !== ranges) {
    const all = isCopied(copy, partitions);
    return Array.from({ length: ranges }, () => all);
  }
  return partitions.map((p) => p.status === 'done');
}
