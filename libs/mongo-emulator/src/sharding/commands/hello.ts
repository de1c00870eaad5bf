import type { Document } from 'bson';
import { asNumber } from '../../server/values';
import type { RouterCommandDefinition } from './types';

/** Replica-set fields a mongos hello does not have. */
const REPLICA_SET_FIELDS = [
  'hosts',
  'setName',
  'setVersion',
  'secondary',
  'primary',
  'me',
  'electionId',
  'lastWrite',
];

/** mongos hello: a shard's answer without the replica-set fields, plus `msg: "isdbgrid"`. */
export const helloCommand: RouterCommandDefinition = {
  name: 'hello',
  aliases: ['isMaster', 'ismaster'],
  async run({ router, body, conn }) {
    const reply = await router.shards[0].executor.execute(body, conn);
    if (asNumber(reply.ok) === 0) return reply;
    for (const field of REPLICA_SET_FIELDS) delete reply[field];
    const out: Document = {};
    for (const [k, v] of Object.entries(reply)) {
      out[k] = v;
      if (k === 'isWritablePrimary' || k === 'ismaster') out.msg = 'isdbgrid';
    }
    return out;
  },
};
