import { CommandError } from '../../errors';
import type { RouterCommandDefinition } from './types';

export const movePrimaryCommand: RouterCommandDefinition = {
  name: 'movePrimary',
  run({ name }) {
    throw new CommandError(
      'CommandNotSupported',
      `${name} is not supported by the MongoDB emulator's sharded topology yet`,
    );
  },
};
