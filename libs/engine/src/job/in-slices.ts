/**
 * Writes `items` in slices of at most `size`, up to `concurrency` slices in flight: a store's bulk
 * writes of thousands of records overlap the client's encoding of one slice with the server's
 * work on another, instead of alternating. Slices may land in any order, so the caller's writes
 * must be independent of each other (an unordered bulk each).
 *
 * A failure starts no further slice and is thrown only once every slice in flight has settled:
 * a caller that writes again after the failure never races a write of its failed attempt.
 */
export async function inSlices<T>(
  items: readonly T[],
  size: number,
  concurrency: number,
  write: (slice: T[]) => Promise<void>,
): Promise<void> {
  if (items.length === 0) return;
  const step = Math.max(1, Math.floor(size));
  let next = 0;
  let failure: { error: unknown } | null = null;
  const lane = async (): Promise<void> => {
    while (failure === null && next < items.length) {
      const start = next;
      next += step;
      try {
        await write(items.slice(start, start + step));
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  const lanes = Math.max(1, Math.min(Math.floor(concurrency), Math.ceil(items.length / step)));
  await Promise.all(Array.from({ length: lanes }, lane));
  if (failure !== null) throw (failure as { error: unknown }).error;
}
