import { Timestamp, type Document } from 'bson';
import { compareTimestamps } from '../../clock/cluster-clock';
import { asNumber } from '../../server/values';
import type { RouterCommandDefinition } from './types';

/** Commands mongos sends to every shard (sessions, write blocking): the first reply answers. */
const BROADCAST = [
  'endSessions',
  'killSessions',
  'killAllSessions',
  'refreshSessions',
  'setUserWriteBlockMode',
];

export const broadcastCommands: RouterCommandDefinition[] = BROADCAST.map((name) => ({
  name,
  async run({ router, body, conn }) {
    // The shards abort the ended sessions' transactions; the router forgets them.
    if (name === 'endSessions' && Array.isArray(body.endSessions))
      router.transactions.endSessions(body.endSessions as unknown[]);
    let first: Document | undefined;
    for (const shard of router.shards) {
      const reply = await shard.executor.execute(body, conn);
      if (asNumber(reply.ok) === 0) return reply;
      first ??= reply;
    }
    return first!;
  },
}));

/**
 * `appendOplogNote` through mongos (6.0+): a no-op on every shard's oplog, so a change stream
 * merged over the shards passes the note whichever shard it waits on. The reply's operationTime
 * is the latest note's.
 */
export const appendOplogNoteCommand: RouterCommandDefinition = {
  name: 'appendOplogNote',
  async run({ router, body, conn }) {
    let latest: Timestamp | undefined;
    for (const shard of router.shards) {
      const reply = await shard.executor.execute(body, conn);
      if (asNumber(reply.ok) === 0) return reply;
      const time = reply.operationTime;
      if (time instanceof Timestamp && (!latest || compareTimestamps(time, latest) > 0))
        latest = time;
    }
    return router.local({}, latest);
  },
};
