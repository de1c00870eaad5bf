import { Timestamp, type Document } from 'bson';
import { isSyncedNamespace } from './namespace-rules';
import type { ChangeEvent, Namespace } from './change-event';
import { HistoryLostError } from './errors';
import { labelsForWriteCode } from '../faults/fault-labels';
import { documentOf } from './raw-document';
import type {
  EventRoute,
  EventRouter,
  ChangeFeed,
  ChangeFeedBatch,
  ChangeWriter,
  Checkpoint,
  CheckpointStore,
  DocumentLookup,
  StartPoint,
  WriteFailure,
  WriteOp,
} from './ports';

/** In-memory test doubles for the apply ports (unit tests only). */

export const ts = (t: number, i = 0) => new Timestamp({ t, i });
export const tokenAt = (t: number, i = 0) => ({
  _data: `82${t.toString(16).padStart(8, '0')}${i.toString(16).padStart(8, '0')}`,
});

let counter = 0;
export function crud(
  operationType: 'insert' | 'update' | 'replace' | 'delete',
  id: number,
  t: number,
  body: Document = {},
  coll = 'c',
): ChangeEvent {
  counter += 1;
  const e: ChangeEvent = {
    _id: tokenAt(t, counter),
    operationType,
    clusterTime: ts(t, counter),
    ns: { db: 'd', coll },
    documentKey: { _id: id },
  };
  if (operationType === 'insert' || operationType === 'replace')
    e.fullDocument = { _id: id, ...body };
  if (operationType === 'update') e.updateDescription = { updatedFields: body, removedFields: [] };
  return e;
}

export function ddlEvent(operationType: string, t: number, extra: Partial<ChangeEvent> = {}) {
  counter += 1;
  return {
    _id: tokenAt(t, counter),
    operationType,
    clusterTime: ts(t, counter),
    ns: { db: 'd', coll: 'c' },
    ...extra,
  } as ChangeEvent;
}

export class FakeFeed implements ChangeFeed {
  opened: StartPoint[] = [];
  /** Batches served in order; afterwards idle batches at `idleTime`. */
  constructor(
    public batches: ChangeFeedBatch[],
    public idleTime = 1000,
    public failWith?: Error,
  ) {}

  async open(start: StartPoint) {
    this.opened.push(start);
    if (this.failWith) throw this.failWith;
    return {
      next: async (): Promise<ChangeFeedBatch> => {
        const b = this.batches.shift();
        if (b) return b;
        await new Promise((r) => setTimeout(r, 5));
        return {
          events: [],
          resumeToken: tokenAt(this.idleTime),
          highWaterTime: ts(this.idleTime),
        };
      },
      close: async () => undefined,
    };
  }
}

export function batch(events: ChangeEvent[], t?: number): ChangeFeedBatch {
  const last = events[events.length - 1];
  return {
    events,
    resumeToken: t !== undefined ? tokenAt(t) : last._id,
    highWaterTime: t !== undefined ? ts(t) : last.clusterTime,
  };
}

export const historyLost = () => new HistoryLostError('history lost', 286);

/** A destination holding documents by `ns|_id`, logging every call. */
export class FakeWriter implements ChangeWriter {
  docs = new Map<string, Document>();
  log: string[] = [];
  bulks: Array<{ ns: string; ops: WriteOp[] }> = [];
  delayFor: (ns: Namespace, ops: WriteOp[]) => number = () => 0;
  failUpdates = false;

  async bulkWrite(ns: Namespace, ops: WriteOp[]): Promise<WriteFailure[]> {
    const key = `${ns.db}.${ns.coll}`;
    this.bulks.push({ ns: key, ops });
    const delay = this.delayFor(ns, ops);
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    const failures: WriteFailure[] = [];
    ops.forEach((op, index) => {
      const id = `${key}|${JSON.stringify(op.filter._id)}`;
      this.log.push(`${op.kind}:${id}`);
      if (op.kind === 'replace' && op.insert && this.docs.has(id)) {
        // An insert meeting its `_id`, as a destination refuses it.
        failures.push({
          index,
          code: 11000,
          message: 'E11000 duplicate key error',
          faultLabels: labelsForWriteCode(11000),
        });
      } else if (op.kind === 'replace') this.docs.set(id, documentOf(op.replacement));
      else if (op.kind === 'delete') this.docs.delete(id);
      else if (this.failUpdates) {
        failures.push({
          index,
          code: 28,
          message: 'PathNotViable',
          faultLabels: labelsForWriteCode(28),
        });
      } else {
        const doc = this.docs.get(id);
        if (doc) this.docs.set(id, { ...doc, ...(op.update.$set as Document) });
      }
    });
    return failures;
  }
  async createCollection(ns: Namespace) {
    this.log.push(`create:${ns.db}.${ns.coll}`);
  }
  async dropCollection(ns: Namespace) {
    this.log.push(`drop:${ns.db}.${ns.coll}`);
  }
  async renameCollection(from: Namespace, to: Namespace) {
    this.log.push(`rename:${from.coll}->${to.coll}`);
    return true;
  }
  async listCollections() {
    return ['c', 'other'];
  }
  async createIndexes(ns: Namespace, specs: Document[]) {
    this.log.push(`createIndexes:${specs.map((s) => s.name).join(',')}`);
  }
  async dropIndex(_ns: Namespace, name: string) {
    this.log.push(`dropIndex:${name}`);
  }
  async collMod() {
    this.log.push('collMod');
  }
}

export class FakeCheckpoints implements CheckpointStore {
  saved: Checkpoint[] = [];
  async load() {
    return this.saved[this.saved.length - 1] ?? null;
  }
  async save(cp: Checkpoint) {
    this.saved.push(cp);
  }
}

export class FakeLookup implements DocumentLookup {
  source = new Map<string, Document>();
  calls = 0;
  async findByKey(ns: Namespace, key: Document) {
    this.calls += 1;
    return this.source.get(`${ns.db}.${ns.coll}|${JSON.stringify(key._id)}`) ?? null;
  }
}

/**
 * A router by name (no catalog): document events go to their own namespace when `selected`;
 * DDL events are recorded, and their time is logged in the writer's log order.
 */
export class NameRouter implements EventRouter {
  ddl: ChangeEvent[] = [];
  constructor(
    private readonly selected: (db: string, coll: string) => boolean = () => true,
    private readonly writer?: FakeWriter,
  ) {}
  route(event: ChangeEvent): EventRoute {
    const db = event.ns?.db;
    const coll = event.ns?.coll;
    if (db === undefined || coll === undefined) return { ignore: 'no-namespace' };
    if (!isSyncedNamespace(db, coll, this.selected)) return { ignore: 'not-selected' };
    return { ns: { db, coll }, key: `${db}.${coll}` };
  }
  async applyDdl(event: ChangeEvent): Promise<void> {
    this.ddl.push(event);
    this.writer?.log.push(`ddl:${event.operationType}`);
  }
}
