import type { INestApplication } from '@nestjs/common';
import type { JsonLogger } from '../logging/json-logger';

/** A shutdown that hangs (a stuck driver call) must not keep the process alive forever. */
const SHUTDOWN_TIMEOUT_MS = 15_000;

/**
 * SIGTERM/SIGINT → `app.close()` (Nest's shutdown hooks close the engine; its persisted state
 * stays) → exit 0. Not `app.enableShutdownHooks()`: after the hooks it re-raises the signal, so
 * the process would die by signal instead of exiting 0. A second signal forces the exit.
 */
export function shutdownOnSignals(
  app: INestApplication,
  logger: JsonLogger,
  program = 'worker',
): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (closing) {
      logger.warn('second signal: exiting without waiting for shutdown', { signal });
      process.exit(1);
    }
    closing = true;
    logger.info(`${program} shutting down`, { signal });
    setTimeout(() => {
      logger.error('shutdown timed out', { timeoutMs: SHUTDOWN_TIMEOUT_MS });
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS).unref();
    app.close().then(
      () => {
        logger.info(`${program} stopped`);
        process.exit(0);
      },
      (error: unknown) => {
        logger.error('shutdown failed', { error });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
