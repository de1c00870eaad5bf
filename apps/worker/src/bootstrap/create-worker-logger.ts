import { uriSecrets } from '@sync/contracts';
import { WorkerConfigError } from '../config/worker-config.error';
import type { WorkerConfig } from '../config/worker-options.dto';
import { JsonLogger, type LogSink } from '../logging/json-logger';
import { openFileSink, stdoutSink } from '../logging/log-sinks';

/**
 * The worker's logger: stdout plus `--logPath`, level from `--verbosity`, and the clusters'
 * passwords registered as secrets before anything can log them. An unwritable log file is a
 * launch error (exit 2), not a silent loss of the log.
 */
export function createWorkerLogger(config: WorkerConfig): JsonLogger {
  const sinks: LogSink[] = [stdoutSink];
  if (config.logPath !== undefined) {
    try {
      sinks.push(openFileSink(config.logPath).sink);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'open error';
      throw new WorkerConfigError(
        `--logPath ${config.logPath} cannot be opened for writing (${code})`,
      );
    }
  }
  const logger = new JsonLogger(config.verbosity, sinks);
  logger.addSecrets(Object.values(config.clusters).flatMap(uriSecrets));
  return logger;
}
