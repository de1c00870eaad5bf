export * from './sync-state';
export * from './start-request';
export * from './progress';
export * from './api-errors';
export * from './api-error';
