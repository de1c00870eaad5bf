import { BullModule } from '@nestjs/bullmq';
import { Module, type DynamicModule } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { COMMAND_FLOW_QUEUE, CONTROL_KEYS, CONTROL_PREFIX } from '@sync/contracts';
import {
  createRedis,
  figuresFromRoster,
  redisOptions,
  SyncApiModule,
  type JsonLogger,
  type ServiceConfig,
} from '@sync/service';
import { hostname } from 'node:os';
import { CommandBroadcaster } from './broadcast/command-broadcaster';
import { FlowParentProcessor } from './broadcast/flow-parent.processor';
import { ClusterClients } from './clusters/cluster-clients';
import { ClusterWatch } from './clusters/cluster-watch';
import type { CoordinatorSettings } from './config/coordinator-settings';
import { COORDINATOR_PARTS, CoordinatorLifecycle } from './coordinator.lifecycle';
import { CoordinatorEngine } from './coordinator-engine';
import { leaderForwarding } from './http/leader-forwarding';
import { MongoEpochStore } from './leadership/epoch-store';
import { Leadership } from './leadership/leadership';
import { RedisLease } from './leadership/redis-lease';
import { ProgressBoard } from './progress/progress-board';

export const DEFAULT_COORDINATOR_ID = 'coordinator';

/**
 * Composition root of the coordinator: the worker's `/api/v1` stack (SyncApiModule) over a
 * CoordinatorEngine — lease + epoch leadership, BullMQ broadcast, merged progress — with
 * followers forwarding commands to the leader before the controller.
 */
@Module({})
export class CoordinatorModule {
  static forRoot(
    config: ServiceConfig,
    settings: CoordinatorSettings,
    logger: JsonLogger,
    onFatal: (error: unknown) => void,
    url: Promise<string>,
  ): DynamicModule {
    const redisUrl = config.redis!;
    const id = config.id ?? DEFAULT_COORDINATOR_ID;
    const redis = createRedis(redisUrl, 'command', (message) =>
      logger.warn(`${message}; commands answer RedisUnavailable until it is back`),
    );
    redis.on('ready', () => logger.info('connected to Redis'));
    const clusters = new ClusterClients(config.clusters);
    let advertised: string | null = null;
    void url.then((listening) => (advertised = advertisedUrl(listening)));
    const leadership = new Leadership({
      lease: new RedisLease(redis, CONTROL_KEYS.leader, settings.leaseTtlMs),
      epochs: new MongoEpochStore(() => clusters.client('cluster1')),
      id,
      url: () => advertised,
      log: (message, fields) => logger.info(message, fields),
    });
    const broadcaster = new CommandBroadcaster(redisUrl, redis);
    const watch = new ClusterWatch(clusters, Object.keys(config.clusters));
    const board = new ProgressBoard({
      redis,
      staleMs: settings.workerStaleMs,
      expireMs: settings.workerExpireMs,
      expectedShards: () => watch.expectedShards(),
      pings: () => watch.pings(),
      syncID: id,
      coordinatorID: () => leadership.leader()?.id ?? null,
      pending: (worker) => broadcaster.pending(worker),
    });
    const engine = new CoordinatorEngine({
      id,
      leadership,
      board,
      broadcaster,
      clusters,
      commandTimeoutMs: settings.commandTimeoutMs,
      logger,
    });
    return {
      module: CoordinatorModule,
      imports: [
        ScheduleModule.forRoot(),
        // The flows' parent consumer (FlowParentProcessor) on a blocking connection.
        BullModule.forRoot({
          connection: redisOptions(redisUrl, 'blocking'),
          prefix: CONTROL_PREFIX,
        }),
        // Registers the queue and @nestjs/bullmq's explorer, which starts FlowParentProcessor.
        BullModule.registerQueue({ name: COMMAND_FLOW_QUEUE }),
        SyncApiModule.register({
          clusters: config.clusters,
          id,
          logger,
          engineFactory: () => Promise.resolve(engine),
          onFatal,
          // GET /metrics: every worker's figures as last published to Redis, by `worker` label.
          metricsSource: () => {
            const roster = board.lastRoster();
            if (!roster) return [];
            return figuresFromRoster({
              ...roster,
              now: board.redisNow() ?? roster.redisNow,
              staleMs: settings.workerStaleMs,
            });
          },
          commandMiddleware: leaderForwarding(
            leadership,
            id,
            settings.commandTimeoutMs,
            () => board.refresh(),
            config.apiToken,
          ),
        }),
      ],
      providers: [
        {
          provide: COORDINATOR_PARTS,
          useValue: {
            leadership,
            board,
            clusters: watch,
            redis,
            leaseTtlMs: settings.leaseTtlMs,
          },
        },
        CoordinatorLifecycle,
        FlowParentProcessor,
      ],
    };
  }
}

/** Followers forward to this URL: a wildcard bind address is replaced by the host name. */
function advertisedUrl(listening: string): string {
  const url = new URL(listening);
  if (url.hostname === '0.0.0.0' || url.hostname === '[::]') url.hostname = hostname();
  return url.toString().replace(/\/$/, '');
}
