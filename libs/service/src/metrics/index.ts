export * from './instance-figures';
export * from './sync-metrics';
export * from './metrics.controller';
export * from './metrics.tokens';
