import type { INestApplication } from '@nestjs/common';

export const API_PREFIX = 'api/v1';

/**
 * Everything about the HTTP app that is not a module: shared by main and the HTTP tests so both
 * run the same stack. The app must be created with `bodyParser: false`: JsonBodyMiddleware parses
 * bodies so its errors reach the API filter.
 */
export function configureHttpApp(app: INestApplication): INestApplication {
  app.setGlobalPrefix(API_PREFIX);
  const server = app.getHttpAdapter().getInstance() as { disable?: (setting: string) => void };
  server.disable?.('x-powered-by');
  return app;
}
