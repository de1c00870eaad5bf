import type { ClusterDescription } from '@sync/engine';
import type { MongoClient } from 'mongodb';

/**
 * Identity and shape of a cluster from `hello` (replica set vs mongos) and `listShards`.
 * The fingerprint uses the replica set's own member list (not the seed list of the connection
 * string), so reconnecting through another member or alias still matches.
 */
export async function inspectCluster(
  client: MongoClient,
  displayHost: string,
): Promise<ClusterDescription> {
  const admin = client.db('admin');
  const hello = await admin.command({ hello: 1 });
  if (hello.msg === 'isdbgrid') {
    const shards = await admin.command({ listShards: 1 });
    const ids = ((shards.shards as Array<{ _id: string }>) ?? []).map((s) => String(s._id)).sort();
    return {
      kind: 'sharded',
      shardCount: ids.length,
      displayHost,
      fingerprint: { kind: 'sharded', setName: null, members: ids },
    };
  }
  const members = [...((hello.hosts as string[]) ?? []), ...((hello.passives as string[]) ?? [])];
  if (members.length === 0 && typeof hello.me === 'string') members.push(hello.me);
  return {
    kind: 'replicaSet',
    shardCount: 1,
    displayHost,
    fingerprint: {
      kind: 'replicaSet',
      setName: typeof hello.setName === 'string' ? hello.setName : null,
      members: members.sort(),
    },
  };
}
