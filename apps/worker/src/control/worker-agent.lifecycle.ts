import {
  Inject,
  Injectable,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { WorkerAgent } from './worker-agent';

export const WORKER_AGENT = Symbol('WORKER_AGENT');
/** Heartbeat period; the coordinator shows a worker missing after a few missed ones. */
export const HEARTBEAT_MS = 1_000;

/** Heartbeats on @nestjs/schedule's @Interval; the agent closes (BullMQ worker first) on shutdown. */
@Injectable()
export class WorkerAgentLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(@Inject(WORKER_AGENT) private readonly agent: WorkerAgent) {}

  onApplicationBootstrap(): void {
    this.heartbeat();
  }

  @Interval('worker-heartbeat', HEARTBEAT_MS)
  heartbeat(): void {
    void this.agent.heartbeat();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.agent.close();
  }
}
