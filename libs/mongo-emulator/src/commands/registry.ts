import type { CommandDefinition } from './types';
import { crudCommands } from './crud';
import { ddlCommands } from './ddl';
import { adminCommands } from './admin';
import { changeStreamCommands } from './changes';

/** Every command the emulator knows, by name and alias. Each group lives in its own folder. */
export class CommandRegistry {
  private readonly byName = new Map<string, CommandDefinition>();

  constructor(definitions: CommandDefinition[]) {
    for (const def of definitions) {
      for (const name of [def.name, ...(def.aliases ?? [])]) {
        if (this.byName.has(name)) throw new Error(`command ${name} registered twice`);
        this.byName.set(name, def);
      }
    }
  }

  get(name: string): CommandDefinition | undefined {
    return this.byName.get(name);
  }

  names(): string[] {
    return [...this.byName.keys()];
  }
}

export function defaultCommandRegistry(): CommandRegistry {
  return new CommandRegistry([
    ...crudCommands,
    ...ddlCommands,
    ...adminCommands,
    ...changeStreamCommands,
  ]);
}
