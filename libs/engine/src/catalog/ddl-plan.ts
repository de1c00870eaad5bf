import type { Document, Timestamp } from 'bson';
import type { BuildIndexesMode } from '@sync/contracts';
import type { ChangeEvent, Namespace } from '../apply/change-event';
import { translateDdl, type IndexOptionChange } from '../apply/ddl-event';
import { ApplyError } from '../apply/errors';
import { isSyncedDatabase, isSyncedNamespace } from '../apply/namespace-rules';
import type { NamespacePredicate } from '../apply/ports';
import { compareTimestamps } from '../apply/timestamps';
import type { NamespaceRecord, RelaxedIndex } from '../ports/job-store';
import { createOptions, uuidHex, viewKey, type NamespaceCatalog } from './namespace-catalog';

/** One destination DDL step. */
export type DestinationStep =
  | { kind: 'create'; ns: Namespace; options: Document }
  | { kind: 'drop'; ns: Namespace }
  | { kind: 'rename'; from: Namespace; to: Namespace }
  | { kind: 'createIndexes'; ns: Namespace; specs: Document[] }
  | { kind: 'dropIndex'; ns: Namespace; name: string }
  | { kind: 'collMod'; ns: Namespace; options: Document }
  | { kind: 'shardCollection'; ns: Namespace; key: Document };

/** What one DDL event does: destination steps, then its effect on the catalog (one job write). */
export interface DdlPlan {
  destination: DestinationStep[];
  catalog(catalog: NamespaceCatalog): void;
  /** A collection that enters the sync: added as `copy: 'pending'`, then copied. */
  copyIn?: NamespaceRecord;
}

export interface DdlPlanContext {
  catalog: NamespaceCatalog;
  selected: NamespacePredicate;
  buildIndexes: BuildIndexesMode;
  listedUntil: Timestamp;
  describeIncoming(to: Namespace, uuid: string | undefined): Promise<NamespaceRecord | null>;
}

const name = (r: NamespaceRecord): Namespace => ({ db: r.database, coll: r.collection });

/**
 * Decides what a source DDL event does (null: nothing — not selected, or already reflected by
 * the catalog because the namespace was listed after it). Rules (the namespace filter is fixed at
 * start; namespaces identified by collection UUID):
 * - create: a new selected collection/view is created (no copy: its whole history follows);
 * - drop / dropDatabase: the records' destination collections are dropped;
 * - rename within the filter: renamed on the destination (a target it replaces is dropped);
 *   out of the filter: dropped; into the filter, or across databases (where MongoDB gives the
 *   target a new UUID): the target is described from the source and copied;
 * - createIndexes / dropIndexes / collMod: applied unless older than the record's listing time.
 *   Indexes are read after that time, so the DDL in between is both listed and replayed: each
 *   is applied as of its event (a createIndexes replaces a stale index of its name or identity,
 *   a drop of a missing index is done), and the stream order ends with the source's definition;
 * - shardCollection: the destination collection is sharded with the same key (if sharded).
 */
export async function planDdl(event: ChangeEvent, ctx: DdlPlanContext): Promise<DdlPlan | null> {
  const db = event.ns?.db ?? '';
  const coll = event.ns?.coll;
  const uuid = uuidHex(event.collectionUUID);
  const { catalog } = ctx;
  const desc = event.operationDescription ?? {};
  const find = (): NamespaceRecord | undefined => {
    if (coll === undefined) return undefined;
    if (uuid !== undefined) return catalog.byKey(uuid);
    return catalog.byKey(viewKey(db, coll)) ?? catalog.byName(db, coll);
  };

  switch (event.operationType) {
    case 'create': {
      if (coll === undefined || !isSyncedNamespace(db, coll, ctx.selected)) return null;
      const isView = desc.viewOn !== undefined;
      const key = isView || uuid === undefined ? viewKey(db, coll) : uuid;
      if (catalog.byKey(key)) return null; // listed after it was created
      if (catalog.byName(db, coll)) {
        if (after(event, ctx.listedUntil)) throw conflict(event, `${db}.${coll} already exists`);
        return null; // an older collection of that name, dropped before the listing
      }
      const options = createOptions(withoutIdIndex(desc));
      const record: NamespaceRecord = {
        key,
        database: db,
        collection: coll,
        type: isView ? 'view' : 'collection',
        options,
        indexes: [],
        relaxedIndexes: [],
        estimatedBytes: 0,
        estimatedCount: 0,
        capped: options.capped === true,
        listedAt: event.clusterTime!,
        copy: 'none',
      };
      return {
        destination: [{ kind: 'create', ns: { db, coll }, options }],
        catalog: (c) => c.add(record),
      };
    }
    case 'drop': {
      const record = find();
      if (!record) return null;
      return {
        destination: [{ kind: 'drop', ns: name(record) }],
        catalog: (c) => void c.remove(record.key),
      };
    }
    case 'dropDatabase': {
      if (!isSyncedDatabase(db)) return null;
      const records = catalog.inDatabase(db);
      if (records.length === 0) return null;
      return {
        destination: records.map((r) => ({ kind: 'drop' as const, ns: name(r) })),
        catalog: (c) => records.forEach((r) => c.remove(r.key)),
      };
    }
    case 'rename':
      return planRename(event, ctx, find());
    case 'createIndexes':
    case 'dropIndexes':
    case 'modify': {
      const record = find();
      if (!record) return null;
      // Listed after this event: its indexes and options already include it.
      if (!after(event, record.listedAt)) return null;
      return planIndexOrOptions(event, record, ctx);
    }
    case 'shardCollection': {
      // A collection sharded on the source during the sync is sharded on a sharded
      // destination with the same key (non-unique until commit, like every relaxed index);
      // a replica-set destination has nothing to do.
      const record = find();
      if (!record || !after(event, record.listedAt)) return null;
      const key = desc.shardKey as Document | undefined;
      if (!key || typeof key !== 'object') {
        throw conflict(event, 'the shardCollection event carries no operationDescription.shardKey');
      }
      const unique = desc.unique === true;
      return {
        destination: [{ kind: 'shardCollection', ns: name(record), key }],
        catalog: (c) => {
          const current = c.byKey(record.key);
          if (current) current.shardKey = { key, unique };
        },
      };
    }
    default:
      // Other sharding DDL carries nothing the destination needs; resharding is refused
      // before it gets here.
      return null;
  }
}

async function planRename(
  event: ChangeEvent,
  ctx: DdlPlanContext,
  record: NamespaceRecord | undefined,
): Promise<DdlPlan | null> {
  const desc = event.operationDescription ?? {};
  const from: Namespace = { db: event.ns?.db ?? '', coll: event.ns?.coll ?? '' };
  const target = (desc.to as Namespace | undefined) ?? event.to;
  if (!target) throw conflict(event, 'rename event without a target namespace');
  const to: Namespace = { db: target.db, coll: target.coll };
  const toIn = isSyncedNamespace(to.db, to.coll, ctx.selected);
  const { catalog } = ctx;

  if (record && (record.database !== from.db || record.collection !== from.coll)) {
    // The record was listed after this rename (it is already at its target, or further on).
    if (after(event, ctx.listedUntil)) {
      throw conflict(
        event,
        `the catalog places this collection at ${record.database}.${record.collection}`,
      );
    }
    return null;
  }
  const dropTargetKey = uuidHex(desc.dropTarget);
  const replaced =
    (dropTargetKey !== undefined ? catalog.byKey(dropTargetKey) : undefined) ??
    (toIn ? catalog.byName(to.db, to.coll) : undefined);
  const dropReplaced = replaced && replaced !== record ? replaced : undefined;

  if (record && toIn && from.db === to.db) {
    return {
      destination: [{ kind: 'rename', from, to }],
      catalog: (c) => {
        if (dropReplaced) c.remove(dropReplaced.key);
        c.rename(record.key, to);
      },
    };
  }
  const destination: Array<{ kind: 'drop'; ns: Namespace }> = [];
  if (record) destination.push({ kind: 'drop', ns: from });
  if (dropReplaced) destination.push({ kind: 'drop', ns: name(dropReplaced) });
  if (!toIn) {
    if (!record) return null;
    return { destination, catalog: (c) => void c.remove(record.key) };
  }
  // Into the filter, or across databases: the target is copied from the source.
  const incoming = await ctx.describeIncoming(
    to,
    from.db === to.db ? uuidHex(event.collectionUUID) : undefined,
  );
  if (!incoming && destination.length === 0) return null;
  return {
    destination,
    catalog: (c) => {
      if (record) c.remove(record.key);
      if (dropReplaced) c.remove(dropReplaced.key);
      if (incoming) c.add(incoming);
    },
    ...(incoming ? { copyIn: incoming } : {}),
  };
}

function planIndexOrOptions(
  event: ChangeEvent,
  record: NamespaceRecord,
  ctx: DdlPlanContext,
): DdlPlan | null {
  const ns = name(record);
  const actions = translateDdl({ ...event, ns: { db: ns.db, coll: ns.coll } }, () => true, {
    buildIndexes: ctx.buildIndexes,
  });
  const destination: DestinationStep[] = [];
  const changes: Array<(list: RelaxedIndex[]) => RelaxedIndex[]> = [];
  for (const action of actions) {
    switch (action.kind) {
      case 'createIndexes': {
        destination.push({ kind: 'createIndexes', ns, specs: action.specs });
        // Each created index is now exactly this spec (an earlier definition of the same name
        // may be replaced, see createIndexesAsOfEvent): what commit restores is this one's.
        const names = new Set(action.specs.map((s) => String(s.name)));
        changes.push((list) => [...list.filter((r) => !names.has(r.name)), ...action.relaxed]);
        break;
      }
      case 'dropIndexes':
        for (const index of action.names) destination.push({ kind: 'dropIndex', ns, name: index });
        changes.push((list) => list.filter((r) => !action.names.includes(r.name)));
        break;
      case 'collMod':
        destination.push({ kind: 'collMod', ns, options: action.options });
        break;
      case 'recordIndexChange':
        changes.push((list) => recordIndexChange(list, action.index));
        break;
      default:
        break;
    }
  }
  if (destination.length === 0 && changes.length === 0) return null;
  return {
    destination,
    catalog: (c) => {
      const target = c.byKey(record.key);
      if (!target) return;
      for (const change of changes) target.relaxedIndexes = change(target.relaxedIndexes);
    },
  };
}

/** The source changed options of an index the destination keeps relaxed: restore those at commit. */
function recordIndexChange(list: RelaxedIndex[], change: IndexOptionChange): RelaxedIndex[] {
  const out = list.map((r) => ({ ...r }));
  let entry = out.find(
    (r) =>
      (change.name !== undefined && r.name === change.name) ||
      (change.keyPattern !== undefined &&
        JSON.stringify(r.original.key) === JSON.stringify(change.keyPattern)),
  );
  if (!entry) {
    if (change.name === undefined) return out;
    entry = {
      name: change.name,
      original: { name: change.name, key: change.keyPattern ?? {} },
      relaxedUnique: false,
      relaxedHidden: false,
      relaxedExpireAfterSeconds: false,
    };
    out.push(entry);
  }
  const original = { ...entry.original };
  if (change.unique !== undefined) original.unique = change.unique;
  if (change.hidden !== undefined) original.hidden = change.hidden;
  if (change.expireAfterSeconds !== undefined)
    original.expireAfterSeconds = change.expireAfterSeconds;
  Object.assign(entry, {
    original,
    relaxedUnique: original.unique === true,
    relaxedHidden: original.hidden === true,
    relaxedExpireAfterSeconds: original.expireAfterSeconds !== undefined,
  });
  return out;
}

function withoutIdIndex(desc: Document): Document {
  const { idIndex: _idIndex, ...rest } = desc;
  return rest;
}

function after(event: ChangeEvent, time: Timestamp): boolean {
  return !!event.clusterTime && compareTimestamps(event.clusterTime, time) > 0;
}

function conflict(event: ChangeEvent, detail: string): ApplyError {
  const ns = event.ns ? `${event.ns.db}.${event.ns.coll ?? ''}` : '?';
  return new ApplyError(`cannot apply ${event.operationType} on ${ns}: ${detail}`, false);
}
