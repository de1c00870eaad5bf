import {
  Inject,
  Injectable,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { WorkerAgent } from './worker-agent';

export const WORKER_AGENT = Symbol('WORKER_AGENT');
/** Heartbeat period; the coordinator shows a worker missing after a few missed ones. */
export const HEARTBEAT_MS = 1_000;

/** Heartbeats on @nestjs/schedule; the agent closes (BullMQ worker first) on shutdown. */
@Injectable()
export class WorkerAgentLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    @Inject(WORKER_AGENT) private readonly agent: WorkerAgent,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  onApplicationBootstrap(): void {
    const timer = setInterval(() => void this.agent.heartbeat(), HEARTBEAT_MS);
    this.scheduler.addInterval('worker-heartbeat', timer);
    void this.agent.heartbeat();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.scheduler.doesExist('interval', 'worker-heartbeat'))
      this.scheduler.deleteInterval('worker-heartbeat');
    await this.agent.close();
  }
}
