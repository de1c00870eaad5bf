import { nsKey } from './change-event';
import type { DdlAction } from './ddl-event';
import { ApplyError } from './errors';
import { isSyncedNamespace } from './namespace-rules';
import type { ApplyListener, ChangeWriter, DdlScope, NamespacePredicate } from './ports';

export interface DdlExecutorDeps {
  writer: ChangeWriter;
  selected: NamespacePredicate;
  listener?: ApplyListener;
}

/**
 * Runs one DDL action on the destination, then tells the listener. Called only behind the
 * barrier (every lane drained), so no document write of an earlier event can land after it —
 * e.g. an insert into a collection the DDL drops. Every action is idempotent because a restart
 * replays from the last checkpoint, which may precede the DDL.
 */
export async function executeDdl(action: DdlAction, deps: DdlExecutorDeps): Promise<void> {
  const scopes = scopesOf(action);
  if (scopes.length === 0 || !deps.listener?.beforeDdl) return runDdl(action, deps);
  await deps.listener.beforeDdl(scopes);
  try {
    await runDdl(action, deps);
  } finally {
    await deps.listener.afterDdl?.(scopes);
  }
}

/** Namespaces whose destination collection a DDL drops, moves or re-creates. */
function scopesOf(action: DdlAction): DdlScope[] {
  switch (action.kind) {
    case 'dropCollection':
    case 'needsCopy':
      return [{ db: action.ns.db, coll: action.ns.coll }];
    case 'renameCollection':
      return [
        { db: action.from.db, coll: action.from.coll },
        { db: action.to.db, coll: action.to.coll },
      ];
    case 'dropDatabase':
      return [{ db: action.db }];
    default:
      return [];
  }
}

async function runDdl(action: DdlAction, deps: DdlExecutorDeps): Promise<void> {
  const { writer, listener } = deps;
  switch (action.kind) {
    case 'createCollection':
      await writer.createCollection(action.ns, action.options);
      return notify(deps, { kind: 'created', ns: action.ns });
    case 'dropCollection':
      await writer.dropCollection(action.ns);
      return notify(deps, { kind: 'dropped', ns: action.ns });
    case 'renameCollection': {
      // false: the source name is already gone here, i.e. a replay of a rename we applied.
      const renamed = await writer.renameCollection(action.from, action.to);
      if (renamed) return notify(deps, { kind: 'renamed', from: action.from, to: action.to });
      return;
    }
    case 'dropDatabase': {
      for (const coll of await writer.listCollections(action.db)) {
        if (!isSyncedNamespace(action.db, coll, deps.selected)) continue;
        const ns = { db: action.db, coll };
        await writer.dropCollection(ns);
        await notify(deps, { kind: 'dropped', ns });
      }
      return;
    }
    case 'createIndexes':
      await writer.createIndexes(action.ns, action.specs);
      if (action.relaxed.length === 0) return;
      return notify(deps, { kind: 'indexesRelaxed', ns: action.ns, relaxed: action.relaxed });
    case 'dropIndexes':
      for (const name of action.names) await writer.dropIndex(action.ns, name);
      return notify(deps, { kind: 'indexesDropped', ns: action.ns, names: action.names });
    case 'collMod':
      return writer.collMod(action.ns, action.options);
    case 'recordIndexChange':
      return notify(deps, { kind: 'indexChanged', ns: action.ns, index: action.index });
    case 'needsCopy':
      if (!listener?.onDdl) {
        // Without a copy the destination would silently miss the collection's data.
        throw new ApplyError(
          `${nsKey(action.ns)} was renamed into the filter and needs a copy`,
          false,
        );
      }
      return listener.onDdl({ kind: 'needsCopy', ns: action.ns });
  }
}

async function notify(
  deps: DdlExecutorDeps,
  notice: Parameters<NonNullable<ApplyListener['onDdl']>>[0],
): Promise<void> {
  await deps.listener?.onDdl?.(notice);
}
