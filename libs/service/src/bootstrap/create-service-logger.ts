import { redisUrlSecrets, uriSecrets } from '@sync/contracts';
import { LaunchConfigError } from '../config/launch-config.error';
import type { ServiceConfig } from '../config/service-options.dto';
import { JsonLogger, type LogSink } from '../logging/json-logger';
import { openFileSink, stdoutSink } from '../logging/log-sinks';

/**
 * The logger of a worker or coordinator: stdout plus `--logPath`, level from `--verbosity`, and the clusters'
 * passwords (and the API token) registered as secrets before anything can log them. An unwritable log file is a
 * launch error (exit 2), not a silent loss of the log.
 */
export function createServiceLogger(config: ServiceConfig): JsonLogger {
  const sinks: LogSink[] = [stdoutSink];
  if (config.logPath !== undefined) {
    try {
      sinks.push(openFileSink(config.logPath).sink);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'open error';
      throw new LaunchConfigError(
        `--logPath ${config.logPath} cannot be opened for writing (${code})`,
      );
    }
  }
  const logger = new JsonLogger(config.verbosity, sinks);
  logger.addSecrets(Object.values(config.clusters).flatMap(uriSecrets));
  if (config.redis !== undefined) logger.addSecrets(redisUrlSecrets(config.redis));
  if (config.apiToken !== undefined) logger.addSecrets([config.apiToken]);
  return logger;
}
