import type { ApiErrorName } from './api-errors';
import type { Progress } from './progress';
import type { StartRequest } from './start-request';
import type { SyncOperation } from './sync-operations';

/**
 * The control plane between a coordinator and its workers, declared in one place:
 * Redis keys, BullMQ queue names, job names, payloads and results. Everything lives under one
 * prefix, so a Redis shared with other applications keeps these apart.
 */
export const CONTROL_PREFIX = 'cluster-sync';

export const CONTROL_KEYS = {
  /**
   * Hash: worker id → WorkerRegistration (JSON). A registration whose worker has not beaten for
   * the expiry (CLUSTER_SYNC_WORKER_EXPIRE_MS, judged by Redis' clock) is removed by the
   * coordinator; the worker registers again at its next heartbeat.
   */
  workers: `${CONTROL_PREFIX}:workers`,
  /** Hash: worker id → Redis' own TIME (ms) at its last heartbeat: liveness by one clock. */
  seen: `${CONTROL_PREFIX}:seen`,
  /** String: the worker's latest WorkerReport (JSON), rewritten every heartbeat. */
  report: (workerId: string) => `${CONTROL_PREFIX}:report:${workerId}`,
  /**
   * Hash: worker id → LastKnownProgress (JSON): its last report that carried progress, so a
   * restarted (starting) or missing worker still shows its last figures.
   */
  lastProgress: `${CONTROL_PREFIX}:last-progress`,
  /** Counter (INCR): the order of commands, one sequence for all coordinator replicas. */
  commandSequence: `${CONTROL_PREFIX}:command-seq`,
  /** Hash: worker id → the highest command sequence it has taken (it never runs an older one). */
  applied: `${CONTROL_PREFIX}:applied`,
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
  /**
   * Milliseconds of this report. Written by the worker with its own clock, but the coordinator
   * replaces it with Redis' TIME of the heartbeat (CONTROL_KEYS.seen) before judging its age:
   * two hosts' clocks are never compared.
   */
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

/** The last report of a worker that carried progress (CONTROL_KEYS.lastProgress). */
export interface LastKnownProgress {
  /** Redis' TIME (ms) of that heartbeat. */
  at: number;
  snapshot: unknown;
  progress: Progress;
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
  /**
   * The command's place in the order of all commands (INCR CONTROL_KEYS.commandSequence): a
   * worker never runs a command older than one it has taken. Absent from older builds' jobs.
   */
  sequence?: number;
  /**
   * Redis' TIME (ms) after which the command is void: the worker checks it against Redis' clock
   * (never its own) and refuses it with CommandExpired; the coordinator also removes it.
   */
  expiresAt?: number;
}

/** A child job's return value: the worker's verdict, which the coordinator reports. */
export type CommandJobResult =
  { ok: true } | { ok: false; error: ApiErrorName; errorDescription: string };
