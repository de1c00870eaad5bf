import { CommandError } from '../../errors';
import type { RouterCommandDefinition } from './types';

/** Replica-set commands a mongos does not have. */
const NOT_ON_MONGOS = [
  'replSetGetStatus',
  'replSetGetConfig',
  'replSetInitiate',
  'replSetReconfig',
  'replSetStepDown',
];

export const notOnMongosCommands: RouterCommandDefinition[] = NOT_ON_MONGOS.map((name) => ({
  name,
  run() {
    throw new CommandError('CommandNotFound', `no such command: '${name}'`);
  },
}));
