import { CONTROL_KEYS, type WorkerRegistration, type WorkerReport } from '@sync/contracts';
import type { Redis } from 'ioredis';

export interface Roster {
  registrations: WorkerRegistration[];
  reports: Map<string, WorkerReport>;
}

/** The registered workers and their latest reports, read in one round trip each. */
export async function readRoster(redis: Redis): Promise<Roster> {
  const hash = await redis.hgetall(CONTROL_KEYS.workers);
  const registrations = Object.values(hash)
    .map((value) => parseJson<WorkerRegistration>(value))
    .filter((r): r is WorkerRegistration => r !== null && typeof r.id === 'string')
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const reports = new Map<string, WorkerReport>();
  if (registrations.length > 0) {
    const values = await redis.mget(...registrations.map((r) => CONTROL_KEYS.report(r.id)));
    values.forEach((value, i) => {
      const report = value ? parseJson<WorkerReport>(value) : null;
      if (report) reports.set(registrations[i].id, report);
    });
  }
  return { registrations, reports };
}

function parseJson<T>(value: string): T | null {
  try {
    return JSON.parse(value) as T;
  } catch {
    return null;
  }
}
