import {
  ApiError,
  type CommandOperation,
  type CommandOptions,
  type Progress,
  type StartRequest,
  type SyncOperation,
  type SyncState,
} from '@sync/contracts';
import type { SyncEngine } from '@sync/engine';
import type { JsonLogger } from '@sync/service';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import {
  commitAcrossWorkers,
  summarizeOutcomes,
  validateThenStart,
  type Outcomes,
} from './broadcast/command-outcomes';
import type { CommandBroadcaster } from './broadcast/command-broadcaster';
import { targetWorkers } from './broadcast/worker-set';
import type { ClusterClients } from './clusters/cluster-clients';
import { workerShardIds } from './clusters/cluster-watch';
import type { Leadership } from './leadership/leadership';
import type { ProgressBoard } from './progress/progress-board';

export interface CoordinatorEngineOptions {
  id: string;
  leadership: Leadership;
  board: ProgressBoard;
  broadcaster: CommandBroadcaster;
  clusters: ClusterClients;
  commandTimeoutMs: number;
  logger: JsonLogger;
}

/**
 * The coordinator behind the same `/api/v1` controller a worker has: a command becomes one
 * broadcast to every worker of the sync, progress is the merge of their reports. Commands reach
 * this object only on the leader (followers forward them before the controller).
 */
export class CoordinatorEngine implements SyncEngine {
  /** Worker id → when (this process's monotonic clock) a roster last listed it registered. */
  private readonly registeredAt = new Map<string, number>();

  constructor(private readonly options: CoordinatorEngineOptions) {}

  get state(): SyncState {
    return this.options.board.state();
  }

  progress(): Progress {
    return this.options.board.progress();
  }

  start(request: StartRequest, options?: CommandOptions): Promise<void> {
    return this.command('start', options, request);
  }
  pause(options?: CommandOptions): Promise<void> {
    return this.command('pause', options);
  }
  resume(options?: CommandOptions): Promise<void> {
    return this.command('resume', options);
  }
  commit(options?: CommandOptions): Promise<void> {
    return this.command('commit', options);
  }
  reverse(options?: CommandOptions): Promise<void> {
    return this.command('reverse', options);
  }

  async close(): Promise<void> {
    await this.options.broadcaster.close();
    await this.options.clusters.close();
  }

  /**
   * Workers this coordinator saw registered moments ago and that are not listed now: a command
   * would miss them (or, all gone, find no worker at all). Retrying is safe: NotReady (503).
   */
  private assertNoneReregistering(registrations: readonly { id: string }[]): void {
    const now = performance.now();
    for (const r of registrations) this.registeredAt.set(r.id, now);
    const listed = new Set(registrations.map((r) => r.id));
    const returning = [...this.registeredAt]
      .filter(([id, at]) => !listed.has(id) && now - at < REREGISTER_GRACE_MS)
      .map(([id]) => id);
    if (returning.length > 0) {
      throw new ApiError(
        'NotReady',
        `worker(s) ${returning.join(', ')} were registered moments ago and have not registered again (Redis restarted empty, or they are restarting); nothing was sent — retry shortly.`,
      );
    }
  }

  private async command(
    operation: SyncOperation,
    options: CommandOptions | undefined,
    request?: StartRequest,
  ): Promise<void> {
    const epoch = this.options.leadership.epoch();
    if (epoch === null) {
      const leader = this.options.leadership.leader();
      throw new ApiError(
        'NotLeader',
        leader && leader.id !== this.options.id
          ? `${leader.id} leads the coordinator replicas (${leader.url}); send ${operation} there or retry.`
          : 'No coordinator replica leads right now (an election or a Redis outage); retry shortly.',
      );
    }
    const roster = await this.options.board.refresh();
    this.assertNoneReregistering(roster.registrations);
    const shards = request
      ? await this.options.clusters.shardIds(request.source)
      : await workerShardIds(this.options.clusters, roster);
    const workers = targetWorkers(roster.registrations, shards);
    const commandId = options?.commandId ?? `auto-${randomUUID()}`;
    this.options.logger.info('broadcasting a command', { operation, commandId, epoch, workers });
    const send = (
      kind: CommandOperation,
      targets: readonly string[] = workers,
      id = commandId,
    ): Promise<Outcomes> =>
      this.options.broadcaster.broadcast(
        {
          operation: kind,
          ...(request ? { request } : {}),
          commandId: id,
          epoch,
          issuedBy: this.options.id,
        },
        targets,
        this.options.commandTimeoutMs,
      );
    let failure: ApiError | null;
    try {
      // A start is validated on every worker before any is sent start (none starts otherwise);
      // a commit some workers refused while others took it is sent to those again (they join).
      failure =
        operation === 'start'
          ? await validateThenStart(send)
          : operation === 'commit'
            ? await commitAcrossWorkers(
                (targets, round) =>
                  send(
                    'commit',
                    targets ?? workers,
                    round === 0 ? commandId : `${commandId}~join${round}`,
                  ),
                (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
              )
            : summarizeOutcomes(operation, await send(operation));
    } catch (error) {
      this.options.logger.warn('the command could not be queued', { operation, error });
      throw new ApiError(
        'RedisUnavailable',
        `${operation} could not be sent: Redis is unreachable; the workers keep syncing. Retry once it is back (with the same X-Command-Id it applies once).`,
      );
    }
    // Progress read right after the answer shows the command's effect (workers report first).
    await this.options.board.refresh().catch(() => undefined);
    if (failure) throw failure;
  }
}

/**
 * How long a worker that was registered and is listed no more counts as coming back: Redis
 * restarted empty (its registrations gone, the workers re-register with their next heartbeat),
 * or the worker is restarting. Meanwhile a command is answered "retry", not WorkersMissing.
 */
const REREGISTER_GRACE_MS = 15_000;
