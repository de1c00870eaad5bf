import type { DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Server } from 'node:http';
import { LaunchConfigError } from '../config/launch-config.error';
import type { ServiceConfig } from '../config/service-options.dto';
import { configureHttpApp } from '../http/configure-http-app';
import type { JsonLogger } from '../logging/json-logger';
import { NestLoggerAdapter } from '../logging/nest-logger.adapter';
import { createServiceLogger } from './create-service-logger';
import { applyHeapGrowth } from './heap-growth';
import { listeningUrl } from './listening-url';
import { readLaunchConfig, type LaunchProgram } from './read-launch-config';
import { shutdownOnSignals } from './shutdown-on-signals';

export interface ServiceProgram extends LaunchProgram {
  /**
   * Checks that must pass before anything listens (the coordinator's Redis). A
   * LaunchConfigError thrown here is printed as one stderr line and exits with code 2.
   */
  preflight?(config: ServiceConfig, logger: JsonLogger): Promise<void>;
  /** The composition root; `url` resolves to the API's URL once it listens. */
  module(
    config: ServiceConfig,
    logger: JsonLogger,
    onFatal: (error: unknown) => void,
    url: Promise<string>,
  ): DynamicModule;
}

/**
 * The whole life of a worker or coordinator process: options → logger → preflight → Nest app →
 * listen → "<name> listening". Exit codes: 2 bad options (one line), 1 a fatal error.
 */
export async function runService(program: ServiceProgram): Promise<void> {
  const launch = readLaunchConfig(
    process.argv.slice(2),
    {
      stdout: (text) => process.stdout.write(text),
      stderr: (text) => process.stderr.write(text),
    },
    program,
  );
  if ('exitCode' in launch) return process.exit(launch.exitCode);
  const { config } = launch;
  applyHeapGrowth(config.heapGrowthPercent);

  let logger: JsonLogger;
  try {
    logger = createServiceLogger(config);
    await program.preflight?.(config, logger);
  } catch (error) {
    if (!(error instanceof LaunchConfigError)) throw error;
    process.stderr.write(`${program.name}: ${error.message}\n`);
    return process.exit(LaunchConfigError.EXIT_CODE);
  }
  const fatal = (error: unknown): never => {
    logger.fatal(`${program.name} stopping after a fatal error`, { error });
    process.exit(1);
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);

  let announce: (url: string) => void = () => undefined;
  const url = new Promise<string>((resolve) => (announce = resolve));
  const app = await NestFactory.create(program.module(config, logger, fatal, url), {
    bodyParser: false,
    logger: new NestLoggerAdapter(logger),
  });
  configureHttpApp(app, config.apiToken === undefined ? {} : { apiToken: config.apiToken });
  shutdownOnSignals(app, logger, program.name);
  try {
    await app.listen(config.port, config.host);
  } catch (error) {
    fatal(error);
  }
  // A non-loopback host without a token was refused at launch (loadServiceConfig).
  if (config.apiToken !== undefined) logger.info('the API requires Authorization: Bearer <token>');
  const listening = listeningUrl((app.getHttpServer() as Server).address(), config.host);
  announce(listening);
  logger.info(`${program.name} listening`, { url: listening, syncID: config.id ?? null });
}
