import { LaunchConfigError } from '@sync/service';

/** Timing of the control plane; read from the environment once, validated like the flags. */
export interface CoordinatorSettings {
  leaseTtlMs: number;
  commandTimeoutMs: number;
  workerStaleMs: number;
  /** A worker registration not renewed for this long is removed (judged by Redis' clock). */
  workerExpireMs: number;
}

const SETTINGS: Record<keyof CoordinatorSettings, [string, number, number, number]> = {
  leaseTtlMs: ['CLUSTER_SYNC_LEASE_TTL_MS', 10_000, 1_000, 600_000],
  commandTimeoutMs: ['CLUSTER_SYNC_COMMAND_TIMEOUT_MS', 60_000, 1_000, 3_600_000],
  workerStaleMs: ['CLUSTER_SYNC_WORKER_STALE_MS', 8_000, 2_000, 3_600_000],
  workerExpireMs: ['CLUSTER_SYNC_WORKER_EXPIRE_MS', 60_000, 5_000, 86_400_000],
};

export function readCoordinatorSettings(env: NodeJS.ProcessEnv): CoordinatorSettings {
  const out = {} as CoordinatorSettings;
  for (const [key, [name, fallback, min, max]] of Object.entries(SETTINGS)) {
    const raw = env[name];
    const value = raw === undefined || raw === '' ? fallback : Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new LaunchConfigError(
        `${name} must be an integer from ${min} to ${max} (milliseconds)`,
      );
    }
    out[key as keyof CoordinatorSettings] = value;
  }
  if (out.workerExpireMs < out.workerStaleMs) {
    throw new LaunchConfigError(
      'CLUSTER_SYNC_WORKER_EXPIRE_MS must not be below CLUSTER_SYNC_WORKER_STALE_MS (a registration expires only after its worker is missing)',
    );
  }
  return out;
}
