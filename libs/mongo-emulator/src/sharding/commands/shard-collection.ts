import { Long, type Binary, type Document } from 'bson';
import { CommandError } from '../../errors';
import { asNumber } from '../../server/values';
import type { ShardHandle } from '../metadata';
import type { MongosRouter } from '../router';
import { completeKey, hashedSplitPoints, maxKeyDoc, minKeyDoc } from '../targeting';
import { firstKey, isDocument, namespaceDb } from './util';
import type { RouterCommandDefinition } from './types';

/**
 * shardCollection: validates the key, requires (or on an empty collection creates) an index
 * prefixed by the key on the primary shard, and registers the initial chunks.
 */
export const shardCollectionCommand: RouterCommandDefinition = {
  name: 'shardCollection',
  aliases: ['shardcollection'],
  async run({ router, body, conn, db }) {
    router.requireAdmin('shardCollection', db);
    router.checkAuth(conn, 'shardCollection', db, [
      { target: 'cluster', action: 'anyAdminCommand' },
    ]);
    const ns = body[firstKey(body)];
    const nsDb = namespaceDb(ns);
    if (typeof ns !== 'string' || !nsDb || ns.endsWith('.'))
      throw new CommandError('InvalidNamespace', `Invalid namespace specified '${String(ns)}'`);
    const coll = ns.slice(nsDb.length + 1);
    if (nsDb === 'admin' || nsDb === 'local' || nsDb === 'config' || coll.startsWith('system.'))
      throw new CommandError('IllegalOperation', `can't shard ${ns}`);
    const key = body.key;
    if (!isDocument(key) || Object.keys(key).length === 0)
      throw new CommandError('BadValue', 'Shard key cannot be empty');
    const fields = Object.entries(key);
    const hashed = fields.filter(([, v]) => v === 'hashed');
    for (const [field, value] of fields) {
      if (value !== 'hashed' && asNumber(value) !== 1)
        throw new CommandError(
          'BadValue',
          `Unsupported shard key pattern ${JSON.stringify(key)}. Pattern must either be a single hashed field, or a list of ascending fields`,
        );
      if (field === '' || field.startsWith('$') || field.split('.').some((p) => p === ''))
        throw new CommandError(
          'BadValue',
          `Shard key ${JSON.stringify(key)} contains invalid field ${field}`,
        );
    }
    if (hashed.length > 1)
      throw new CommandError(
        'BadValue',
        `Unsupported shard key pattern ${JSON.stringify(key)}. Pattern must either be a single hashed field, or a list of ascending fields`,
      );
    if (hashed.length && body.unique === true)
      throw new CommandError(
        'InvalidOptions',
        "Hashed shard keys cannot be declared unique. It's possible to ensure uniqueness on the hashed field by declaring an additional (non-hashed) unique index on the field.",
      );
    const unique = body.unique === true;
    const existing = router.metadata.collections.get(ns);
    if (existing) {
      if (JSON.stringify(existing.key) === JSON.stringify(key) && existing.unique === unique)
        return router.local({ collectionsharded: ns, ok: 1 });
      throw new CommandError('AlreadyInitialized', `sharding already enabled for collection ${ns}`);
    }
    const dbEntry = router.metadata.database(nsDb, true)!;
    const shard = router.metadata.shard(dbEntry.primary);
    const run = async (cmd: Document): Promise<Document> => {
      const reply = await shard.executor.execute({ ...cmd, $db: nsDb }, conn);
      if (asNumber(reply.ok) === 0) {
        throw new CommandError(reply.code as number, String(reply.errmsg));
      }
      return reply;
    };
    const listing = await run({ listCollections: 1, filter: { name: coll } });
    let info = ((listing.cursor as Document).firstBatch as Document[])[0];
    if (info?.type === 'view')
      throw new CommandError(
        'CommandNotSupportedOnView',
        `Namespace ${ns} is a view, not a collection`,
      );
    const keyFields = fields.map(([f]) => f);
    const indexes = info
      ? (((await run({ listIndexes: coll })).cursor as Document).firstBatch as Document[])
      : [];
    const prefixed = indexes.filter((idx) => {
      const idxFields = Object.keys(idx.key as Document);
      return (
        keyFields.every(
          (f, i) =>
            idxFields[i] === f &&
            (key[f] === 'hashed'
              ? (idx.key as Document)[f] === 'hashed'
              : asNumber((idx.key as Document)[f]) === 1),
        ) &&
        idx.sparse !== true &&
        idx.partialFilterExpression === undefined &&
        idx.collation === undefined
      );
    });
    if (
      unique &&
      !prefixed.some(
        (idx) => idx.unique === true || (idx.name === '_id_' && keyFields.length === 1),
      )
    ) {
      if (prefixed.length) {
        throw new CommandError(
          'InvalidOptions',
          `can't shard collection '${ns}' with unique index on ${JSON.stringify(key)} and proposed shard key ${JSON.stringify(key)}. Uniqueness can't be maintained unless shard key is a prefix`,
        );
      }
    }
    const nonEmpty = info
      ? (((await run({ find: coll, limit: 1 })).cursor as Document).firstBatch as Document[])
          .length > 0
      : false;
    const numInitialChunks = asNumber(body.numInitialChunks) ?? 0;
    if (numInitialChunks && (!hashed.length || nonEmpty))
      throw new CommandError(
        'InvalidOptions',
        'numInitialChunks is only supported when the collection is empty and has a hashed field in the shard key pattern',
      );
    if (numInitialChunks && hashed[0][0] !== keyFields[0])
      throw new CommandError(
        'InvalidOptions',
        "When the prefix of the hashed shard key is a range field, 'numInitialChunks' can only be used when the 'presplitHashedZones' is true",
      );
    if (!prefixed.length) {
      if (nonEmpty) {
        throw new CommandError(
          'InvalidOptions',
          'Please create an index that starts with the proposed shard key before sharding the collection. ',
        );
      }
      if (keyFields.length === 1 && keyFields[0] === '_id' && key._id !== 'hashed') {
        // A new collection's own `_id` index serves the key {_id: 1} (creating `_id_1` beside
        // it would be refused as a second index on the same key).
        await run({ create: coll });
      } else {
        await run({
          createIndexes: coll,
          indexes: [
            {
              key,
              name: keyFields.map((f) => `${f}_${key[f] === 'hashed' ? 'hashed' : '1'}`).join('_'),
              ...(unique ? { unique } : {}),
            },
          ],
        });
      }
      if (!info) {
        const again = await run({ listCollections: 1, filter: { name: coll } });
        info = ((again.cursor as Document).firstBatch as Document[])[0];
      }
    }
    const uuid = (info.info as Document).uuid as Binary;
    let initial = [{ min: minKeyDoc(key), max: maxKeyDoc(key), shard: shard.id }];
    if (hashed.length && hashed[0][0] === keyFields[0] && !nonEmpty) {
      // SplitPointsBasedSplitPolicy: numInitialChunks (default 2 per shard) spread over the
      // shards sorted by id, numInitialChunks / numShards contiguous chunks each.
      const shardIds = router.shards.map((s) => s.id).sort();
      const count = numInitialChunks || 2 * shardIds.length;
      const contiguous = Math.max(1, Math.floor(count / shardIds.length));
      const points = hashedSplitPoints(count).map((p) => completeKey({ [keyFields[0]]: p }, key));
      const bounds = [minKeyDoc(key), ...points, maxKeyDoc(key)];
      initial = points.length + 1 > 1 ? [] : initial;
      for (let i = 0; i + 1 < bounds.length; i++) {
        const owner =
          i === 0 && points.length + 1 < shardIds.length
            ? shard.id
            : shardIds[Math.floor(i / contiguous) % shardIds.length];
        initial.push({ min: bounds[i], max: bounds[i + 1], shard: owner });
      }
      ensureCollectionOnShards(
        router,
        nsDb,
        coll,
        shard,
        initial.map((c) => c.shard),
      );
    }
    router.metadata.addCollection(ns, uuid, { ...key }, unique, initial);
    for (const s of router.shards) {
      const c = s.rs.node.catalog.getCollection(nsDb, coll);
      if (c) c.shardKey = { ...key };
    }
    // The primary shard logs the sharding (a `shardCollection` event with expanded events).
    shard.rs.node.oplog.append({
      op: 'shardCollection',
      db: nsDb,
      coll,
      uuid,
      operationDescription: {
        shardKey: { ...key },
        unique,
        numInitialChunks: Long.fromNumber(numInitialChunks),
        presplitHashedZones: body.presplitHashedZones === true,
      },
    });
    return router.local({ collectionsharded: ns, ok: 1 });
  },
};

/**
 * Creates the collection (same uuid, same options and indexes as on the primary shard) on
 * the other shards that receive chunks; the writes are marked fromMigrate, like a migration's.
 */
function ensureCollectionOnShards(
  router: MongosRouter,
  db: string,
  coll: string,
  primary: ShardHandle,
  ids: string[],
): void {
  const source = primary.rs.node.catalog.getCollection(db, coll);
  if (!source) return;
  for (const id of new Set(ids)) {
    if (id === primary.id) continue;
    const catalog = router.metadata.shard(id).rs.node.catalog;
    if (catalog.getCollection(db, coll)) continue;
    const target = catalog.createCollection(db, coll, { ...source.options }, { fromMigrate: true });
    target.uuid = source.uuid;
    for (const idx of source.indexes.slice(1))
      catalog.addIndex(target, { ...idx.spec }, { fromMigrate: true });
  }
}
