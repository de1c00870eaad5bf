import { Long } from 'bson';
import type { RouterCommandDefinition } from './types';

/** balancerStart / balancerStop / balancerStatus: the balancer mode is a flag (no rounds run). */
export const balancerCommands: RouterCommandDefinition[] = [
  'balancerStart',
  'balancerStop',
  'balancerStatus',
].map((command) => ({
  name: command,
  run({ router, conn, db, name }) {
    router.requireAdmin(name, db);
    router.checkAuth(conn, name, db, [{ target: 'cluster', action: 'anyAdminCommand' }]);
    if (name !== 'balancerStatus')
      router.metadata.balancerMode = name === 'balancerStart' ? 'full' : 'off';
    return router.local(
      name === 'balancerStatus'
        ? {
            mode: router.metadata.balancerMode,
            inBalancerRound: false,
            numBalancerRounds: Long.ZERO,
            ok: 1,
          }
        : { ok: 1 },
    );
  },
}));
