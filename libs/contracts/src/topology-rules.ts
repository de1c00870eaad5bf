import { ApiError } from './api-error';
import type { StartRequest } from './start-request';

/** What the start rules need to know about a cluster (the engine reads it from `hello`). */
export interface ClusterShape {
  kind: 'replicaSet' | 'sharded';
  /** 1 for a replica set. */
  shardCount: number;
}

/**
 * Start rules that depend on the clusters' topology (which source/destination pairs are supported,
 * when `sharding` is required or refused, and what `reversible` allows). Pure, so the engine and
 * the coordinator apply the very same rules and names.
 */
export function checkTopologyRules(
  request: StartRequest,
  source: ClusterShape,
  destination: ClusterShape,
): void {
  if (source.kind === 'sharded' && destination.kind === 'replicaSet') {
    throw new ApiError(
      'UnsupportedTopology',
      'a sharded source cannot be synced to a replica set destination',
    );
  }
  const replicaSetToSharded = source.kind === 'replicaSet' && destination.kind === 'sharded';
  if (replicaSetToSharded && !request.sharding) {
    throw new ApiError(
      'ShardingRequiredForReplicaSetToSharded',
      'the source is a replica set and the destination is sharded: the sharding option is required',
    );
  }
  if (!replicaSetToSharded && request.sharding) {
    throw new ApiError(
      'ShardingNotAllowed',
      `the sharding option is only allowed for a replica set to sharded cluster sync, not ${source.kind} to ${destination.kind}`,
    );
  }
  if (!request.reversible) return;
  if (replicaSetToSharded) {
    throw new ApiError(
      'ReversibleUnsupportedReplicaSetToSharded',
      'a replica set to sharded cluster sync cannot be reversible',
    );
  }
  if (source.kind === 'sharded' && source.shardCount !== destination.shardCount) {
    throw new ApiError(
      'ReversibleUnsupportedShardCountMismatch',
      `a reversible sync needs the same shard count on both sides (source ${source.shardCount}, destination ${destination.shardCount})`,
    );
  }
}
