import type { Worker } from 'bullmq';

/**
 * Stops and restarts taking jobs on a BullMQ worker, as `pause(true)` / `resume()` mean them.
 *
 * `pause(true)` lets the worker's main loop end by itself (after its current blocking fetch).
 * Only `resume()` clears the paused flag: a bare `run()` on a paused worker returns at once and
 * leaves it stopped for good. `resume()` restarts the loop when it has ended, but if the loop is
 * still unwinding (`isRunning()` until its `finally`), it does not, so the state is checked
 * again once pending callbacks have run.
 */
export function stopConsuming(worker: Worker): Promise<void> {
  return worker.pause(true);
}

/** Takes jobs again after `stopConsuming`; `stillWanted` is asked again before a late restart. */
export function resumeConsuming(worker: Worker, stillWanted: () => boolean): void {
  worker.resume();
  setImmediate(() => {
    if (!stillWanted() || worker.isPaused() || worker.isRunning()) return;
    void worker.run().catch(() => undefined);
  });
}
