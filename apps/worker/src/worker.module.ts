import { randomBytes } from 'node:crypto';
import { BullModule } from '@nestjs/bullmq';
import { Module, type DynamicModule } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { CONTROL_PREFIX, UNSHARDED_WORKER_ID, commandQueueName } from '@sync/contracts';
import {
  controlWallClock,
  readTestClockOffset,
  redisOptions,
  SyncApiModule,
  type JsonLogger,
  type ServiceConfig,
} from '@sync/service';
import { createSyncEngine } from './composition/create-sync-engine';
import { engineTuning } from './composition/engine-tuning';
import { commandConsumerFor } from './control/command-consumer';
import { CoordinatedEngine } from './control/coordinated-engine';
import { MongoEpochRecord } from './control/epoch-record';
import { WorkerAgent } from './control/worker-agent';
import { WORKER_AGENT, WorkerAgentLifecycle } from './control/worker-agent.lifecycle';
import { mongoStandbyClusters } from './standby/mongo-standby-clusters';
import { StandbyEngine } from './standby/standby-engine';
import { DEFAULT_CLAIM_RENEW_MS, DEFAULT_CLAIM_STALE_MS } from '@sync/engine/shards/shard-claim';

/**
 * Composition root of the worker: the HTTP API driving the MongoDB-backed engine. With
 * `--redis` the worker joins a coordinator: commands arrive on its queue, its own API refuses
 * them (CommandsThroughCoordinator) and serves progress. With `--standby` (and `--id`) the API
 * holds a StandbyEngine until the shard was taken over from its active worker; only then is the
 * real engine created (and attached to the agent, which starts consuming the shard's queue).
 */
@Module({})
export class WorkerModule {
  static forRoot(
    config: ServiceConfig,
    logger: JsonLogger,
    onFatal: (error: unknown) => void,
    url: Promise<string>,
    /** The composition root (tests pass a stand-in to see what the engine is given). */
    createEngine: typeof createSyncEngine = createSyncEngine,
  ): DynamicModule {
    // This process's shard-claim instance: its engine claims with it, the coordinator shows it.
    const instance = randomBytes(8).toString('hex');
    const claim = {
      renewMs: config.claimRenewMs ?? DEFAULT_CLAIM_RENEW_MS,
      staleMs: config.claimStaleMs ?? DEFAULT_CLAIM_STALE_MS,
    };
    const standby = !!config.standby && config.id !== undefined;
    // `tuning` of --config / SYNC_TUNING, validated at launch; absent: the engine's defaults.
    const tuned = engineTuning(config.tuning);
    if (config.tuning)
      logger.info('engine tuning from the launch config', { tuning: config.tuning });
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
          ...(config.id !== undefined ? { instance } : {}),
          standby,
        })
      : null;
    void url.then((listening) => agent?.setUrl(listening));
    const api = SyncApiModule.register({
      clusters: config.clusters,
      ...(config.id ? { id: config.id } : {}),
      logger,
      engineFactory: async (options) => {
        const create = async () => {
          const engine = await createEngine({
            ...options,
            ...tuned,
            ...(options.id !== undefined
              ? { engine: { ...tuned.engine, shardClaim: { ...claim, instance } } }
              : {}),
          });
          await agent?.becomeActive();
          agent?.attach(engine);
          return Object.assign(agent ? new CoordinatedEngine(engine) : engine, {
            ready: engine.ready,
          });
        };
        if (!standby) return create();
        // --standby: watch the shard's claim; take it over once stale; then the engine above.
        const watched = mongoStandbyClusters(options.clusters, options.id!);
        return new StandbyEngine({
          shardId: options.id!,
          instance,
          clusters: watched.clusters,
          logger: options.logger,
          claim,
          activate: create,
          onTakeover: ({ epoch, waitedMs }) =>
            logger.info('standby took its shard over', { shard: options.id, epoch, waitedMs }),
          onClose: watched.close,
        });
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
