import type { ApiErrorName } from './api-errors';
import type { Progress } from './progress';
import type { StartRequest } from './start-request';
import type { SyncOperation } from './sync-operations';

/**
 * The control plane between a coordinator and its workers, declared in one place (STYLE.md §6):
 * Redis keys, BullMQ queue names, job names, payloads and results. Everything lives under one
 * prefix, so a Redis shared with other applications keeps these apart.
 */
export const CONTROL_PREFIX = 'cluster-sync';

export const CONTROL_KEYS = {
  /** Hash: worker id → WorkerRegistration (JSON). Kept across heartbeats: a gone worker stays. */
  workers: `${CONTROL_PREFIX}:workers`,
  /** String: the worker's latest WorkerReport (JSON), rewritten every heartbeat. */
  report: (workerId: string) => `${CONTROL_PREFIX}:report:${workerId}`,
  /** The leader lease of the coordinator replicas: LeaderLease (JSON), `SET NX PX`. */
  leader: `${CONTROL_PREFIX}:leader`,
} as const;

/** Queue of the flows' parents (one per command); the children go to the workers' queues. */
export const COMMAND_FLOW_QUEUE = 'sync.commands.flows';

/** One queue per worker (BullMQ has no broadcast); names avoid ':' (BullMQ's key separator). */
export function commandQueueName(workerId: string): string {
  return `sync.commands.${workerId}`;
}

/** A worker started without --id takes part under this id (a single-worker sync). */
export const UNSHARDED_WORKER_ID = 'worker';

/**
 * BullMQ job ids must not contain ':' and are unique per queue: command id + epoch + worker,
 * escaped injectively ('_' → '_u', ':' → '_c'), so a retried request or a re-delivered flow
 * maps to the same jobs and is added once.
 */
export function commandJobId(
  commandId: string,
  epoch: number,
  workerId?: string,
  operation?: CommandOperation,
): string {
  const escaped = commandId.replace(/_/g, '_u').replace(/:/g, '_c');
  // A start's validation round carries the start's own command id: its jobs get their own prefix.
  const prefix = operation === 'validate' ? 'val' : 'cmd';
  return `${prefix}-${escaped}-e${epoch}${workerId === undefined ? '' : `-w-${workerId}`}`;
}

export interface WorkerRegistration {
  id: string;
  /** The shard id (--id), or null for a worker started without one. */
  shardId: string | null;
  queue: string;
  /** The worker's own API, for operators (its progress); commands go through the queue. */
  url: string | null;
  registeredAt: number;
}

/** What a worker publishes every heartbeat (JSON under CONTROL_KEYS.report). */
export interface WorkerReport {
  id: string;
  /** Wall-clock milliseconds of this report; its age says whether the worker is alive. */
  at: number;
  /** The engine's raw mergeable snapshot (ProgressSnapshot of @sync/engine), null when none. */
  snapshot: unknown;
  /** The worker's own rendered progress, null while it has none (INITIALIZING, failed boot). */
  progress: Progress | null;
  /** Why there is no progress (NotReady while initializing). */
  error: { error: ApiErrorName; errorDescription: string } | null;
  /** The highest leadership epoch this worker has accepted a command from. */
  highestEpoch: number;
}

/** The value of the leader lease: who leads, where its API is, and its lease token. */
export interface LeaderLease {
  id: string;
  url: string;
  token: string;
}

/**
 * What a command job asks of a worker: an API operation, or `validate` — the dry run of a
 * start (the engine's checks, nothing written) that the coordinator sends to every worker
 * before any of them is sent `start`.
 */
export type CommandOperation = SyncOperation | 'validate';

export const COMMAND_JOB_NAME: Record<CommandOperation, string> = {
  validate: 'validate',
  start: 'start',
  pause: 'pause',
  resume: 'resume',
  commit: 'commit',
  reverse: 'reverse',
};

export interface CommandJobData {
  operation: CommandOperation;
  /** The validated start body (start and validate). */
  request?: StartRequest;
  /**
   * Passed to the engine, which applies a command id once (X-Command-Id semantics); a validate
   * carries the id of the start it precedes (a start already applied validates as accepted).
   */
  commandId: string;
  /** Fencing: the leadership epoch of the coordinator that issued it. */
  epoch: number;
  issuedBy: string;
}

/** A child job's return value: the worker's verdict, which the coordinator reports. */
export type CommandJobResult =
  { ok: true } | { ok: false; error: ApiErrorName; errorDescription: string };
