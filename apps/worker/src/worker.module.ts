import type { DynamicModule } from '@nestjs/common';
import { createSyncEngine } from '@sync/mongo';
import type { WorkerConfig } from './config/worker-options.dto';
import type { JsonLogger } from './logging/json-logger';
import { SyncApiModule } from './sync-api.module';

/** Composition root of the worker: the HTTP API driving the MongoDB-backed engine. */
export class WorkerModule {
  static forRoot(
    config: WorkerConfig,
    logger: JsonLogger,
    onFatal: (error: unknown) => void,
  ): DynamicModule {
    return SyncApiModule.register({
      clusters: config.clusters,
      ...(config.id ? { id: config.id } : {}),
      logger,
      engineFactory: createSyncEngine,
      onFatal,
    });
  }
}
