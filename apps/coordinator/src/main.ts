import 'reflect-metadata';
import { probeRedis, runService } from '@sync/service';
import { readCoordinatorSettings } from './config/coordinator-settings';
import { COORDINATOR_USAGE } from './config/coordinator-usage';
import { CoordinatorModule } from './coordinator.module';

/** Entry point: options → logger → Redis reachable (else exit 2) → Nest app → listen. */
void runService({
  name: 'coordinator',
  usage: COORDINATOR_USAGE,
  requireRedis: true,
  // Tuning is the workers' (each engine's): the coordinator refuses it in its --config.
  engineTuning: false,
  preflight: async (config, logger) => {
    readCoordinatorSettings(process.env);
    await probeRedis(config.redis!, 5_000, (message, fields) => logger.warn(message, fields));
  },
  module: (config, logger, fatal, url) =>
    CoordinatorModule.forRoot(config, readCoordinatorSettings(process.env), logger, fatal, url),
});
