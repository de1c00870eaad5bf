import { defaultIndexName } from '../prepare/sharding-plan';
import type { JobSession } from '../job/job-session';
import type { Clock } from '../ports/clock';
import type { EngineLogger } from '../ports/engine-logger';
import type { JobRecord, NamespaceRecord } from '../ports/job-store';
import type { NamespaceVerdict, VerifiableCluster, VerifyTarget } from './namespace-verifier';
import { verifyNamespaces } from './verify-pass';

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
}

export interface VerificationOptions {
  logger: EngineLogger;
  clock: Clock;
  /** Ranges digested at once by the commit's final pass (default 4; the live pass reads one). */
  concurrency?: number;
  /** First wait before a live re-check (default 5 s, doubling up to 60 s). */
  recheckMs?: number;
}

const MAX_SAMPLES = 10;

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

/**
 * The embedded verifier of one job: a live pass while change events are applied (what differs
 * then is only "pending re-check": changes are still arriving) and the commit's final pass
 * (after the drain, unique indexes restored, before the destination opens for writes), whose
 * differences fail the commit. Both compare every synced namespace: type, options, indexes,
 * document counts and a hash of every document's exact BSON, per copy partition, in parallel.
 */
export class Verification {
  /** Namespace keys the live pass found equal on both sides (per-namespace progress). */
  readonly verifiedKeys = new Set<string>();
  private current: VerificationStatus | null = null;
  private live = false;

  constructor(private readonly options: VerificationOptions) {}

  /** Progress: the last pass's figures, or what the persisted job says. */
  status(job: JobRecord | undefined, finalPassDone: boolean): VerificationStatus | null {
    if (!job) return null;
    const total = job.namespaces.length;
    const empty = { namespacesTotal: total, mismatches: 0, pendingRecheck: 0, samples: [] };
    if (!verificationEnabled(job)) return { phase: 'disabled', namespacesVerified: 0, ...empty };
    if (finalPassDone) return { phase: 'passed', namespacesVerified: total, ...empty };
    return this.current ?? { phase: 'pending', namespacesVerified: 0, ...empty };
  }

  /** The commit's pass: throws VerificationFailedError when anything differs. */
  async finalPass(session: JobSession, signal: AbortSignal): Promise<void> {
    if (!verificationEnabled(session.job)) return;
    const began = this.options.clock.now();
    const verdicts = await this.pass(session, 'final', targetsOf(session, true), signal);
    const failed = verdicts.filter((v) => v.problems.length > 0);
    this.options.logger.info('verification: final pass done', {
      namespaces: verdicts.length,
      mismatches: failed.length,
      ms: this.options.clock.now() - began,
    });
    this.current = { ...this.current!, phase: failed.length > 0 ? 'failed' : 'passed' };
    if (failed.length > 0) throw new VerificationFailedError(failed.map(mismatchOf));
  }

  /**
   * While change events are applied: verifies every copied namespace, then re-checks the ones
   * that differed with a growing pause, until `signal` (the runner stops at the drain). Never
   * fails the sync: a difference here may be a change not applied yet.
   */
  /**
   * `yieldTo` is awaited before each range: it holds the live pass while change application is
   * behind, so verification reads never slow the catch-up a cut-over waits for.
   */
  async runLive(
    session: JobSession,
    signal: AbortSignal,
    yieldTo?: () => Promise<void>,
  ): Promise<void> {
    if (this.live || !verificationEnabled(session.job)) return;
    this.live = true;
    const verified = this.verifiedKeys;
    verified.clear();
    /** Ranges that differed, by namespace key: a re-check reads only those again. */
    const pending = new Map<string, VerifyTarget['ranges']>();
    let wait = this.options.recheckMs ?? 5_000;
    try {
      while (!signal.aborted) {
        const records = session.job.namespaces.filter(
          (r) => r.copy !== 'pending' && !verified.has(r.key),
        );
        const targets = records.map((r) => {
          const target = targetOf(session, r, false);
          const ranges = pending.get(r.key);
          return ranges && ranges.length > 0 ? { ...target, ranges } : target;
        });
        if (targets.length > 0) {
          const verdicts = await this.pass(
            session,
            'live',
            targets,
            signal,
            verified.size,
            yieldTo,
          );
          verdicts.forEach((v, i) => {
            const key = records[i]!.key;
            if (v.problems.length === 0) verified.add(key);
            else pending.set(key, v.mismatchedRanges);
          });
          const differing = verdicts.filter((v) => v.problems.length > 0);
          if (differing.length > 0) {
            this.options.logger.debug(
              'verification: differences while changes are applied; re-checking later',
              { pending: differing.map((v) => v.namespace) },
            );
          }
        }
        await this.options.clock.sleep(wait, signal).catch(() => undefined);
        wait = Math.min(60_000, wait * 2);
      }
    } catch (error) {
      if (!signal.aborted) {
        this.options.logger.warn('verification: live pass failed; the commit verifies again', {
          error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
        });
      }
    } finally {
      this.live = false;
    }
  }

  private async pass(
    session: JobSession,
    phase: 'live' | 'final',
    targets: VerifyTarget[],
    signal: AbortSignal,
    alreadyVerified = 0,
    beforeTask?: () => Promise<void>,
  ): Promise<NamespaceVerdict[]> {
    const destination = session.destinationReader;
    if (!destination) throw new Error('the destination cannot be read for verification');
    const status: VerificationStatus = {
      phase,
      namespacesTotal: session.job.namespaces.length,
      namespacesVerified: alreadyVerified,
      mismatches: 0,
      pendingRecheck: 0,
      samples: [],
    };
    this.current = status;
    const concurrency = this.options.concurrency ?? 4;
    return verifyNamespaces(session.source as VerifiableCluster, destination, targets, {
      compareUnique: phase === 'final',
      retry: { clock: this.options.clock },
      // The live pass reads one range at a time, and only while change application keeps up.
      concurrency: phase === 'final' ? concurrency : 1,
      signal,
      ...(beforeTask ? { beforeTask } : {}),
      onNamespace: (verdict) => {
        if (verdict.problems.length === 0) status.namespacesVerified += 1;
        else if (phase === 'live') status.pendingRecheck += 1;
        else status.mismatches += 1;
        if (verdict.problems.length > 0 && status.samples.length < MAX_SAMPLES)
          status.samples.push(mismatchOf(verdict));
      },
    });
  }
}

function mismatchOf(verdict: NamespaceVerdict): VerificationMismatch {
  return { namespace: verdict.namespace, problems: verdict.problems, ids: verdict.ids };
}

/** Every synced namespace of the catalog, with its copy partitions as ranges. */
export function targetsOf(session: JobSession, final: boolean): VerifyTarget[] {
  return session.job.namespaces.map((r) => targetOf(session, r, final));
}

function targetOf(session: JobSession, record: NamespaceRecord, final: boolean): VerifyTarget {
  const partitions = session.partitionsOf(record.key);
  const ranges = partitions.some((p) => p.natural)
    ? [{}]
    : partitions.map((p) => ({
        ...('min' in p ? { min: p.min } : {}),
        ...('max' in p ? { max: p.max } : {}),
      }));
  const never = session.job.request.buildIndexes === 'never';
  return {
    database: record.database,
    collection: record.collection,
    type: record.type,
    ...(/^[0-9a-f]{32}$/.test(record.key) ? { uuid: record.key } : {}),
    ranges: ranges.length > 0 ? ranges : [{}],
    ...(never ? { indexNames: ['_id_'] } : {}),
    // A sharded destination needs an index on the key: the supporting index the sync built,
    // or the one shardCollection creates on an empty collection under MongoDB's default name.
    ...(record.shardKey
      ? {
          ignoreDestinationIndexes: [
            ...(record.shardKey.supportingIndex ? [record.shardKey.supportingIndex] : []),
            defaultIndexName(record.shardKey.key),
          ],
        }
      : {}),
    ...(final ? {} : { skipIndexes: record.relaxedIndexes.map((i) => i.name) }),
    batchSize: readBatchDocuments(record),
  };
}

/** Documents per digest read batch: READ_BATCH_BYTES of the collection's average document. */
function readBatchDocuments(record: NamespaceRecord): number {
  const average = record.estimatedCount > 0 ? record.estimatedBytes / record.estimatedCount : 1024;
  if (!Number.isFinite(average) || average <= 0) return MAX_READ_BATCH_DOCUMENTS;
  const documents = Math.floor(READ_BATCH_BYTES / average);
  return Math.min(MAX_READ_BATCH_DOCUMENTS, Math.max(1, documents));
}
