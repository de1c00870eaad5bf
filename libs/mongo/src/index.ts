export * from './exact-bson';
export * from './connection-string';
export * from './cluster-inspector';
export * from './mongo-source-cluster';
export * from './mongo-destination-cluster';
export * from './mongo-job-store';
export * from './mongo-cluster-directory';
export * from './create-sync-engine';
