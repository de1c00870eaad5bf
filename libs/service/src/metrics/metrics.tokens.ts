/** DI token of the process's SyncMetrics (one Prometheus registry per app). */
export const SYNC_METRICS = Symbol('SYNC_METRICS');
