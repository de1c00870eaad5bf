import type { Document } from 'bson';
import { ApiError, type StartRequest } from '@sync/contracts';
import type { NamespaceRecord } from '../ports/job-store';
import { isTrue } from './index-relaxation';

/** The shard key of an entry as one ordered key document (`[{a: 1}, {b: 'hashed'}]` → `{a: 1, b: 'hashed'}`). */
export function shardKeyOf(entry: {
  shardCollection: { key: Array<Record<string, unknown>> };
}): Document {
  const key: Document = {};
  for (const part of entry.shardCollection.key) Object.assign(key, part);
  return key;
}

const isSimple = (collation: unknown) =>
  collation === undefined || (collation as { locale?: string }).locale === 'simple';

/** An index supports a shard key when the key's fields are its prefix, in order, with simple collation. */
function supports(index: Document, key: Document): boolean {
  const fields = Object.keys(key);
  const indexFields = Object.keys((index.key as Document) ?? {});
  if (indexFields.length < fields.length) return false;
  if (!fields.every((f, i) => indexFields[i] === f)) return false;
  const hashed = fields.some((f) => key[f] === 'hashed');
  const indexHashed = fields.some((f) => (index.key as Document)[f] === 'hashed');
  return (
    hashed === indexHashed &&
    isSimple(index.collation) &&
    index.partialFilterExpression === undefined
  );
}

/**
 * The `sharding` option checked at start, before anything is written: every entry names a selected
 * collection once; with createSupportingIndexes false, each key needs a supporting index on the
 * source (simple collation; declared unique ⇒ the collection is sharded unique). Returns the
 * records with `shardKey` set; with createSupportingIndexes true, a missing supporting index is
 * named for the preparer to build on the destination (it then stays after commit).
 */
export function planSharding(
  request: StartRequest,
  namespaces: NamespaceRecord[],
  sourceSharded: Map<string, { key: Document; unique: boolean }> = new Map(),
): NamespaceRecord[] {
  const sharding = request.sharding;
  if (!sharding) {
    // Sharded → sharded: each collection sharded on the source is sharded the same way on the
    // destination (its shard-key index is among the source indexes the preparer builds).
    if (sourceSharded.size === 0) return namespaces;
    return namespaces.map((n) => {
      const shard = sourceSharded.get(`${n.database}.${n.collection}`);
      return shard && n.type === 'collection' ? { ...n, shardKey: { ...shard } } : n;
    });
  }
  const byName = new Map(namespaces.map((n) => [`${n.database}.${n.collection}`, n]));
  const seen = new Set<string>();
  const keys = new Map<string, NamespaceRecord['shardKey']>();
  for (const entry of sharding.shardingEntries) {
    const ns = `${entry.database}.${entry.collection}`;
    const record = byName.get(ns);
    if (!record || record.type !== 'collection' || seen.has(ns)) {
      throw new ApiError(
        'InvalidShardingEntry',
        seen.has(ns)
          ? `sharding entry ${ns} appears twice.`
          : `sharding entry ${ns} is not a collection selected for sync.`,
      );
    }
    seen.add(ns);
    const key = shardKeyOf(entry);
    const support = record.indexes.find((i) => supports(i, key));
    if (!support && !sharding.createSupportingIndexes) {
      throw new ApiError(
        'ShardKeyIndexMissing',
        `${ns} has no index supporting the shard key ${JSON.stringify(key)} on the source (with simple collation); create one or set createSupportingIndexes: true.`,
      );
    }
    const unique =
      !!support &&
      isTrue(support.unique) &&
      Object.keys(support.key as Document).length === Object.keys(key).length;
    keys.set(ns, {
      key,
      unique,
      ...(support
        ? {}
        : {
            supportingIndex: defaultIndexName(key),
          }),
    });
  }
  return namespaces.map((n) => {
    const shardKey = keys.get(`${n.database}.${n.collection}`);
    return shardKey ? { ...n, shardKey } : n;
  });
}

/** MongoDB's default name of an index on `key` (`a_1_b_-1`, `k_hashed`). */
export function defaultIndexName(key: Document): string {
  return Object.entries(key)
    .map(([field, kind]) => `${field}_${String(kind)}`)
    .join('_');
}
