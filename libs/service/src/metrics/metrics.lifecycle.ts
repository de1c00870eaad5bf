import {
  Inject,
  Injectable,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { SYNC_METRICS } from './metrics.tokens';
import type { SyncMetrics } from './sync-metrics';

/** How often error names are sampled between scrapes, so a short failure is still counted. */
export const METRICS_SAMPLE_MS = 1000;

/** Samples the figures every second while the app runs (errors seen between scrapes). */
@Injectable()
export class MetricsLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | null = null;

  constructor(@Inject(SYNC_METRICS) private readonly metrics: SyncMetrics) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => this.metrics.sample(), METRICS_SAMPLE_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.metrics.registry.clear();
  }
}
