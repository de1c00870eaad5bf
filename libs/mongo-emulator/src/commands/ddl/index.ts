import type { CommandDefinition } from '../types';

export const ddlCommands: CommandDefinition[] = [];
