import type { CommandDefinition } from '../types';
import { helloCommands } from './hello';
import { authCommands } from './auth';
import { serverInfoCommands } from './server-info';
import { controlCommands } from './control';

/** Handshake, auth, diagnostics and server-control commands (the wire/server side of mongod). */
export const adminCommands: CommandDefinition[] = [
  ...helloCommands,
  ...authCommands,
  ...serverInfoCommands,
  ...controlCommands,
];
