import { Timestamp, type Document } from 'bson';
import { bsonTypeOf } from '../bson/compare';
import { compareTimestamps } from '../clock/cluster-clock';
import { CommandError } from '../errors';
import type { NodeServices } from '../node/node-services';

export type ReadConcernLevel = 'local' | 'majority' | 'linearizable' | 'available' | 'snapshot';

const LEVELS: ReadonlySet<string> = new Set([
  'local',
  'majority',
  'linearizable',
  'available',
  'snapshot',
]);

/** A parsed `readConcern` (mongod's repl::ReadConcernArgs). */
export interface ReadConcernArgs {
  level?: ReadConcernLevel;
  afterClusterTime?: Timestamp;
  atClusterTime?: Timestamp;
}

/** `"<field>" had the wrong type. Expected <type>, found <type>` (bson_extract.cpp). */
function wrongType(field: string, expected: string, value: unknown): CommandError {
  return new CommandError(
    'TypeMismatch',
    `"${field}" had the wrong type. Expected ${expected}, found ${bsonTypeOf(value)}`,
  );
}

/**
 * Parses the `readConcern` argument like ReadConcernArgs::initialize: level, afterClusterTime,
 * atClusterTime (and afterOpTime/provenance, accepted and ignored), with its validation rules.
 */
export function parseReadConcern(value: unknown): ReadConcernArgs | undefined {
  if (value === undefined) return undefined;
  if (bsonTypeOf(value) !== 'object') {
    throw new CommandError('FailedToParse', 'readConcern field should be an object');
  }
  const doc = value as Document;
  const rc: ReadConcernArgs = {};
  for (const [field, v] of Object.entries(doc)) {
    if (field === 'level') {
      if (typeof v !== 'string') throw wrongType('level', 'string', v);
      if (!LEVELS.has(v)) {
        throw new CommandError(
          'FailedToParse',
          "readConcern.level must be either 'local', 'majority', 'linearizable', 'available', or 'snapshot'",
        );
      }
      rc.level = v as ReadConcernLevel;
    } else if (field === 'afterClusterTime' || field === 'atClusterTime') {
      if (!(v instanceof Timestamp)) throw wrongType(field, 'timestamp', v);
      rc[field] = v;
    } else if (field !== 'afterOpTime' && field !== 'provenance') {
      throw new CommandError('InvalidOptions', `Unrecognized option in readConcern: ${field}`);
    }
  }
  if (rc.afterClusterTime && rc.atClusterTime) {
    throw new CommandError(
      'InvalidOptions',
      'Can not specify both afterClusterTime and atClusterTime',
    );
  }
  const level = rc.level ?? 'local';
  if (rc.afterClusterTime && level !== 'majority' && level !== 'local' && level !== 'snapshot') {
    throw new CommandError(
      'InvalidOptions',
      'afterClusterTime field can be set only if level is equal to majority, local, or snapshot',
    );
  }
  if (rc.atClusterTime && level !== 'snapshot') {
    throw new CommandError(
      'InvalidOptions',
      'atClusterTime field can be set only if level is equal to snapshot',
    );
  }
  for (const field of ['afterClusterTime', 'atClusterTime'] as const) {
    const ts = rc[field];
    if (ts && ts.t === 0 && ts.i === 0) {
      throw new CommandError('InvalidOptions', `${field} cannot be a null timestamp`);
    }
  }
  return rc;
}

/** True when the read sees the majority-committed snapshot (levels majority and snapshot). */
export function readsCommittedSnapshot(rc: ReadConcernArgs | undefined): boolean {
  return rc?.level === 'majority' || rc?.level === 'snapshot';
}

/** `{ ts: Timestamp(t, i) }`: LogicalTime::toString. */
function logicalTimeString(ts: Timestamp): string {
  return `{ ts: Timestamp(${ts.t}, ${ts.i}) }`;
}

/** The appendOplogNote payload of mongod's makeNoopWriteIfNeeded. */
export const AFTER_CLUSTER_TIME_NOOP = { 'noop write for afterClusterTime read concern': 1 };

/**
 * mongod's waitForReadConcern for a replica-set primary:
 * - afterClusterTime/atClusterTime later than the node's cluster time fails with 72
 *   InvalidOptions ("... must not be greater than the current clusterTime ...");
 * - when the node's last applied optime is behind it (its cluster time was moved forward by a
 *   client's `$clusterTime`), a no-op is written so the oplog reaches it (makeNoopWriteIfNeeded);
 * - majority/snapshot reads then wait until the majority-committed snapshot reaches it
 *   (waitUntilOpTimeForRead), which only takes time while `disableSnapshotting` holds the
 *   snapshot back; maxTimeMS ends the wait with 50 MaxTimeMSExpired.
 */
export async function waitForReadConcern(
  node: NodeServices,
  rc: ReadConcernArgs,
  options: { maxTimeMS?: number; signal?: AbortSignal },
): Promise<void> {
  const target = rc.afterClusterTime ?? rc.atClusterTime;
  if (!target) return;
  const name = rc.afterClusterTime ? 'afterClusterTime' : 'atClusterTime';
  const clusterTime = node.clock.current();
  if (compareTimestamps(clusterTime, target) < 0) {
    throw new CommandError(
      'InvalidOptions',
      `readConcern ${name} value must not be greater than the current clusterTime. Requested clusterTime: ${logicalTimeString(target)}; current clusterTime: ${logicalTimeString(clusterTime)}`,
    );
  }
  const lastApplied = node.oplog.newest()?.ts;
  if (!lastApplied || compareTimestamps(lastApplied, target) < 0) {
    node.oplog.append({ op: 'noop', db: '', o: { ...AFTER_CLUSTER_TIME_NOOP } });
  }
  if (!readsCommittedSnapshot(rc)) return;
  const timeout = options.maxTimeMS && options.maxTimeMS > 0 ? options.maxTimeMS : Infinity;
  const reached = await node.oplog.waitForCommitted(target, true, timeout, options.signal);
  if (!reached && !options.signal?.aborted) {
    throw new CommandError('MaxTimeMSExpired', 'operation exceeded time limit');
  }
}

/** mongod's maxAcceptableLogicalClockDriftSecs default: one year. */
export const MAX_ACCEPTABLE_CLOCK_DRIFT_SECS = 365 * 24 * 60 * 60;

/**
 * Gossip-in of a client's `$clusterTime` (VectorClock::gossipIn). Without access control every
 * client may advance the cluster time (LogicalTimeValidator::isAuthorizedToAdvanceClock), so
 * the signature is not checked; a time more than maxAcceptableLogicalClockDriftSecs ahead of
 * the wall clock fails with 205 ClusterTimeFailsRateLimiter.
 */
export function gossipInClusterTime(node: NodeServices, value: unknown, now = Date.now()): void {
  if (bsonTypeOf(value) !== 'object') return;
  const ts = (value as Document).clusterTime;
  if (!(ts instanceof Timestamp)) return;
  if (compareTimestamps(ts, node.clock.current()) <= 0) return;
  const wallSecs = Math.floor(now / 1000);
  if (ts.t > wallSecs && ts.t - wallSecs > MAX_ACCEPTABLE_CLOCK_DRIFT_SECS) {
    throw new CommandError(
      'ClusterTimeFailsRateLimiter',
      `New $clusterTime, ${ts.t}, is too far from this node's wall clock time, ${wallSecs}.`,
    );
  }
  node.clock.advanceTo(ts);
}
