import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { Server } from 'node:http';
import { createWorkerLogger } from './bootstrap/create-worker-logger';
import { listeningUrl } from './bootstrap/listening-url';
import { readLaunchConfig } from './bootstrap/read-launch-config';
import { shutdownOnSignals } from './bootstrap/shutdown-on-signals';
import { WorkerConfigError } from './config/worker-config.error';
import { configureHttpApp } from './http/configure-http-app';
import type { JsonLogger } from './logging/json-logger';
import { NestLoggerAdapter } from './logging/nest-logger.adapter';
import { WorkerModule } from './worker.module';

/** Entry point: options → logger → Nest app → listen. No logic lives here (STYLE.md §1). */
async function main(): Promise<void> {
  const launch = readLaunchConfig(process.argv.slice(2), {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
  });
  if ('exitCode' in launch) return process.exit(launch.exitCode);
  const { config } = launch;

  let logger: JsonLogger;
  try {
    logger = createWorkerLogger(config);
  } catch (error) {
    if (!(error instanceof WorkerConfigError)) throw error;
    process.stderr.write(`worker: ${error.message}\n`);
    return process.exit(WorkerConfigError.EXIT_CODE);
  }
  const fatal = (error: unknown): never => {
    logger.fatal('worker stopping after a fatal error', { error });
    process.exit(1);
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);

  // A sync that cannot go on (or a persisted job made for other clusters) does not stop the
  // process: the engine has logged it, and the API keeps answering progress with the named
  // error, so an operator can read what went wrong. Only the process's own faults exit.
  const syncFailed = (): void => undefined;
  const app = await NestFactory.create(WorkerModule.forRoot(config, logger, syncFailed), {
    bodyParser: false,
    logger: new NestLoggerAdapter(logger),
  });
  configureHttpApp(app);
  shutdownOnSignals(app, logger);
  try {
    await app.listen(config.port, config.host);
  } catch (error) {
    fatal(error);
  }
  if (config.host !== '127.0.0.1' && config.host !== 'localhost' && config.host !== '::1') {
    logger.warn('the API has no authentication and listens beyond loopback', { host: config.host });
  }
  const url = listeningUrl((app.getHttpServer() as Server).address(), config.host);
  logger.info('worker listening', { url, syncID: config.id ?? null });
}

void main();
