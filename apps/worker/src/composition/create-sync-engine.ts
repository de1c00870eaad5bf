import { getHeapStatistics } from 'node:v8';
import {
  ChangeEventApplication,
  ClaimFence,
  SyncJob,
  sourceShardOf,
  type ClaimGuard,
  type ChangeEventApplicationOptions,
  type EngineLogger,
  type SyncEngine,
  type SyncJobOptions,
} from '@sync/engine';
import {
  MongoChangeFeed,
  MongoChangeWriter,
  MongoCheckpointStore,
  MongoClusterDirectory,
  MongoDocumentLookup,
  faultLabelled,
  makeRedactor,
  type MongoChangeFeedOptions,
} from '@sync/mongo';

export interface CreateSyncEngineOptions {
  /** Launch names → connection strings (`{cluster0: 'mongodb://…', cluster1: '…'}`). */
  clusters: Record<string, string>;
  /** `--id`; a lone worker defaults to "worker". */
  id?: string;
  logger: EngineLogger;
  /**
   * Called once when the sync cannot go on: the boot-time restore refused the persisted job
   * (ApiError JobClusterMismatch) or the running sync failed. The worker should log one line and
   * exit non-zero (mongosync's behaviour: no error state, a restart resumes from persisted state).
   */
  onFatal?: (error: Error) => void;
  /** Tuning and later phases (change application, commit) passed through to the engine. */
  engine?: Partial<Omit<SyncJobOptions, 'clusters' | 'logger' | 'syncID' | 'onFatal'>>;
  /** Change application tuning (the adapters are wired here). */
  changeApplication?: Omit<ChangeEventApplicationOptions, 'ports'> & {
    feed?: MongoChangeFeedOptions;
  };
}

/**
 * Composition root for a worker. Returns at once with the engine INITIALIZING (progress answers
 * NotReady, retry is safe) while it restores any persisted job in the background; the driver
 * connects lazily. Connection strings never reach a log line or an error text.
 */
export async function createSyncEngine(
  options: CreateSyncEngineOptions,
): Promise<SyncEngine & { ready: Promise<void> }> {
  const redact = makeRedactor(Object.values(options.clusters));
  const logger = redactingLogger(options.logger, redact);
  const syncID = options.id ?? 'worker';
  // A per-shard worker's claim fences every destination write (ShardClaim renews it, the
  // adapters check it); a lone worker has no claim.
  const clock = options.engine?.clock;
  const fence =
    options.id !== undefined
      ? new ClaimFence(options.id, clock ? () => clock.now() : undefined)
      : undefined;
  const directory = new MongoClusterDirectory(options.clusters, syncID, fence);
  const onFatal = (error: Error): void => {
    error.message = redact(error.message); // keep the class (ApiError carries the error name)
    if (options.onFatal) options.onFatal(error);
    else logger.error('sync cannot continue', { error: `${error.name}: ${error.message}` });
  };
  const job = new SyncJob({
    phases: {
      changeApplication: mongoChangeApplication(directory, options.changeApplication, fence),
    },
    maxNamespaces: namespaceLimit(),
    ...options.engine,
    ...(fence ? { shardClaim: { ...options.engine?.shardClaim, fence } } : {}),
    clusters: directory,
    logger,
    syncID,
    ...(options.id !== undefined ? { shardId: options.id } : {}),
    onFatal,
    redact,
    onClose: () => directory.close(),
  });
  const ready = job.initialize().catch((error: unknown) => {
    onFatal(error instanceof Error ? error : new Error(String(error)));
    throw error;
  });
  ready.catch(() => undefined); // reported through onFatal; callers may also await `ready`
  return Object.assign(job, { ready });
}

const MiB = 1024 * 1024;
/**
 * Heap one namespace of the sync takes in the worker at its peak: its catalog record (indexes,
 * options), partitions, verification state, the live pass's per-namespace work, and the copies
 * a job save makes of the catalog. A heap snapshot at 50,000 namespaces: ~3.3 KiB of live heap
 * each. Checked at the bound itself: `npm run bench -- --namespaces 100000 --worker-heap-mb
 * 1120` (a V8 heap limit of 1,168 MiB: the smallest this bound admits 100,000 namespaces in)
 * syncs and commits them byte-equal.
 */
const BYTES_PER_NAMESPACE = 8 * 1024;
/** Heap kept for everything else (drivers, copy buffers, change application). */
const HEAP_RESERVE = 384 * MiB;

/**
 * The most namespaces this worker's heap holds (V8's heap limit: NODE_OPTIONS
 * --max-old-space-size raises it). A start selecting more is refused (CatalogTooLarge) instead
 * of the worker running out of memory mid-copy.
 */
export function namespaceLimit(heapLimit = getHeapStatistics().heap_size_limit): {
  limit: number;
  why: string;
} {
  const limit = Math.max(1_000, Math.floor((heapLimit - HEAP_RESERVE) / BYTES_PER_NAMESPACE));
  return {
    limit,
    why: `its heap limit is ${Math.round(heapLimit / MiB)} MiB and a namespace takes about ${BYTES_PER_NAMESPACE / 1024} KiB of it`,
  };
}

/**
 * The change-application factory over a directory's clients: one pass per call, with adapters
 * that follow the job's current direction (a reverse swaps source and destination).
 */
export function mongoChangeApplication(
  directory: MongoClusterDirectory,
  options: CreateSyncEngineOptions['changeApplication'] = {},
  /** A per-shard worker's shard claim: fences the change writes and checkpoint saves. */
  guard?: ClaimGuard,
): () => ChangeEventApplication {
  return () =>
    new ChangeEventApplication({
      ...options,
      ports: (ctx) => {
        const source = directory.client(ctx.job.source.name);
        const destination = directory.client(ctx.job.destination.name);
        const shard = ctx.job.shard;
        return {
          // A per-shard worker reads its own shard's stream, connected to the shard directly;
          // its getMores return sooner, so that its read mark (which the other workers wait
          // for) follows an idle shard closely.
          // Labelled at the boundary like the directory's adapters (the feed's cursors too).
          feed: faultLabelled(
            shard
              ? new MongoChangeFeed(
                  () => directory.shardClient(ctx.job.source.name, sourceShardOf(shard)),
                  {
                    maxAwaitTimeMS: 250,
                    ...options.feed,
                  },
                )
              : new MongoChangeFeed(source, options.feed),
            ['open'],
          ),
          writer: faultLabelled(new MongoChangeWriter(destination, guard)),
          lookup: faultLabelled(new MongoDocumentLookup(source)),
          checkpoints: faultLabelled(
            new MongoCheckpointStore(destination, `changeEvents:${ctx.checkpointKey}`, guard),
          ),
        };
      },
    });
}

export function redactingLogger(inner: EngineLogger, redact: (text: string) => string): EngineLogger {
  const clean = (fields?: Record<string, unknown>): Record<string, unknown> | undefined => {
    if (!fields) return fields;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(fields))
      out[key] = typeof value === 'string' ? redact(value) : value;
    return out;
  };
  // Debug lines are per partition and per collection: with 100,000 namespaces, redacting each
  // one before the logger dropped it was ~1 % of the worker's CPU while it prepared the
  // destination. A logger that says which levels it writes is asked first.
  const leveled = inner as EngineLogger & { isEnabled?: (level: 'DEBUG') => boolean };
  const debugOn =
    typeof leveled.isEnabled === 'function' ? () => leveled.isEnabled!('DEBUG') : () => true;
  return {
    debug: (m, f) => {
      if (debugOn()) inner.debug(redact(m), clean(f));
    },
    info: (m, f) => inner.info(redact(m), clean(f)),
    warn: (m, f) => inner.warn(redact(m), clean(f)),
    error: (m, f) => inner.error(redact(m), clean(f)),
  };
}
