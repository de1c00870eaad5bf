import type { Document } from 'bson';
import { asNumber } from '../../server/values';
import type { RouterCommandDefinition } from './types';

export const dropDatabaseCommand: RouterCommandDefinition = {
  name: 'dropDatabase',
  async run({ router, body, conn, db }) {
    const entry = router.metadata.databases.get(db);
    const sharded = [...router.metadata.collections.keys()].some((ns) => ns.startsWith(`${db}.`));
    let reply: Document;
    if (sharded) {
      // The primary shard drops as the user asked; the others drop as participants with
      // fromMigrate, so a change stream through mongos reports the drops once (MongoDB 6.0+).
      const primary = entry ? router.metadata.shard(entry.primary) : router.shards[0]!;
      reply = await router.forward(primary, body, conn);
      if (asNumber(reply.ok) !== 0) {
        for (const other of router.shards) {
          if (other !== primary) other.rs.node.catalog.dropDatabase(db, { fromMigrate: true });
        }
      }
    } else {
      reply = await router.forward(
        entry ? router.metadata.shard(entry.primary) : router.shards[0],
        body,
        conn,
      );
    }
    if (asNumber(reply.ok) !== 0) router.metadata.dropDatabase(db);
    return reply;
  },
};
