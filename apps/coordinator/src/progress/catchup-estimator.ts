/**
 * estimatedSecondsToCEACatchup as MongoDB's tool defines it: the time change event application
 * still needs to catch up, from how much the lag has decreased over a recent interval; unknown
 * (undefined) while the lag rose or stayed the same, or too few samples span the interval.
 * Samples are taken at Redis' time (one clock for every replica and worker).
 */
export class CatchupEstimator {
  private readonly samples = new Map<string, Array<{ at: number; lag: number }>>();

  constructor(
    private readonly windowMs = 60_000,
    private readonly minSpanMs = 5_000,
  ) {}

  /** A lag reading for `key` at Redis time `at`; null (not applying change events) resets. */
  observe(key: string, at: number, lag: number | null): void {
    if (lag === null) {
      this.samples.delete(key);
      return;
    }
    const list = this.samples.get(key) ?? [];
    if (list.length > 0 && at <= list[list.length - 1].at) return;
    list.push({ at, lag });
    while (list.length > 1 && at - list[0].at > this.windowMs) list.shift();
    this.samples.set(key, list);
  }

  estimate(key: string): number | undefined {
    const list = this.samples.get(key);
    if (!list || list.length < 2) return undefined;
    const first = list[0];
    const last = list[list.length - 1];
    const span = (last.at - first.at) / 1000;
    if (span * 1000 < this.minSpanMs) return undefined;
    const fallPerSecond = (first.lag - last.lag) / span;
    if (fallPerSecond <= 0) return undefined;
    return Math.ceil(last.lag / fallPerSecond);
  }

  /** Forgets keys not in `keep` (instances gone). */
  retain(keep: ReadonlySet<string>): void {
    for (const key of this.samples.keys()) if (!keep.has(key)) this.samples.delete(key);
  }
}
