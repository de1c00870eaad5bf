import type { Timestamp } from 'bson';

/** Orders two cluster times (seconds, then increment). */
export function compareTimestamps(a: Timestamp, b: Timestamp): number {
  return a.t !== b.t ? (a.t < b.t ? -1 : 1) : a.i === b.i ? 0 : a.i < b.i ? -1 : 1;
}

export function maxTimestamp(a: Timestamp | undefined, b: Timestamp | undefined) {
  if (!a) return b;
  if (!b) return a;
  return compareTimestamps(a, b) >= 0 ? a : b;
}
