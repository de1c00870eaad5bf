import { CommandError } from '../../errors';
import { firstKey } from './util';
import type { RouterCommandDefinition } from './types';

export const enableShardingCommand: RouterCommandDefinition = {
  name: 'enableSharding',
  aliases: ['enablesharding'],
  run({ router, body, conn, db }) {
    router.requireAdmin('enableSharding', db);
    router.checkAuth(conn, 'enableSharding', db, [
      { target: 'cluster', action: 'anyAdminCommand' },
    ]);
    const target = body[firstKey(body)];
    if (typeof target !== 'string' || target === '' || /[/\\. "$\0]/.test(target))
      throw new CommandError('InvalidNamespace', `invalid db name specified: ${String(target)}`);
    if (target === 'admin' || target === 'local')
      throw new CommandError('InvalidOptions', `can't shard ${target} database`);
    const entry = router.metadata.database(target, true)!;
    if (typeof body.primaryShard === 'string' && body.primaryShard !== entry.primary) {
      throw new CommandError(
        'NamespaceExists',
        `database already created on a primary which is different from ${body.primaryShard}`,
      );
    }
    return router.local({ ok: 1 });
  },
};
