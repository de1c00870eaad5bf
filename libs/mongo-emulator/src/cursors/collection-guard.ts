import type { Document } from 'bson';
import { bsonSize } from '../bson/codec';
import { CommandError } from '../errors';
import type { Catalog } from '../storage/catalog';
import type { Collection } from '../storage/collection';
import { sameUuid, uuidString } from '../commands/crud/collection-uuid';

/**
 * What mongod's query stages check when a yielded plan is restored (on every getMore):
 * the collection, looked up by the UUID it had when the cursor was opened, must still exist
 * under the same name (RequiresCollectionStage::doRestoreState, PlanYieldPolicy's
 * throwCollectionDroppedError / throwCollectionRenamedError). Otherwise the getMore fails with
 * 175 QueryPlanKilled and the cursor is gone.
 *
 * A dropped collection (also through dropDatabase, a dropTarget rename, or a cross-database
 * rename, which mongod implements as copy + drop) reports "collection dropped"; a rename within
 * the database reports "collection renamed".
 */
export function collectionGuard(catalog: Catalog, coll: Collection): () => void {
  const { db, name, uuid, ns } = coll;
  return () => {
    if (catalog.getCollection(db, name) === coll && sameUuid(coll.uuid, uuid)) return;
    const now = catalog.collectionByUuid(uuid);
    if (!now) {
      throw new CommandError('QueryPlanKilled', `collection dropped. UUID ${uuidString(uuid)}`);
    }
    if (now.db !== db || now.name !== name) {
      throw new CommandError(
        'QueryPlanKilled',
        `collection renamed from '${ns}' to '${now.ns}'. UUID ${uuidString(uuid)}`,
      );
    }
  };
}

/** mongod's internalDocumentSourceCursorBatchSizeBytes default (4 MiB). */
export const CURSOR_STAGE_BATCH_BYTES = 4 * 1024 * 1024;

/**
 * An aggregation's `$cursor` stage (DocumentSourceCursor::loadBatch): it pulls input from the
 * collection in batches of up to 4 MiB and releases the collection between them. Only loading
 * the next batch restores the plan, so a getMore fails after a drop or rename only once the
 * documents already loaded are used up; once the input is exhausted the collection is not
 * needed any more. (Sizes are BSON sizes, mongod counts its in-memory Document size.)
 */
export function* cursorStageInput(
  input: Iterable<Document>,
  guard: () => void,
  batchBytes = CURSOR_STAGE_BATCH_BYTES,
): Generator<Document> {
  const iterator = input[Symbol.iterator]();
  let first = true;
  try {
    for (;;) {
      if (!first) guard();
      first = false;
      const batch: Document[] = [];
      let bytes = 0;
      let done = false;
      while (bytes <= batchBytes) {
        const next = iterator.next();
        if (next.done) {
          done = true;
          break;
        }
        batch.push(next.value);
        bytes += bsonSize(next.value);
      }
      yield* batch;
      if (done) return;
    }
  } finally {
    iterator.return?.();
  }
}

/**
 * Stages MongoDB 7.0 can push entirely into the query executor (the classic engine's
 * $match/$sort/$limit/$skip/projection pushdown, and SBE's $group/$lookup). When every stage
 * left after the planner's pushdown is one of these, the aggregation pipeline is optimized
 * away and its cursor is the query executor itself, restored on every getMore like a find's.
 * This is an approximation: mongod's eligibility rules (e.g. computed projections, SBE
 * restrictions) are finer.
 */
const PUSHABLE_STAGES = new Set([
  '$match',
  '$sort',
  '$limit',
  '$skip',
  '$project',
  '$unset',
  '$group',
  '$lookup',
]);

export function isFullyPushable(stages: Document[]): boolean {
  return stages.every((s) => {
    const keys = Object.keys(s);
    return keys.length === 1 && PUSHABLE_STAGES.has(keys[0]);
  });
}

/**
 * The invalidation behaviour of an aggregation over `coll`: either the cursor is checked on
 * every getMore (`guard`, fully pushable pipelines), or the input goes through a `$cursor`
 * stage that checks the collection whenever it loads more (`input`).
 */
export function guardedAggregateInput(
  catalog: Catalog,
  coll: Collection | undefined,
  input: Iterable<Document>,
  stages: Document[],
): { input: Iterable<Document>; guard?: () => void } {
  if (!coll) return { input };
  const guard = collectionGuard(catalog, coll);
  if (isFullyPushable(stages)) return { input, guard };
  return { input: cursorStageInput(input, guard) };
}
