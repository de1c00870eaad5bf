/**
 * Every error name the API can return, with its HTTP status and meaning.
 * The README's error table is generated from this list by `renderApiErrorTable()` and a unit
 * test keeps the two in step, so a new name here fails the build until the README shows it.
 *
 * Statuses: 400 the request itself is wrong (retrying the same request never helps), 409 the
 * request is fine but the sync is in the wrong state for it, 503 the instance is not ready yet
 * (retrying is safe), 500 the sync failed or something unexpected happened, and the transport
 * errors 401 / 404 / 413 / 415.
 */
export const API_ERRORS = {
  // Transport: the request never reached validation.
  NotFound: { httpStatus: 404, description: 'No such endpoint; the API lives under /api/v1.' },
  MalformedJson: { httpStatus: 400, description: 'The request body is not valid JSON.' },
  UnsupportedMediaType: {
    httpStatus: 415,
    description: 'POST bodies must be JSON sent with Content-Type: application/json.',
  },
  PayloadTooLarge: { httpStatus: 413, description: 'The request body exceeds the 1 MiB limit.' },
  Unauthorized: {
    httpStatus: 401,
    description:
      'The instance was launched with an API token (--apiToken or SYNC_API_TOKEN) and the request did not send it as Authorization: Bearer <token>; the dashboard takes it as /#token=<token>.',
  },

  // The start body and its rules (fields, shapes, option combinations).
  InvalidRequest: {
    httpStatus: 400,
    description:
      'The request body has a missing or unknown field, a wrong type or an invalid value; the description names the field.',
  },
  UnknownCluster: {
    httpStatus: 400,
    description: 'source or destination names a cluster that was not configured at launch.',
  },
  SameSourceAndDestination: {
    httpStatus: 400,
    description: 'source and destination must be different clusters.',
  },
  NeverWithReversible: {
    httpStatus: 400,
    description: 'buildIndexes "never" cannot be combined with reversible: true.',
  },
  ReversibleRequiresWriteBlocking: {
    httpStatus: 400,
    description: 'reversible: true requires enableUserWriteBlocking: true.',
  },
  ShardingRequiredForReplicaSetToSharded: {
    httpStatus: 400,
    description: 'A replica set to sharded cluster sync requires the sharding option.',
  },
  ShardingNotAllowed: {
    httpStatus: 400,
    description: 'The sharding option is only allowed for a replica set to sharded cluster sync.',
  },
  InvalidShardingEntry: {
    httpStatus: 400,
    description:
      'A sharding entry names a namespace that is not a collection selected for sync, or names one twice.',
  },
  ShardKeyIndexMissing: {
    httpStatus: 400,
    description:
      'With createSupportingIndexes false, every shard key needs a supporting index on the source (the key as a prefix, simple collation); create one or set createSupportingIndexes.',
  },
  UnsupportedTopology: {
    httpStatus: 400,
    description: 'A sharded cluster cannot be synced to a replica set.',
  },
  ReversibleUnsupportedReplicaSetToSharded: {
    httpStatus: 400,
    description: 'A replica set to sharded cluster sync cannot be reversible.',
  },
  ReversibleUnsupportedShardCountMismatch: {
    httpStatus: 400,
    description:
      'A sync between sharded clusters with different shard counts cannot be reversible.',
  },

  // One worker per source shard (--id).
  InvalidShardId: {
    httpStatus: 400,
    description:
      '--id does not name a shard of the source (listShards), or the source is a replica set (one worker without --id syncs it).',
  },
  PerShardSyncInProgress: {
    httpStatus: 409,
    description:
      'The destination holds a sync run by one worker per source shard; a worker without --id cannot join it (or the other way round).',
  },
  SyncRequestMismatch: {
    httpStatus: 409,
    description:
      "Every worker of a per-shard sync must get the identical start request; this one differs from the coordinator's.",
  },
  ChunkMigrationInProgress: {
    httpStatus: 409,
    description:
      'The source chunk map changed while a per-shard sync was being planned (a migration in flight); nothing was started — retry once it is done.',
  },
  DuplicateShardWorker: {
    httpStatus: 409,
    description:
      'Another live worker runs this shard id; each source shard needs exactly one active worker (a crashed one is taken over once its heartbeat is stale). Start a second one with --standby to have it wait and take over.',
  },
  ShardClaimLost: {
    httpStatus: 409,
    description:
      'This worker lost its shard (another worker took it over, or its claim could not be renewed in time) and writes nothing more to the destination. A lapsed claim it takes again by itself once no other worker holds it, then resumes; taken over by another worker, it stays stopped (restart it with --standby to stand by the new holder).',
  },
  ReverseShardCountMismatch: {
    httpStatus: 409,
    description:
      'reverse of a per-shard sync needs as many shards on the new source (the old destination) as the sync has workers; nothing was changed.',
  },
  ChunkMigrationSinceCommit: {
    httpStatus: 409,
    description:
      "The old destination's chunk map changed since the commit (its balancer was started, or a chunk moved), so a per-shard reverse cannot tell which shard held each write; nothing was changed.",
  },

  // Wrong state for the operation.
  NotIdle: { httpStatus: 409, description: 'start is only allowed while the sync is IDLE.' },
  InvalidState: {
    httpStatus: 409,
    description:
      'The operation is not available in the current state; the description names the operation and the state.',
  },
  CommitNotReady: {
    httpStatus: 409,
    description:
      'commit is only allowed once canCommit is true (copy done, change events applied).',
  },
  ReverseNotAllowed: {
    httpStatus: 409,
    description:
      'reverse is only allowed for a committed sync that was started with reversible: true.',
  },
  JobClusterMismatch: {
    httpStatus: 409,
    description:
      'The persisted sync was started against different clusters; this instance refuses to resume it.',
  },

  // Not ready yet: retrying is safe.
  NotReady: { httpStatus: 503, description: 'The instance is still initializing; retry shortly.' },

  // The sync or the server failed.
  HistoryLost: {
    httpStatus: 500,
    description:
      'The source no longer holds the change history the sync needs (oplog rolled over); restart the sync from the beginning.',
  },
  InternalError: { httpStatus: 500, description: 'An unexpected internal error occurred.' },
  VerificationFailed: {
    httpStatus: 500,
    description:
      "The commit's verification found the destination different from the source: the commit is rolled back — source writes unblocked, the sync RUNNING again, the destination still closed — and progress.warnings (CommitRolledBack) names the namespaces and sample _ids. The differing documents stay marked for re-checking; call commit again.",
  },
  CatalogTooLarge: {
    httpStatus: 400,
    description:
      "The selection holds more namespaces than this worker's memory holds (the limit follows from its heap size, named in the description); nothing was changed. Narrow the selection, or start the worker with a larger heap (NODE_OPTIONS=--max-old-space-size=<MiB>).",
  },
  // Appended by the engine owner (copy phase).
  DestinationNotEmpty: {
    httpStatus: 409,
    description:
      'The destination already holds collections or views in the namespaces selected for sync; drop them or change the filter.',
  },

  // The coordinator and the workers it drives over Redis (apps/coordinator).
  CommandsThroughCoordinator: {
    httpStatus: 409,
    description:
      "This worker is driven by a coordinator (--redis): send state-changing commands to the coordinator's API; the worker's own API serves progress.",
  },
  WorkerIsStandby: {
    httpStatus: 409,
    description:
      "This worker was started with --standby and waits to take its shard over from the active worker; it takes no command until then. Send commands to the coordinator (or to the shard's active worker).",
  },
  RedisUnavailable: {
    httpStatus: 503,
    description:
      'The coordinator cannot reach Redis, its control plane; the workers keep syncing. Retry once Redis is back.',
  },
  NotLeader: {
    httpStatus: 503,
    description:
      'This coordinator replica does not lead and could not forward the command; the description names the leader, if any. Retrying is safe.',
  },
  NoWorkersRegistered: {
    httpStatus: 409,
    description:
      'No worker has joined the coordinator (workers join with --redis); nothing was sent.',
  },
  WorkersMissing: {
    httpStatus: 409,
    description:
      'The registered workers do not cover every source shard (one worker per shard, or one worker without --id); the description names what is missing; nothing was sent.',
  },
  WorkersRejected: {
    httpStatus: 409,
    description:
      'Workers answered the command differently; the description gives each worker its outcome.',
  },
  CommandPending: {
    httpStatus: 503,
    description:
      'Not every worker took the command before the deadline (or within its bounded retries); it was withdrawn from every queue, so no worker runs it late. The description names the workers. Retrying with the same X-Command-Id is safe and applies it once.',
  },
  CommandSuperseded: {
    httpStatus: 409,
    description:
      "A newer command reached the workers first (or this one expired by Redis' clock); it was withdrawn or refused, not applied. A worker never runs a command older than one it has taken.",
  },
  StaleEpoch: {
    httpStatus: 409,
    description:
      'The command came from a coordinator replica that has lost leadership (an older fencing epoch than the worker has seen); it was not applied.',
  },
} as const satisfies Record<string, { httpStatus: number; description: string }>;

export type ApiErrorName = keyof typeof API_ERRORS;

/** Retrying the very same request can succeed only for these (the state may move on). */
export function isRetryableApiError(name: ApiErrorName): boolean {
  return API_ERRORS[name].httpStatus === 503;
}
