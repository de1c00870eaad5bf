import { CommandError } from '../../errors';
import { writeOptions } from '../crud/args';
import type { CommandDefinition } from '../types';

export const dropDatabaseCommand: CommandDefinition = {
  name: 'dropDatabase',
  access: 'write',
  userWrite: true,
  run(ctx) {
    if (ctx.db === 'admin' || ctx.db === 'config' || ctx.db === 'local') {
      throw new CommandError(
        'IllegalOperation',
        `Dropping the '${ctx.db}' database is prohibited.`,
      );
    }
    ctx.node.catalog.dropDatabase(ctx.db, writeOptions(ctx));
    return { ok: 1 };
  },
};
