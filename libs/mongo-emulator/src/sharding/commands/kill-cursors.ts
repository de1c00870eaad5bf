import { Long } from 'bson';
import type { RouterCommandDefinition } from './types';

export const killCursorsCommand: RouterCommandDefinition = {
  name: 'killCursors',
  async run({ router, body, conn }) {
    const ids = Array.isArray(body.cursors) ? (body.cursors as unknown[]) : undefined;
    if (!ids) return router.forward(router.shards[0], body, conn);
    const killed: Long[] = [];
    const notFound: Long[] = [];
    for (const id of ids) {
      const stream = id instanceof Long ? router.streams.get(id.toString()) : undefined;
      if (stream && id instanceof Long) {
        router.streams.delete(id.toString());
        await stream.kill(conn);
        killed.push(id);
        continue;
      }
      if (id instanceof Long && router.merged.delete(id.toString())) {
        killed.push(id);
        continue;
      }
      const entry = id instanceof Long ? router.cursors.get(id.toString()) : undefined;
      if (!entry || !(id instanceof Long)) {
        if (id instanceof Long) notFound.push(id);
        continue;
      }
      router.cursors.delete(id.toString());
      await entry.shard.executor.execute({ ...body, cursors: [entry.remoteId] }, conn);
      killed.push(id);
    }
    return router.local({
      cursorsKilled: killed,
      cursorsNotFound: notFound,
      cursorsAlive: [],
      cursorsUnknown: [],
      ok: 1,
    });
  },
};
