import { Test } from '@nestjs/testing';
import type { INestApplication } from '@nestjs/common';
import type { SyncEngine } from '@sync/engine';
import type { AddressInfo } from 'node:net';
import { configureHttpApp } from '../http/configure-http-app';
import { JsonLogger } from '../logging/json-logger';
import { NestLoggerAdapter } from '../logging/nest-logger.adapter';
import { SyncApiModule } from '../sync-api.module';

export interface TestApi {
  app: INestApplication;
  baseUrl: string;
  logLines: string[];
  fatal: unknown[];
}

/** The real HTTP stack (module, middleware, filter) on a free port, with the given engine. */
export async function startTestApi(
  engine: () => Promise<SyncEngine>,
  options: { apiToken?: string } = {},
): Promise<TestApi> {
  const logLines: string[] = [];
  const fatal: unknown[] = [];
  const logger = new JsonLogger('TRACE', [(line) => logLines.push(line)]);
  logger.addSecrets(['hunter2-password', ...(options.apiToken ? [options.apiToken] : [])]);
  const moduleRef = await Test.createTestingModule({
    imports: [
      SyncApiModule.register({
        clusters: { cluster0: 'mongodb://u:hunter2-password@h1', cluster1: 'mongodb://h2' },
        logger,
        engineFactory: engine,
        onFatal: (error) => fatal.push(error),
      }),
    ],
  }).compile();
  const app = moduleRef.createNestApplication({
    bodyParser: false,
    logger: new NestLoggerAdapter(logger),
  });
  configureHttpApp(app, options);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { app, baseUrl: `http://127.0.0.1:${port}/api/v1`, logLines, fatal };
}
