import { uuidHex, type ShardedCollectionSnapshot, type ShardingSnapshot } from '@sync/engine';
import type { Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { EXACT_BSON } from './exact-bson';

/** A mongos answers `hello` with `msg: "isdbgrid"`. */
export async function isMongos(client: MongoClient): Promise<boolean> {
  const hello = await client.db('admin').command({ hello: 1 });
  return hello.msg === 'isdbgrid';
}

/**
 * `balancerStatus.mode` of a sharded cluster: `'full'`, or `'off'` for any mode in which the
 * balancer moves no chunk (`off`, 4.x's `autoSplitOnly`); null for a replica set.
 */
export async function balancerMode(client: MongoClient): Promise<'full' | 'off' | null> {
  if (!(await isMongos(client))) return null;
  const status = await client.db('admin').command({ balancerStatus: 1 });
  return status.mode === 'full' ? 'full' : 'off';
}

/** balancerStart / balancerStop on a sharded cluster; nothing on a replica set. */
export async function setBalancer(client: MongoClient, enabled: boolean): Promise<void> {
  if (!(await isMongos(client))) return;
  await client.db('admin').command(enabled ? { balancerStart: 1 } : { balancerStop: 1 });
}

/**
 * The config server's routing metadata: shards, database primaries, sharded collections (not
 * dropped; 8.0's tracked unsplittable collections too, whose single chunk names their shard)
 * and their chunks. Chunk bounds are decoded without promotion so hashed bounds stay Longs and
 * every value keeps its BSON type. The reads are not one atomic snapshot: a migration between
 * them can make chunks newer than the collection list, which is why callers stop the balancer.
 * A replica set gives an empty snapshot.
 */
export async function readShardingSnapshot(client: MongoClient): Promise<ShardingSnapshot> {
  if (!(await isMongos(client))) {
    return { shards: [], databases: [], collections: [], balancer: { mode: 'off' } };
  }
  const admin = client.db('admin');
  const config = client.db('config');
  const listed = await admin.command({ listShards: 1 });
  const shards = ((listed.shards as Array<{ _id: string }>) ?? []).map((s) => String(s._id));
  const databases = (await config.collection('databases').find({}).toArray()).map((d) => ({
    name: String(d._id),
    primary: String(d.primary),
  }));
  const collections = new Map<string, ShardedCollectionSnapshot>();
  const entries = await config
    .collection('collections')
    .find({ dropped: { $ne: true } }, { promoteValues: true })
    .toArray();
  for (const entry of entries) {
    const uuid = uuidHex(entry.uuid);
    if (uuid === undefined) continue;
    collections.set(uuid, {
      ns: String(entry._id),
      uuid,
      key: entry.key as Document,
      unique: entry.unique === true,
      chunks: [],
    });
  }
  if (collections.size > 0) {
    const chunks = config
      .collection('chunks')
      .find(
        { uuid: { $in: entries.map((e) => e.uuid) } },
        { ...EXACT_BSON, projection: { _id: 0, uuid: 1, min: 1, max: 1, shard: 1 } },
      );
    for await (const chunk of chunks) {
      collections.get(uuidHex(chunk.uuid) ?? '')?.chunks.push({
        min: chunk.min as Document,
        max: chunk.max as Document,
        shard: String(chunk.shard),
      });
    }
  }
  const status = await admin.command({ balancerStatus: 1 });
  return {
    shards: shards.sort(),
    databases,
    collections: [...collections.values()],
    balancer: { mode: String(status.mode) },
  };
}
