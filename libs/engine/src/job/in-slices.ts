import { runPool } from '../verify/verify-pass';

/**
 * Writes `items` in slices of at most `size`, up to `concurrency` slices in flight: a store's bulk
 * writes of thousands of records overlap the client's encoding of one slice with the server's
 * work on another, instead of alternating. Slices may land in any order, so the caller's writes
 * must be independent of each other (an unordered bulk each).
 *
 * A failure starts no further slice and is thrown only once every slice in flight has settled
 * (`runPool` alone would reject at once): a caller that writes again after the failure never
 * races a write of its failed attempt.
 */
export async function inSlices<T>(
  items: readonly T[],
  size: number,
  concurrency: number,
  write: (slice: T[]) => Promise<void>,
): Promise<void> {
  const step = Math.max(1, Math.floor(size));
  let failure: { error: unknown } | null = null;
  const slices: Array<() => Promise<void>> = [];
  for (let start = 0; start < items.length; start += step) {
    slices.push(async () => {
      if (failure !== null) return;
      await write(items.slice(start, start + step)).catch((error: unknown) => {
        failure ??= { error };
      });
    });
  }
  await runPool(slices, Math.max(1, Math.floor(concurrency)));
  if (failure !== null) throw (failure as { error: unknown }).error;
}
