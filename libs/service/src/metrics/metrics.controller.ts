import { Controller, Get, Inject, Query, Res } from '@nestjs/common';
import { ApiError } from '@sync/contracts';
import { ApiOperation, ApiProduces, ApiResponse } from '@nestjs/swagger';
import type { ServerResponse } from 'node:http';
import { SYNC_METRICS } from './metrics.tokens';
import type { SyncMetrics } from './sync-metrics';

/** Where Prometheus scrapes: outside `/api/v1` (see configureHttpApp). */
export const METRICS_PATH = 'metrics';

/** An endpoint that takes no query parameters refuses any (InvalidRequest names them). */
export function refuseQuery(endpoint: string, query: Record<string, unknown> | undefined): void {
  const names = Object.keys(query ?? {});
  if (names.length === 0) return;
  throw new ApiError(
    'InvalidRequest',
    `${endpoint} takes no query parameters; got ${names.map((n) => JSON.stringify(n.slice(0, 64))).join(', ')}.`,
  );
}

/** `GET /metrics` in the Prometheus text exposition format; it takes no query parameters. */
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
  async scrape(
    @Query() query: Record<string, unknown>,
    @Res() res: ServerResponse,
  ): Promise<void> {
    refuseQuery('GET /metrics', query);
    const text = await this.metrics.metrics();
    res.statusCode = 200;
    res.setHeader('content-type', this.metrics.contentType);
    res.setHeader('cache-control', 'no-store');
    res.end(text);
  }
}
