import type { Document } from 'bson';
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
