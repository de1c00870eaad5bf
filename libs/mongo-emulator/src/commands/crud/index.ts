import type { CommandDefinition } from '../types';

export const crudCommands: CommandDefinition[] = [];
