import type { RouterCommandDefinition } from './types';

/** Commands answered by one shard on the router's behalf (server info, auth, sessions). */
const FORWARD_TO_FIRST_SHARD = [
  'saslStart',
  'saslContinue',
  'logout',
  'connectionStatus',
  'ping',
  'buildInfo',
  'buildinfo',
  'getParameter',
  'whatsmyuri',
  'hostInfo',
  'getCmdLineOpts',
  'serverStatus',
  'listCommands',
  'getDefaultRWConcern',
  'startSession',
  'configureFailPoint',
  'emulatorStats',
];

export const forwardedToFirstShardCommands: RouterCommandDefinition[] = FORWARD_TO_FIRST_SHARD.map(
  (name) => ({
    name,
    run: ({ router, body, conn }) => router.forward(router.shards[0], body, conn),
  }),
);
