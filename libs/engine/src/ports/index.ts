export * from './cluster-description';
export * from './cluster-directory';
export * from './source-cluster';
export * from './destination-cluster';
export * from './job-store';
export * from './clock';
export * from './engine-logger';
export * from './change-stream';
