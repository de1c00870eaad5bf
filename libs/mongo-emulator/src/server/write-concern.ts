import { Int32, type Document } from 'bson';
import { bsonTypeOf } from '../bson/compare';
import type { NodeServices } from '../node/node-services';
import { asNumber } from './values';

/** The effective write concern of a write command. */
export interface WriteConcernSpec {
  /** w as given (number, 'majority' or a tag set name); 'majority' when defaulted. */
  w: unknown;
  /** wtimeout in ms; 0 = none. */
  wtimeout: number;
  /** The document mongod reports in writeConcernError.errInfo.writeConcern. */
  reported: Document;
}

/**
 * The write concern a command runs with: the client's `writeConcern`, else the implicit
 * default of a MongoDB 5.0+ replica set without arbiters, `{w: "majority", wtimeout: 0}`.
 */
export function effectiveWriteConcern(body: Document): WriteConcernSpec {
  const given = body.writeConcern;
  if (bsonTypeOf(given) === 'object') {
    const doc = given as Document;
    const wtimeout = asNumber(doc.wtimeout) ?? 0;
    if (doc.w === undefined) {
      // No w: the default's w applies (wtimeout and j as given).
      const reported = { w: 'majority', wtimeout: new Int32(wtimeout), ...doc };
      return { w: 'majority', wtimeout, reported: { ...reported, provenance: 'implicitDefault' } };
    }
    const w = asNumber(doc.w) ?? doc.w;
    return { w, wtimeout, reported: { ...doc, provenance: 'clientSupplied' } };
  }
  return {
    w: 'majority',
    wtimeout: 0,
    reported: { w: 'majority', wtimeout: new Int32(0), provenance: 'implicitDefault' },
  };
}

/**
 * Waits until a w:"majority" write is majority-committed, i.e. until the committed snapshot
 * reaches the newest oplog entry (the client's last op; for a write that changed nothing mongod
 * also waits for the system's last op). That is immediate unless `disableSnapshotting` holds the
 * snapshot back: mongod's _doneWaitingForReplication_inlock waits for `_currentCommittedSnapshot`
 * to reach the optime. Returns the writeConcernError to attach, if any:
 * - wtimeout: `64 WriteConcernFailed "waiting for replication timed out"`, errInfo.wtimeout true;
 * - maxTimeMS: `50 MaxTimeMSExpired "operation exceeded time limit"`.
 * w: 0/1 and tags are not waited for; a w above 1 gets 100 UnsatisfiableWriteConcern (one member).
 */
export async function waitForWriteConcern(
  node: NodeServices,
  wc: WriteConcernSpec,
  options: { maxTimeMS?: number; startedAt: number; signal?: AbortSignal },
): Promise<Document | undefined> {
  // A numeric w above the set's one data-bearing member can never be satisfied: mongod checks
  // it (checkIfWriteConcernCanBeSatisfied) after the write and reports it without waiting.
  if (typeof wc.w === 'number' && wc.w > 1) {
    return {
      code: 100,
      codeName: 'UnsatisfiableWriteConcern',
      errmsg: 'Not enough data-bearing nodes',
      errInfo: { writeConcern: wc.reported },
    };
  }
  if (wc.w !== 'majority') return undefined;
  const target = node.oplog.newest()?.ts;
  if (!target) return undefined;
  const wtimeout = wc.wtimeout > 0 ? wc.wtimeout : Infinity;
  const maxTime =
    options.maxTimeMS && options.maxTimeMS > 0
      ? Math.max(0, options.startedAt + options.maxTimeMS - Date.now())
      : Infinity;
  const reached = await node.oplog.waitForCommitted(
    target,
    true,
    Math.min(wtimeout, maxTime),
    options.signal,
  );
  if (reached || options.signal?.aborted) return undefined;
  if (wtimeout <= maxTime) {
    return {
      code: 64,
      codeName: 'WriteConcernFailed',
      errmsg: 'waiting for replication timed out',
      errInfo: { wtimeout: true, writeConcern: wc.reported },
    };
  }
  return {
    code: 50,
    codeName: 'MaxTimeMSExpired',
    errmsg: 'operation exceeded time limit',
    errInfo: { writeConcern: wc.reported },
  };
}
