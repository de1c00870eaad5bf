import type { RouterCommandDefinition } from './types';

export const isDbGridCommand: RouterCommandDefinition = {
  name: 'isdbgrid',
  run: ({ router }) => router.local({ isdbgrid: 1, hostname: router.host, ok: 1 }),
};
