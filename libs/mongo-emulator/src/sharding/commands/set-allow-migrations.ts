import { CommandError } from '../../errors';
import type { RouterCommandDefinition } from './types';

export const setAllowMigrationsCommand: RouterCommandDefinition = {
  name: 'setAllowMigrations',
  run({ router, body, conn, db, name }) {
    router.requireAdmin(name, db);
    router.checkAuth(conn, name, db, [{ target: 'cluster', action: 'anyAdminCommand' }]);
    const entry = router.shardedCollection(body, name);
    if (typeof body.allowMigrations !== 'boolean')
      throw new CommandError(
        'TypeMismatch',
        `BSON field 'setAllowMigrations.allowMigrations' is missing but a required field`,
      );
    if (body.allowMigrations) delete entry.permitMigrations;
    else entry.permitMigrations = false;
    return router.local({ ok: 1 });
  },
};
