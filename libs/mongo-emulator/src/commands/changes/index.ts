import type { CommandDefinition } from '../types';

export const changeStreamCommands: CommandDefinition[] = [];
