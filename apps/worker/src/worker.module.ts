import { BullModule } from '@nestjs/bullmq';
import { Module, type DynamicModule } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { CONTROL_PREFIX, UNSHARDED_WORKER_ID, commandQueueName } from '@sync/contracts';
import { createSyncEngine } from '@sync/mongo';
import {
  controlWallClock,
  readTestClockOffset,
  redisOptions,
  SyncApiModule,
  type JsonLogger,
  type ServiceConfig,
} from '@sync/service';
import { commandConsumerFor } from './control/command-consumer';
import { CoordinatedEngine } from './control/coordinated-engine';
import { MongoEpochRecord } from './control/epoch-record';
import { WorkerAgent } from './control/worker-agent';
import { WORKER_AGENT, WorkerAgentLifecycle } from './control/worker-agent.lifecycle';

/**
 * Composition root of the worker: the HTTP API driving the MongoDB-backed engine. With
 * `--redis` the worker joins a coordinator: commands arrive on its queue, its own API refuses
 * them (CommandsThroughCoordinator) and serves progress.
 */
@Module({})
export class WorkerModule {
  static forRoot(
    config: ServiceConfig,
    logger: JsonLogger,
    onFatal: (error: unknown) => void,
    url: Promise<string>,
  ): DynamicModule {
    const agent = config.redis
      ? new WorkerAgent({
          redisUrl: config.redis,
          workerId: config.id ?? UNSHARDED_WORKER_ID,
          shardId: config.id ?? null,
          logger,
          wallClock: controlWallClock(readTestClockOffset(process.env)),
          epochRecord: new MongoEpochRecord(
            config.clusters.cluster1,
            config.id ?? UNSHARDED_WORKER_ID,
          ),
        })
      : null;
    void url.then((listening) => agent?.setUrl(listening));
    const api = SyncApiModule.register({
      clusters: config.clusters,
      ...(config.id ? { id: config.id } : {}),
      logger,
      engineFactory: async (options) => {
        const engine = await createSyncEngine(options);
        if (!agent) return engine;
        agent.attach(engine);
        return new CoordinatedEngine(engine);
      },
      onFatal,
    });
    if (!agent) return { module: WorkerModule, imports: [api] };
    const workerId = config.id ?? UNSHARDED_WORKER_ID;
    return {
      module: WorkerModule,
      imports: [
        api,
        ScheduleModule.forRoot(),
        // Blocking connections (maxRetriesPerRequest: null): the consumer survives a Redis restart.
        BullModule.forRoot({
          connection: redisOptions(config.redis!, 'blocking'),
          prefix: CONTROL_PREFIX,
        }),
        // Registers the queue and @nestjs/bullmq's explorer, which starts CommandConsumer.
        BullModule.registerQueue({ name: commandQueueName(workerId) }),
      ],
      providers: [
        { provide: WORKER_AGENT, useValue: agent },
        WorkerAgentLifecycle,
        commandConsumerFor(commandQueueName(workerId)),
      ],
    };
  }
}
