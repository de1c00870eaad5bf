import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, type OnApplicationBootstrap, type Type } from '@nestjs/common';
import type { CommandJobData, CommandJobResult } from '@sync/contracts';
import type { Job } from 'bullmq';
import { resumeConsuming, stopConsuming } from './consumer-switch';
import { WORKER_AGENT } from './worker-agent.lifecycle';
import type { WorkerAgent } from './worker-agent';

/**
 * The @nestjs/bullmq processor of this worker's command queue (`sync.commands.<id>`, a name
 * known only at launch, hence a class per queue). It does not run until the engine exists
 * (autorun off), so no command is taken too early; one command at a time. @nestjs/bullmq
 * closes it on shutdown.
 */
export function commandConsumerFor(queueName: string): Type<WorkerHost> {
  @Processor(queueName, { concurrency: 1, autorun: false })
  class CommandConsumer extends WorkerHost implements OnApplicationBootstrap {
    constructor(@Inject(WORKER_AGENT) private readonly agent: WorkerAgent) {
      super();
    }

    onApplicationBootstrap(): void {
      // Not the shard's live worker (claim lost, a duplicate --id): the queue is left to the
      // live process; a job taken meanwhile went back to the queue (NotTheLiveWorkerError).
      // Its shard claimed again after a lapsed lease, it takes the commands again.
      this.agent.onStopConsuming(
        () => void stopConsuming(this.worker).catch(() => undefined),
        () => {
          if (this.agent.isClosed) return;
          resumeConsuming(this.worker, () => !this.agent.isClosed && this.agent.consumes);
        },
      );
      this.agent.whenEngineReady(() => {
        if (this.agent.isClosed || !this.agent.consumes || this.worker.isRunning()) return;
        if (this.worker.isPaused()) resumeConsuming(this.worker, () => this.agent.consumes);
        else void this.worker.run().catch(() => undefined);
      });
    }

    process(job: Job<CommandJobData, CommandJobResult>): Promise<CommandJobResult> {
      return this.agent.take(job);
    }

    /** Redis outages are reported once by the agent's own connection; BullMQ reconnects. */
    @OnWorkerEvent('error')
    onError(): void {}
  }
  return CommandConsumer;
}
