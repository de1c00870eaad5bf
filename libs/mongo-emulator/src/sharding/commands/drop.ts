import type { Document } from 'bson';
import { ErrorCodes } from '../../errors';
import { asNumber } from '../../server/values';
import type { RouterCommandDefinition } from './types';

export const dropCommand: RouterCommandDefinition = {
  name: 'drop',
  async run({ router, body, conn, db }) {
    const ns = `${db}.${String(body.drop)}`;
    const shard = router.primaryShardFor(db, false);
    let reply: Document;
    if (router.metadata.collections.has(ns)) {
      reply = await router.forward(shard, body, conn);
      // Participants drop with fromMigrate: mongos reports one drop event (MongoDB 6.0+).
      if (asNumber(reply.ok) !== 0) {
        for (const other of router.shards) {
          if (other !== shard)
            other.rs.node.catalog.dropNamespace(db, String(body.drop), { fromMigrate: true });
        }
      }
    } else {
      reply = await router.forward(shard, body, conn);
    }
    if (asNumber(reply.ok) !== 0 || reply.code === ErrorCodes.NamespaceNotFound) {
      router.metadata.dropCollection(ns);
    }
    return reply;
  },
};
