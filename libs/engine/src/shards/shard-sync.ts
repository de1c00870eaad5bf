import { ApiError, type StartRequest } from '@sync/contracts';
import { ApplyError } from '../apply/errors';
import type { Clock } from '../ports/clock';
import type { CoordinationRecord, CoordinationStore } from '../ports/coordination-store';
import type { ShardAssignment } from '../ports/job-store';

/** How often a waiting worker looks at the shared record again. */
export const COORDINATION_POLL_MS = 100;

/**
 * The coordinator of a per-shard sync: the worker of the source's smallest shard id (shard ids
 * sorted as strings). Every worker computes it from `listShards` alone, so they agree without
 * talking to each other.
 */
export function coordinatorOf(shards: readonly string[]): string {
  const sorted = [...shards].sort();
  if (sorted.length === 0) throw new ApiError('InvalidShardId', 'the source lists no shards.');
  return sorted[0]!;
}

/** `--id` must name a shard of the source (named errors, nothing written). */
export function assignShard(
  id: string,
  source: { name: string; kind: 'replicaSet' | 'sharded'; shards: readonly string[] },
): ShardAssignment {
  if (source.kind !== 'sharded') {
    throw new ApiError(
      'InvalidShardId',
      `this worker was launched with --id ${JSON.stringify(id)}, but the source ${source.name} is a replica set: one worker syncs a replica set; launch it without --id.`,
    );
  }
  if (!source.shards.includes(id)) {
    throw new ApiError(
      'InvalidShardId',
      `--id ${JSON.stringify(id)} is not a shard of the source ${source.name} (its shards: ${[...source.shards].sort().join(', ')}).`,
    );
  }
  return { id, coordinatorID: coordinatorOf(source.shards), members: [...source.shards].sort() };
}

/** The source shard a worker reads: its id, unless a reverse paired it with another shard. */
export function sourceShardOf(shard: ShardAssignment, worker: string = shard.id): string {
  return shard.sources?.[worker] ?? worker;
}

/**
 * A reverse of a per-shard sync: which shard of the new source (the old destination) each
 * worker reads from now on. The workers keep their ids (the old source's shard ids, as launched
 * with `--id`). A shard whose id is a worker's goes to that worker; the others are paired in
 * sorted order. The shard counts must be equal, as MongoDB's tool requires for a reverse.
 */
export function pairShards(
  workers: readonly string[],
  shards: readonly string[],
  newSource: string,
): Record<string, string> {
  if (workers.length !== shards.length) {
    throw new ApiError(
      'ReverseShardCountMismatch',
      `reverse of a per-shard sync needs as many shards on ${newSource} as workers: ${newSource} has ${shards.length} (${[...shards].sort().join(', ')}), the sync runs ${workers.length} (${[...workers].sort().join(', ')}).`,
    );
  }
  const pairs: Record<string, string> = {};
  const free = [...shards].sort().filter((s) => !workers.includes(s));
  for (const worker of [...workers].sort()) {
    pairs[worker] = shards.includes(worker) ? worker : free.shift()!;
  }
  return pairs;
}

/** Same start request (every worker of one sync must be given identical commands). */
export function sameRequest(a: StartRequest, b: StartRequest): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as object).sort(([x], [y]) => (x < y ? -1 : 1)))
      : v,
  );
}

/**
 * Waits, polling the shared record, until `check` returns a value. `waiting` is told what is
 * being waited for (progress shows it).
 */
export async function waitForCoordination<T>(
  store: CoordinationStore,
  check: (record: CoordinationRecord | null) => T | undefined,
  deps: { clock: Clock; signal: AbortSignal; waiting?: (what: string | null) => void },
  what: (record: CoordinationRecord | null) => string,
): Promise<T> {
  try {
    for (;;) {
      if (deps.signal.aborted)
        throw new ApplyError('stopped while waiting for other workers', true);
      const record = await store.load();
      const value = check(record);
      if (value !== undefined) return value;
      deps.waiting?.(what(record));
      await deps.clock.sleep(COORDINATION_POLL_MS, deps.signal).catch(() => undefined);
    }
  } finally {
    deps.waiting?.(null);
  }
}

/** Members that have not yet recorded a commit step. */
export function missingFrom(record: CoordinationRecord | null, step: string): string[] {
  if (!record) return [];
  const done = new Set(record.commitSteps?.[step] ?? []);
  return record.members.filter((m) => !done.has(m));
}
