import { Controller, Get, Inject, Res } from '@nestjs/common';
import { ApiOperation, ApiProduces, ApiResponse } from '@nestjs/swagger';
import type { ServerResponse } from 'node:http';
import { SYNC_METRICS } from './metrics.tokens';
import type { SyncMetrics } from './sync-metrics';

/** Where Prometheus scrapes: outside `/api/v1` (see configureHttpApp). */
export const METRICS_PATH = 'metrics';

/**
 * `GET /metrics` in the Prometheus text exposition format. Query parameters are ignored, as on
 * `GET /api/v1/progress` (only parameters an endpoint takes are read; this one takes none).
 */
@Controller(METRICS_PATH)
export class MetricsController {
  constructor(@Inject(SYNC_METRICS) private readonly metrics: SyncMetrics) {}

  @Get()
  @ApiOperation({
    operationId: 'metrics',
    summary: 'Prometheus metrics (text exposition format), outside /api/v1; see the README.',
  })
  @ApiProduces('text/plain')
  @ApiResponse({ status: 200, description: 'Prometheus text format 0.0.4.' })
  async scrape(@Res() res: ServerResponse): Promise<void> {
    const text = await this.metrics.metrics();
    res.statusCode = 200;
    res.setHeader('content-type', this.metrics.contentType);
    res.setHeader('cache-control', 'no-store');
    res.end(text);
  }
}
