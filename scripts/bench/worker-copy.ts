import { cpuSince, type CpuMark, type CpuParts } from './cpu-budget';
import { rate, type Rate } from './raw-rates';
import { logTimeline, RssSampler, sleep, startWorker, type WorkerProcess } from './processes';

export interface Progress {
  state: string;
  canCommit: boolean;
  info: string | null;
  lagTimeSeconds: number | null;
  totalEventsApplied: number | null;
  collectionCopy: { estimatedTotalBytes: number; estimatedCopiedBytes: number } | null;
}

export async function post(api: string, op: string, body: object): Promise<void> {
  const res = await fetch(`${api}/${op}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as {
    success: boolean;
    error?: string;
    errorDescription?: string;
  };
  if (!json.success) throw new Error(`${op}: ${json.error}: ${json.errorDescription}`);
}

export async function progress(api: string): Promise<Progress> {
  const res = await fetch(`${api}/progress`);
  const json = (await res.json()) as { success: boolean; progress?: Progress; error?: string };
  if (!json.success || !json.progress) throw new Error(`progress: ${json.error}`);
  return json.progress;
}

/** The copy is over once the worker leaves `collection copy` or logs `collection copy done`. */
export function copyFinished(p: Progress): boolean {
  return p.state === 'RUNNING' && p.info !== null && p.info !== 'collection copy';
}

export interface CopyRun extends Rate {
  /** Peak resident memory of the worker during the copy (VmHWM), MB. */
  peakRssMB: number;
  /** CPU per document from start to the copy's end: the worker, the emulators, the bench. */
  cpuMicrosPerDoc: CpuMark;
  worker: WorkerProcess;
  sampler: RssSampler;
  /** Where the copy's time went: the worker's log messages from start to the copy's end. */
  timeline: string;
}

/**
 * (c) The worker's copy: a fresh worker process, `POST /start`, then time until the copy ends
 * (the worker's `collection copy done` log line, or progress leaving `collection copy`,
 * whichever is seen first). Documents and bytes are the dataset's (known to the generator).
 * The worker keeps running afterwards (change application), still sampled for memory.
 */
export async function runWorkerCopy(
  sourceUri: string,
  destinationUri: string,
  dataset: { documents: number; bytes: number },
  options: {
    profileDir: string | null;
    tag: string;
    timeoutMs: number;
    onTick?: (p: Progress) => void;
    /** The embedded verifier (default on). */
    verification?: boolean;
    /** Processes whose CPU the copy is split over, besides the worker (the emulators). */
    cpuParts?: CpuParts;
  },
): Promise<CopyRun> {
  const worker = await startWorker(sourceUri, destinationUri, options.profileDir, options.tag);
  const sampler = new RssSampler(worker.started.child);
  const cpu = cpuSince({ ...options.cpuParts, worker: worker.started.child });
  const startedAt = Date.now();
  await post(worker.api, 'start', {
    source: 'cluster0',
    destination: 'cluster1',
    ...(options.verification === false ? { verification: { enabled: false } } : {}),
  });
  let endedAt: number | null = null;
  let lastTick = 0;
  let lastPoll = 0;
  while (endedAt === null) {
    if (worker.started.child.exitCode !== null) {
      throw new Error(`worker exited during the copy: ${worker.errors.join('; ')}`);
    }
    const logged = worker.logSeen('collection copy done');
    if (logged !== null) endedAt = logged;
    else if (Date.now() - lastPoll >= 250) {
      // progress is polled sparingly (it costs the worker CPU); the log line is the precise end
      lastPoll = Date.now();
      const p = await progress(worker.api);
      if (copyFinished(p)) endedAt = Date.now();
      else if (options.onTick && Date.now() - lastTick > 2_000) {
        lastTick = Date.now();
        options.onTick(p);
      }
    }
    if (Date.now() - startedAt > options.timeoutMs) {
      throw new Error(`copy not done after ${options.timeoutMs / 1000} s`);
    }
    if (endedAt === null) await sleep(50);
  }
  const cpuMicrosPerDoc = cpu(dataset.documents);
  const peakRssMB = sampler.stop();
  const seconds = Math.max(1e-3, (endedAt - startedAt) / 1000);
  return {
    ...rate(dataset.documents, dataset.bytes, seconds),
    peakRssMB,
    cpuMicrosPerDoc,
    worker,
    sampler,
    timeline: logTimeline(worker, startedAt, endedAt),
  };
}
