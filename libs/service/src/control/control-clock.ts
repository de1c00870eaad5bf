import { LaunchConfigError } from '../config/launch-config.error';

/**
 * TEST ONLY: shifts this process' wall clock by a fixed number of milliseconds, to show that
 * nothing on the control plane depends on two hosts agreeing on the time (liveness is judged by
 * Redis' clock). Never set it in production: it only makes this process' own timestamps lie.
 */
export const TEST_CLOCK_OFFSET_ENV = 'CLUSTER_SYNC_TEST_CLOCK_OFFSET_MS';

const DAY_MS = 24 * 3600 * 1000;

export function readTestClockOffset(env: NodeJS.ProcessEnv): number {
  const raw = env[TEST_CLOCK_OFFSET_ENV];
  if (raw === undefined || raw === '') return 0;
  const value = Number(raw);
  if (!Number.isInteger(value) || Math.abs(value) > DAY_MS) {
    throw new LaunchConfigError(
      `${TEST_CLOCK_OFFSET_ENV} (test only) must be an integer from -${DAY_MS} to ${DAY_MS} (milliseconds)`,
    );
  }
  return value;
}

/** This process' wall clock for control-plane timestamps (shifted by the test offset). */
export function controlWallClock(offsetMs: number): () => number {
  return () => Date.now() + offsetMs;
}
