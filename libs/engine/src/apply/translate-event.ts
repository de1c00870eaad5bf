import type { ChangeEvent } from './change-event';
import {
  translateDdl,
  DDL_OPERATION_TYPES,
  type DdlAction,
  type DdlTranslationOptions,
} from './ddl-event';
import { translateDelete } from './delete-event';
import { documentIdentity } from './doc-key';
import { ChangeStreamInvalidatedError, UnsupportedEventError } from './errors';
import { translateInsert } from './insert-event';
import { isSyncedNamespace } from './namespace-rules';
import type { NamespacePredicate } from './ports';
import { translateReplace } from './replace-event';
import { translateUpdate, type UpdateTranslationOptions } from './update-event';
import type { DocumentWrite } from './write-step';

export type TranslationOptions = UpdateTranslationOptions &
  DdlTranslationOptions & {
    /**
     * A per-shard worker: other workers apply other shards' events at their own pace, so a
     * write may never remove a document by `_id` alone (the other shard's newer version of a
     * moved document would go with it). A shard-key change retires only the versions this
     * worker's shard owns (see write-step.ts, replace-event.ts and update-event.ts).
     */
    perShard?: boolean;
  };

export type Translation =
  | { kind: 'document'; write: DocumentWrite }
  | { kind: 'ddl'; actions: DdlAction[] }
  | { kind: 'ignore'; reason: string };

/**
 * Event → destination work. Pure: no I/O, so every rule is unit-tested. Throws for events the
 * sync must not continue past (invalidate, resharding).
 */
/**
 * Throws for events the sync must not continue past: an invalidate (a cluster-wide stream never
 * invalidates, so our position is no longer valid) and resharding DDL.
 */
export function assertApplicable(event: ChangeEvent): void {
  const type = event.operationType;
  if (type === 'invalidate') throw new ChangeStreamInvalidatedError();
  if (type === 'reshardCollection' || type === 'refineCollectionShardKey') {
    throw new UnsupportedEventError(type, `${type} on the source is not supported during a sync`);
  }
}

export function translateEvent(
  event: ChangeEvent,
  selected: NamespacePredicate,
  options: TranslationOptions = {},
  /** Stable identity of the collection (its UUID) for lane routing; default: the namespace. */
  collectionKey?: string,
): Translation {
  assertApplicable(event);
  const type = event.operationType;
  if (DDL_OPERATION_TYPES.has(type)) {
    const actions = translateDdl(event, selected, options);
    return actions.length > 0 ? { kind: 'ddl', actions } : { kind: 'ignore', reason: 'ddl-noop' };
  }

  const db = event.ns?.db;
  const coll = event.ns?.coll;
  if (db === undefined || coll === undefined) return { kind: 'ignore', reason: 'no-namespace' };
  if (!isSyncedNamespace(db, coll, selected)) return { kind: 'ignore', reason: 'not-selected' };

  let steps;
  switch (type) {
    case 'insert':
      steps = translateInsert(event);
      break;
    case 'update':
      steps = translateUpdate(event, options);
      break;
    case 'replace':
      steps = translateReplace(event, options.perShard === true);
      break;
    case 'delete':
      steps = translateDelete(event);
      break;
    default:
      return { kind: 'ignore', reason: `unknown-operation:${type}` };
  }
  const documentKey = event.documentKey!;
  const last = steps[steps.length - 1];
  return {
    kind: 'document',
    write: {
      ns: { db, coll },
      identity:
        collectionKey !== undefined
          ? documentIdentity(collectionKey, '', documentKey)
          : documentIdentity(db, coll, documentKey),
      steps,
      supersedes: last !== undefined && last.kind !== 'update',
    },
  };
}
