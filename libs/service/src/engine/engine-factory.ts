import type { EngineLogger, SyncEngine } from '@sync/engine';

/**
 * How the API obtains its engine: the worker app passes its composition root (`createSyncEngine`,
 * which wires the @sync/mongo adapters into the engine), tests pass a fake. `onFatal` lets an
 * engine that fails in the background stop the process (mongosync has no error state: a fatal
 * error is logged and the process exits; a restart resumes).
 */
export interface EngineFactoryOptions {
  clusters: Record<string, string>;
  id?: string;
  logger: EngineLogger;
  onFatal?: (error: Error) => void;
}

export type EngineFactory = (options: EngineFactoryOptions) => Promise<SyncEngine>;
