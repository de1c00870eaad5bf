import {
  Inject,
  Injectable,
  Module,
  type DynamicModule,
  type MiddlewareConsumer,
  type NestModule,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EngineHolder } from './engine/engine-holder';
import type { EngineFactory } from './engine/engine-factory';
import { CLUSTER_NAMES, SYNC_API_OPTIONS, SERVICE_LOGGER } from './engine/engine.tokens';
import { ApiExceptionFilter } from './http/api-exception.filter';
import { JsonBodyMiddleware } from './http/json-body.middleware';
import { SyncController } from './http/sync.controller';
import type { JsonLogger } from './logging/json-logger';
import { figuresFromEngine, type InstanceFigures } from './metrics/instance-figures';
import { MetricsController } from './metrics/metrics.controller';
import { MetricsLifecycle } from './metrics/metrics.lifecycle';
import { SYNC_METRICS } from './metrics/metrics.tokens';
import { SyncMetrics } from './metrics/sync-metrics';
import { OpenApiController, OpenApiDocumentHolder } from './openapi/openapi-document';

export interface SyncApiOptions {
  /** Cluster name → connection string, as configured at launch. */
  clusters: Record<string, string>;
  id?: string;
  logger: JsonLogger;
  engineFactory: EngineFactory;
  /** The engine could not be created or failed in the background: the process should exit. */
  onFatal: (error: unknown) => void;
  /**
   * Runs after the body is parsed and before the controller (the coordinator forwards commands
   * to its leader here). A plain function, so it needs nothing from this module's injector.
   */
  commandMiddleware?: (req: IncomingMessage, res: ServerResponse, next: () => void) => unknown;
  /** What `GET /metrics` shows; default: this instance's engine (the coordinator: its workers). */
  metricsSource?: () => InstanceFigures[];
}

/** Creates the engine after boot and closes it on shutdown (app.close() or a signal). */
@Injectable()
class EngineLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    private readonly holder: EngineHolder,
    @Inject(SYNC_API_OPTIONS) private readonly options: SyncApiOptions,
  ) {}

  onApplicationBootstrap(): void {
    const { clusters, id, logger, engineFactory, onFatal } = this.options;
    this.holder
      .initialize(() => engineFactory({ clusters, ...(id ? { id } : {}), logger, onFatal }))
      .catch(onFatal);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.holder.close();
  }
}

/**
 * The HTTP API of one sync instance, independent of how the engine is built: the worker app
 * passes its composition root (`createSyncEngine`), tests pass a fake.
 */
@Module({})
export class SyncApiModule implements NestModule {
  constructor(@Inject(SYNC_API_OPTIONS) private readonly options: SyncApiOptions) {}

  static register(options: SyncApiOptions): DynamicModule {
    return {
      module: SyncApiModule,
      controllers: [SyncController, MetricsController, OpenApiController],
      providers: [
        { provide: SYNC_API_OPTIONS, useValue: options },
        { provide: SERVICE_LOGGER, useValue: options.logger },
        { provide: CLUSTER_NAMES, useValue: Object.keys(options.clusters) },
        { provide: APP_FILTER, useClass: ApiExceptionFilter },
        EngineHolder,
        EngineLifecycle,
        {
          provide: SYNC_METRICS,
          inject: [EngineHolder],
          useFactory: (holder: EngineHolder) =>
            new SyncMetrics({
              source:
                options.metricsSource ??
                (() => [figuresFromEngine(options.id, () => holder.current())]),
            }),
        },
        MetricsLifecycle,
        OpenApiDocumentHolder,
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    const extra = this.options.commandMiddleware;
    consumer.apply(JsonBodyMiddleware, ...(extra ? [extra] : [])).forRoutes(SyncController);
  }
}
