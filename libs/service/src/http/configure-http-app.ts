import type { INestApplication } from '@nestjs/common';
import { METRICS_PATH } from '../metrics/metrics.controller';
import { mountOpenApi } from '../openapi/openapi-document';
import { mountDashboard } from '../dashboard/serve-dashboard';
import { apiTokenGuard } from './api-token.guard';

export const API_PREFIX = 'api/v1';

/**
 * Everything about the HTTP app that is not a module: shared by main and the HTTP tests so both
 * run the same stack. The app must be created with `bodyParser: false`: JsonBodyMiddleware parses
 * bodies so its errors reach the API filter.
 */
export function configureHttpApp(
  app: INestApplication,
  /** With `apiToken`, every request but the dashboard's files needs `Authorization: Bearer`. */
  options: { apiToken?: string } = {},
): INestApplication {
  app.use(apiTokenGuard(options.apiToken)); // ahead of everything else
  app.setGlobalPrefix(API_PREFIX, { exclude: [METRICS_PATH] }); // Prometheus scrapes /metrics
  const server = app.getHttpAdapter().getInstance() as { disable?: (setting: string) => void };
  server.disable?.('x-powered-by');
  mountDashboard(app); // the live dashboard at `/`
  mountOpenApi(app); // GET /api/v1/openapi.json
  return app;
}
