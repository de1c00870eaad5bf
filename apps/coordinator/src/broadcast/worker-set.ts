import { ApiError, type WorkerRegistration } from '@sync/contracts';

/**
 * Which workers a command goes to, or why it cannot go anywhere (nothing is sent then):
 * - one worker without --id: it syncs any source alone (through the routers if sharded);
 * - otherwise one worker per source shard, ids = the shard ids (`listShards`), no more, no less.
 * `shards` is null for a replica-set source, undefined when the source is not known (a command
 * other than start before any worker reported a sync): then every registered worker.
 */
export function targetWorkers(
  registered: readonly WorkerRegistration[],
  shards: readonly string[] | null | undefined,
): string[] {
  if (registered.length === 0) {
    throw new ApiError(
      'NoWorkersRegistered',
      'No worker has joined this coordinator: start one worker per source shard with --redis (and --id <shard>), or one worker with --redis and no --id.',
    );
  }
  const unsharded = registered.filter((r) => r.shardId === null);
  if (unsharded.length > 0) {
    if (registered.length === 1) return [unsharded[0].id];
    throw new ApiError(
      'WorkersMissing',
      `A worker without --id syncs alone, but ${registered.length} workers are registered (${registered.map((r) => r.id).join(', ')}); run either one worker without --id or one per source shard.`,
    );
  }
  const ids = registered.map((r) => r.id);
  if (shards === undefined) return ids;
  if (shards === null) {
    throw new ApiError(
      'WorkersMissing',
      `The source is a replica set: it is synced by one worker started without --id; registered are per-shard workers ${ids.join(', ')}.`,
    );
  }
  const missing = shards.filter((shard) => !ids.includes(shard));
  const extra = ids.filter((id) => !shards.includes(id));
  if (missing.length > 0 || extra.length > 0) {
    const parts = [
      ...(missing.length > 0 ? [`no worker for source shard(s) ${missing.join(', ')}`] : []),
      ...(extra.length > 0 ? [`worker(s) ${extra.join(', ')} name no source shard`] : []),
    ];
    throw new ApiError(
      'WorkersMissing',
      `The source has ${shards.length} shard(s) (${shards.join(', ')}): ${parts.join('; ')}. Nothing was sent.`,
    );
  }
  return [...shards].sort();
}
