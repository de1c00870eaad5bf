import type { Document } from 'bson';
import { toNumber, type ChangeEvent, type Namespace } from './change-event';
import type { BuildIndexesMode } from '@sync/contracts';
import { planDestinationIndexes } from '../prepare/index-relaxation';
import type { RelaxedIndex } from '../ports/job-store';
import { isSyncedDatabase, isSyncedNamespace } from './namespace-rules';
import type { NamespacePredicate } from './ports';

/** One destination DDL, produced from a source DDL event; run behind a barrier. */
export type DdlAction =
  | { kind: 'createCollection'; ns: Namespace; options: Document }
  | { kind: 'dropCollection'; ns: Namespace }
  | { kind: 'renameCollection'; from: Namespace; to: Namespace }
  /** Drop every selected collection of the database still on the destination (see below). */
  | { kind: 'dropDatabase'; db: string }
  | { kind: 'createIndexes'; ns: Namespace; specs: Document[]; relaxed: RelaxedIndex[] }
  | { kind: 'dropIndexes'; ns: Namespace; names: string[] }
  | { kind: 'collMod'; ns: Namespace; options: Document }
  /** Source index options changed but kept relaxed on the destination: record for commit. */
  | { kind: 'recordIndexChange'; ns: Namespace; index: IndexOptionChange }
  /** A collection entered the filter by rename: it must be created and copied from the source. */
  | { kind: 'needsCopy'; ns: Namespace };

/** A collMod of index options (name or keyPattern, plus the options the source now has). */
export interface IndexOptionChange {
  name?: string;
  keyPattern?: Document;
  unique?: boolean;
  hidden?: boolean;
  expireAfterSeconds?: number;
}

export interface DdlTranslationOptions {
  /** `never`: index DDL is not replayed (only `_id` exists on the destination). */
  buildIndexes?: BuildIndexesMode;
}

export const DDL_OPERATION_TYPES = new Set([
  'create',
  'createIndexes',
  'dropIndexes',
  'modify',
  'drop',
  'rename',
  'dropDatabase',
  'shardCollection',
  'reshardCollection',
  'refineCollectionShardKey',
  'invalidate',
]);

/**
 * Translates a DDL event into destination actions, applying the namespace filter. Rename rules
 * (the filter is fixed at start):
 * - selected → selected: rename on the destination (dropping an existing target: the source
 *   rename succeeded, so whatever sits at the target on the destination is stale);
 * - selected → not selected: the data leaves the sync, so drop the old name on the destination;
 * - not selected → selected: the destination never had it, so ask for a create + copy (the
 *   copy engine creates it with the source's options and copies it; events on the new name
 *   that arrive meanwhile are applied and converge like any event overlapping a copy);
 * - neither selected: ignored.
 * dropDatabase: MongoDB first emits a `drop` for each collection, so the database event only
 * sweeps what is left of the selected collections — never the whole destination database,
 * which may hold namespaces outside the filter.
 */
export function translateDdl(
  event: ChangeEvent,
  selected: NamespacePredicate,
  options: DdlTranslationOptions = {},
): DdlAction[] {
  const indexesOn = (options.buildIndexes ?? 'beforeDataCopy') !== 'never';
  const db = event.ns?.db ?? '';
  const coll = event.ns?.coll;
  const inFilter = coll !== undefined && isSyncedNamespace(db, coll, selected);
  const ns: Namespace = { db, coll: coll ?? '' };
  const desc = event.operationDescription ?? {};

  switch (event.operationType) {
    case 'create':
      return inFilter ? [{ kind: 'createCollection', ns, options: createOptions(desc) }] : [];
    case 'drop':
      return inFilter ? [{ kind: 'dropCollection', ns }] : [];
    case 'dropDatabase':
      return isSyncedDatabase(db) ? [{ kind: 'dropDatabase', db }] : [];
    case 'rename':
      return translateRename(event, ns, inFilter, selected);
    case 'createIndexes':
      return inFilter && indexesOn ? translateCreateIndexes(ns, desc) : [];
    case 'dropIndexes': {
      if (!inFilter || !indexesOn) return [];
      const names = ((desc.indexes as Document[] | undefined) ?? []).map((s) => String(s.name));
      return names.length > 0 ? [{ kind: 'dropIndexes', ns, names }] : [];
    }
    case 'modify':
      return inFilter ? translateModify(ns, desc, indexesOn) : [];
    default:
      return [];
  }
}

/**
 * `create` carries the options of the create command. idIndex is derived by the server (and
 * follows the collation), so it is dropped rather than echoed.
 */
function createOptions(desc: Document): Document {
  const { idIndex: _idIndex, ...options } = desc;
  return options;
}

function translateRename(
  event: ChangeEvent,
  from: Namespace,
  fromIn: boolean,
  selected: NamespacePredicate,
): DdlAction[] {
  const target = (event.operationDescription?.to as Namespace | undefined) ?? event.to;
  if (!target) throw new TypeError('rename event without a target namespace');
  const to: Namespace = { db: target.db, coll: target.coll };
  const toIn = isSyncedNamespace(to.db, to.coll, selected);
  if (fromIn && toIn) return [{ kind: 'renameCollection', from, to }];
  if (fromIn) return [{ kind: 'dropCollection', ns: from }];
  if (toIn) return [{ kind: 'needsCopy', ns: to }];
  return [];
}

/** Same relaxation as the indexes built before the copy (prepare/index-relaxation.ts). */
function translateCreateIndexes(ns: Namespace, desc: Document): DdlAction[] {
  const plan = planDestinationIndexes(
    (desc.indexes as Document[] | undefined) ?? [],
    'beforeDataCopy',
  );
  return plan.specs.length > 0
    ? [{ kind: 'createIndexes', ns, specs: plan.specs, relaxed: plan.relaxed }]
    : [];
}

/**
 * `modify` echoes the collMod options. Index options the destination keeps relaxed until
 * commit (unique, hidden, TTL value, prepareUnique) are recorded, not applied; collection
 * options (validator, validationLevel/Action, view pipeline...) are applied as is — change
 * writes bypass document validation, so a validator cannot block them.
 */
function translateModify(ns: Namespace, desc: Document, indexesOn: boolean): DdlAction[] {
  const { index, ...collectionOptions } = desc as { index?: Document } & Document;
  const actions: DdlAction[] = [];
  if (index && indexesOn) {
    const change: IndexOptionChange = {};
    if (index.name !== undefined) change.name = String(index.name);
    if (index.keyPattern) change.keyPattern = index.keyPattern as Document;
    if (index.unique !== undefined) change.unique = index.unique === true;
    if (index.hidden !== undefined) change.hidden = index.hidden === true;
    if (index.expireAfterSeconds !== undefined) {
      change.expireAfterSeconds = toNumber(index.expireAfterSeconds);
    }
    actions.push({ kind: 'recordIndexChange', ns, index: change });
  }
  if (Object.keys(collectionOptions).length > 0) {
    actions.push({ kind: 'collMod', ns, options: collectionOptions });
  }
  return actions;
}
