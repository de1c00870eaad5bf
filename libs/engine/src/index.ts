export * from './sync-engine';
