import {
  COMMAND_FLOW_QUEUE,
  COMMAND_JOB_NAME,
  CONTROL_PREFIX,
  commandJobId,
  commandQueueName,
  type CommandJobData,
  type CommandJobResult,
} from '@sync/contracts';
import { redisOptions, watchOutages } from '@sync/service';
import { FlowProducer, Queue, Worker, type JobsOptions } from 'bullmq';
import type { Outcomes } from './command-outcomes';

/** Kept a day: a re-sent command id finds its jobs and is not added again. */
const KEEP = { age: 24 * 3600, count: 10_000 };
/** A worker answers NotReady while it boots, or loses its connection: retried, not failed. */
const CHILD_OPTIONS: JobsOptions = {
  attempts: 1_000,
  backoff: { type: 'fixed', delay: 1_000 },
  removeOnComplete: KEEP,
  removeOnFail: KEEP,
};
const POLL_MS = 100;

/**
 * Each command is one BullMQ flow: a parent on COMMAND_FLOW_QUEUE and one child per target
 * worker on that worker's queue, with deterministic ids (command id + epoch + worker). The same
 * command sent again (a retried request, a follower's forward) finds its flow and only waits.
 * The parent completes when every child has (a small consumer here completes it with the
 * children's answers, so parents do not pile up).
 */
export class CommandBroadcaster {
  private readonly flows: FlowProducer;
  private readonly parents: Queue;
  private readonly queues = new Map<string, Queue>();
  private readonly parentConsumer: Worker;

  constructor(private readonly redisUrl: string) {
    const connection = redisOptions(redisUrl, 'command');
    this.flows = new FlowProducer({ connection, prefix: CONTROL_PREFIX });
    this.parents = new Queue(COMMAND_FLOW_QUEUE, { connection, prefix: CONTROL_PREFIX });
    this.parentConsumer = new Worker(COMMAND_FLOW_QUEUE, (job) => job.getChildrenValues(), {
      connection: redisOptions(redisUrl, 'blocking'),
      prefix: CONTROL_PREFIX,
    });
    for (const emitter of [this.flows, this.parents, this.parentConsumer])
      watchOutages(emitter, redisUrl, () => undefined);
  }

  /** Sends the command (once) and waits until every worker took it or `deadline` passes. */
  async broadcast(
    data: CommandJobData,
    workers: readonly string[],
    timeoutMs: number,
  ): Promise<Outcomes> {
    const parentId = commandJobId(data.commandId, data.epoch, undefined, data.operation);
    if (!(await this.parents.getJob(parentId))) {
      await this.flows.add({
        name: COMMAND_JOB_NAME[data.operation],
        queueName: COMMAND_FLOW_QUEUE,
        data: { ...data, workers },
        opts: { jobId: parentId, removeOnComplete: KEEP, removeOnFail: KEEP },
        children: workers.map((worker) => ({
          name: COMMAND_JOB_NAME[data.operation],
          queueName: commandQueueName(worker),
          data,
          opts: {
            ...CHILD_OPTIONS,
            jobId: commandJobId(data.commandId, data.epoch, worker, data.operation),
          },
        })),
      });
    }
    const deadline = Date.now() + timeoutMs;
    const outcomes: Outcomes = new Map(workers.map((w) => [w, 'pending']));
    for (;;) {
      for (const worker of workers) {
        if (outcomes.get(worker) !== 'pending') continue;
        const job = await this.queue(worker).getJob(
          commandJobId(data.commandId, data.epoch, worker, data.operation),
        );
        if (job && (await job.getState()) === 'completed')
          outcomes.set(worker, job.returnvalue as CommandJobResult);
      }
      if (![...outcomes.values()].includes('pending') || Date.now() >= deadline) return outcomes;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** Commands waiting in a worker's queue (shown per instance in progress). */
  async pending(worker: string): Promise<number> {
    const counts = await this.queue(worker).getJobCounts('waiting', 'active', 'delayed');
    return (counts.waiting ?? 0) + (counts.active ?? 0) + (counts.delayed ?? 0);
  }

  async close(): Promise<void> {
    await Promise.allSettled([
      this.parentConsumer.close(),
      this.flows.close(),
      this.parents.close(),
      ...[...this.queues.values()].map((q) => q.close()),
    ]);
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
