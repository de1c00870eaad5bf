import {
  COMMAND_FLOW_QUEUE,
  COMMAND_JOB_NAME,
  CONTROL_KEYS,
  CONTROL_PREFIX,
  commandJobId,
  commandQueueName,
  type CommandJobData,
  type CommandJobResult,
} from '@sync/contracts';
import { redisOptions, redisTimeMs, watchOutages } from '@sync/service';
import { FlowProducer, Queue, QueueEvents, type Job, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Outcomes } from './command-outcomes';

/** Kept a day: a re-sent command id finds its jobs and is not added again. */
const KEEP = { age: 24 * 3600, count: 10_000 };
/**
 * A worker answers NotReady while it boots, or loses its connection: retried, a bounded number
 * of times (about half a minute), then the child fails — and with it the flow
 * (failParentOnFailure), which ends the wait at once with the reason. Attempts are shown per
 * instance in progress (`commands`).
 */
export const COMMAND_ATTEMPTS = 30;
const CHILD_OPTIONS: JobsOptions = {
  attempts: COMMAND_ATTEMPTS,
  backoff: { type: 'fixed', delay: 1_000 },
  failParentOnFailure: true,
  removeOnComplete: KEEP,
  removeOnFail: KEEP,
};

/** A command waiting in (or running from) a worker's queue, as progress shows it. */
export interface PendingCommand {
  operation: string;
  commandId: string;
  sequence: number | null;
  state: 'waiting' | 'active' | 'retrying';
  attemptsMade: number;
  attempts: number;
  lastError?: string;
}

/**
 * Each command is one BullMQ flow: a parent on COMMAND_FLOW_QUEUE and one child per target
 * worker on that worker's queue, with deterministic ids (command id + epoch + worker). The same
 * command sent again while its flow is pending (a retried request, a follower's forward) finds
 * it and only waits. Completion comes from QueueEvents (`job.waitUntilFinished` on the parent,
 * which the parent consumer completes with its children's answers), never from polling.
 *
 * Order and expiry: every new command takes the next number of one Redis counter and an
 * expiry in Redis' time; flows of older commands still pending are withdrawn from every queue
 * (superseded), and a flow still pending at its deadline is withdrawn too (timed out), so no
 * worker runs a command late. Workers also refuse a command older than one they have taken, or
 * past its expiry by Redis' clock (CommandSuperseded), in case a withdrawal raced with a take.
 */
export class CommandBroadcaster {
  private readonly flows: FlowProducer;
  private readonly parents: Queue;
  private readonly flowEvents: QueueEvents;
  private readonly queues = new Map<string, Queue>();

  constructor(
    private readonly redisUrl: string,
    private readonly redis: Redis,
  ) {
    const connection = redisOptions(redisUrl, 'command');
    this.flows = new FlowProducer({ connection, prefix: CONTROL_PREFIX });
    this.parents = new Queue(COMMAND_FLOW_QUEUE, { connection, prefix: CONTROL_PREFIX });
    this.flowEvents = new QueueEvents(COMMAND_FLOW_QUEUE, {
      connection: redisOptions(redisUrl, 'blocking'),
      prefix: CONTROL_PREFIX,
    });
    for (const emitter of [this.flows, this.parents, this.flowEvents])
      watchOutages(emitter, redisUrl, () => undefined);
  }

  /** Sends the command (once) and waits until every worker took it or `timeoutMs` passes. */
  async broadcast(
    data: CommandJobData,
    workers: readonly string[],
    timeoutMs: number,
  ): Promise<Outcomes> {
    const parentId = commandJobId(data.commandId, data.epoch, undefined, data.operation);
    let parent: Job | undefined = await this.parents.getJob(parentId);
    if (parent && (await parent.getState()) === 'failed') {
      // An earlier try gave up (retries exhausted): a resend sends it again.
      await this.withdraw(parent);
      parent = undefined;
    }
    if (!parent) {
      const sequence = await this.redis.incr(CONTROL_KEYS.commandSequence);
      const stamped: CommandJobData = {
        ...data,
        sequence,
        expiresAt: (await redisTimeMs(this.redis)) + timeoutMs,
      };
      await this.supersede(stamped);
      await this.flowEvents.waitUntilReady();
      const added = await this.flows.add({
        name: COMMAND_JOB_NAME[data.operation],
        queueName: COMMAND_FLOW_QUEUE,
        data: { ...stamped, workers },
        opts: { jobId: parentId, removeOnComplete: KEEP, removeOnFail: KEEP },
        children: workers.map((worker) => ({
          name: COMMAND_JOB_NAME[data.operation],
          queueName: commandQueueName(worker),
          data: stamped,
          opts: {
            ...CHILD_OPTIONS,
            jobId: commandJobId(data.commandId, data.epoch, worker, data.operation),
          },
        })),
      });
      parent = added.job;
    }
    await parent.waitUntilFinished(this.flowEvents, timeoutMs).catch(() => undefined);
    const outcomes = await this.outcomes(data, workers);
    if ([...outcomes.values()].includes('pending')) await this.withdraw(parent);
    return outcomes;
  }

  /** Commands waiting in, running from or retrying in a worker's queue (progress). */
  async pending(worker: string): Promise<PendingCommand[]> {
    const queue = this.queue(worker);
    const [active, waiting, delayed] = await Promise.all([
      queue.getJobs(['active']),
      queue.getJobs(['waiting', 'prioritized']),
      queue.getJobs(['delayed']),
    ]);
    const describe = (state: PendingCommand['state']) => (job: Job) => {
      const data = job.data as CommandJobData;
      return {
        operation: data.operation,
        commandId: data.commandId,
        sequence: data.sequence ?? null,
        state,
        attemptsMade: job.attemptsMade,
        attempts: job.opts.attempts ?? 1,
        ...(job.failedReason ? { lastError: job.failedReason } : {}),
      };
    };
    return [
      ...active.map(describe('active')),
      ...waiting.map(describe('waiting')),
      ...delayed.map(describe('retrying')),
    ].sort((a, b) => (a.sequence ?? 0) - (b.sequence ?? 0));
  }

  async close(): Promise<void> {
    await Promise.allSettled([
      this.flowEvents.close(),
      this.flows.close(),
      this.parents.close(),
      ...[...this.queues.values()].map((q) => q.close()),
    ]);
  }

  /** Each worker's verdict; `pending` when not taken; a child out of retries as CommandPending. */
  private async outcomes(data: CommandJobData, workers: readonly string[]): Promise<Outcomes> {
    const outcomes: Outcomes = new Map();
    for (const worker of workers) {
      const job = await this.queue(worker).getJob(
        commandJobId(data.commandId, data.epoch, worker, data.operation),
      );
      const state = job ? await job.getState() : 'missing';
      if (job && state === 'completed') {
        outcomes.set(worker, job.returnvalue as CommandJobResult);
      } else if (job && state === 'failed') {
        outcomes.set(worker, {
          ok: false,
          error: 'CommandPending',
          errorDescription: `${worker} could not take ${data.operation} after ${job.attemptsMade} attempts (${job.failedReason}); it was withdrawn. Retry with the same X-Command-Id.`,
        });
      } else if (!job) {
        outcomes.set(worker, {
          ok: false,
          error: 'CommandSuperseded',
          errorDescription: `${data.operation} was withdrawn from ${worker}'s queue before it took it: a newer command superseded it.`,
        });
      } else {
        outcomes.set(worker, 'pending');
      }
    }
    return outcomes;
  }

  /** Withdraws every pending flow of an older command (a newer one supersedes it). */
  private async supersede(newer: CommandJobData): Promise<void> {
    const flows = await this.parents.getJobs(['waiting-children', 'waiting', 'delayed']);
    for (const flow of flows) {
      const data = flow.data as CommandJobData;
      if (data.commandId === newer.commandId && data.operation === newer.operation) continue;
      if ((data.sequence ?? 0) < (newer.sequence ?? 0)) await this.withdraw(flow);
    }
  }

  /**
   * Removes a flow and its children from every queue. A child a worker is running cannot be
   * removed (it is locked): the other children still are, one by one.
   */
  private async withdraw(parent: Job): Promise<void> {
    try {
      await parent.remove();
      return;
    } catch {
      // some child is locked (being processed): remove the others
    }
    const data = parent.data as CommandJobData & { workers?: string[] };
    for (const worker of data.workers ?? []) {
      const child = await this.queue(worker).getJob(
        commandJobId(data.commandId, data.epoch, worker, data.operation),
      );
      if (child && !(await child.isActive())) await child.remove().catch(() => undefined);
    }
    await parent.remove().catch(() => undefined);
  }

  private queue(worker: string): Queue {
    let queue = this.queues.get(worker);
    if (!queue) {
      queue = new Queue(commandQueueName(worker), {
        connection: redisOptions(this.redisUrl, 'command'),
        prefix: CONTROL_PREFIX,
      });
      watchOutages(queue, this.redisUrl, () => undefined);
      this.queues.set(worker, queue);
    }
    return queue;
  }
}
