import {
  checkMetadata,
  checkRange,
  ListingCache,
  type NamespaceCheckOptions,
  type NamespaceVerdict,
  type VerifiableCluster,
  type VerifyTarget,
} from './namespace-verifier';

export interface PassOptions extends NamespaceCheckOptions {
  /** Ranges digested at the same time, across all namespaces (each reads both sides). */
  concurrency: number;
  /** Called once all of a namespace's checks are done. */
  onNamespace?: (verdict: NamespaceVerdict) => void;
  /** Awaited before each check starts (the live pass yields to change application here). */
  beforeTask?: () => Promise<void>;
}

/**
 * One verification pass: every target's metadata and every `_id` range's digests, as one pool
 * of tasks so many small namespaces and one large one are verified equally in parallel.
 * Memory: per running task one read batch (two during a drill-down) — never a collection.
 */
export async function verifyNamespaces(
  source: VerifiableCluster,
  destination: VerifiableCluster,
  targets: VerifyTarget[],
  options: PassOptions,
): Promise<NamespaceVerdict[]> {
  const check: NamespaceCheckOptions = { ...options, listings: new ListingCache() };
  const maxSamples = options.maxSamples ?? 5;
  const tasks: Array<() => Promise<void>> = [];
  const verdicts = targets.map((target) => {
    const verdict: NamespaceVerdict = {
      namespace: `${target.database}.${target.collection}`,
      documents: { source: 0, destination: 0 },
      problems: [],
      ids: [],
      mismatchedRanges: [],
    };
    const ranges = target.type === 'view' ? [] : target.ranges;
    let remaining = 1 + ranges.length;
    const done = () => {
      if (--remaining > 0) return;
      const { source: s, destination: d } = verdict.documents;
      if (s !== d)
        verdict.problems.unshift(`document count differs: source ${s}, destination ${d}`);
      options.onNamespace?.(verdict);
    };
    tasks.push(async () => {
      verdict.problems.unshift(...(await checkMetadata(source, destination, target, check)));
      done();
    });
    for (const range of ranges) {
      tasks.push(async () => {
        const result = await checkRange(source, destination, target, range, check);
        verdict.documents.source += result.source;
        verdict.documents.destination += result.destination;
        if (result.problems.length > 0) {
          verdict.mismatchedRanges.push(range);
          const room = Math.max(0, maxSamples - verdict.ids.length);
          verdict.ids.push(...result.ids.slice(0, room));
          verdict.problems.push(...result.problems.slice(0, Math.max(1, room)));
        }
        done();
      });
    }
    return verdict;
  });
  await runPool(tasks, options.concurrency, options.signal, options.beforeTask);
  return verdicts;
}

/** Runs tasks `concurrency` at a time; the first failure stops the others from starting. */
export async function runPool(
  tasks: Array<() => Promise<void>>,
  concurrency: number,
  signal?: AbortSignal,
  beforeTask?: () => Promise<void>,
): Promise<void> {
  await runEach(tasks.length, concurrency, (i) => tasks[i]!(), signal, beforeTask);
  if (signal?.aborted) throw new Error('verification stopped');
}

/**
 * `run(0)` … `run(count - 1)`, `concurrency` at a time, in order; the first failure stops the
 * others from starting (and is thrown). Nothing is made per item ahead of its turn: at 100,000
 * namespaces a list of closures cost ~10 MB while it lasted.
 */
export async function runEach(
  count: number,
  concurrency: number,
  run: (index: number) => Promise<void>,
  signal?: AbortSignal,
  beforeTask?: () => Promise<void>,
): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && !signal?.aborted && next < count) {
      if (beforeTask) {
        await beforeTask();
        if (failed || signal?.aborted || next >= count) break;
      }
      const index = next++;
      try {
        await run(index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  const workers = Array.from({ length: Math.max(1, Math.min(concurrency, count)) }, worker);
  await Promise.all(workers);
}
