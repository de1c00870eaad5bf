import type { CommandDefinition } from '../types';

export const adminCommands: CommandDefinition[] = [];
