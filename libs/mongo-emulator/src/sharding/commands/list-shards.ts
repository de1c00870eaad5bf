import type { RouterCommandDefinition } from './types';

export const listShardsCommand: RouterCommandDefinition = {
  name: 'listShards',
  run({ router, conn, db, name }) {
    router.requireAdmin(name, db);
    router.checkAuth(conn, name, db, [{ target: 'cluster', action: 'anyAdminCommand' }]);
    return router.local({
      shards: router.shards.map((s) => router.metadata.shardDocument(s)),
      ok: 1,
    });
  },
};
