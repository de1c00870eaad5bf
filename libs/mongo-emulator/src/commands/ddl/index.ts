import type { CommandDefinition } from '../types';
import { collModCommand } from './coll-mod';
import { createCommand } from './create';
import { createIndexesCommand } from './create-indexes';
import { dropCommand } from './drop';
import { dropDatabaseCommand } from './drop-database';
import { dropIndexesCommand } from './drop-indexes';
import { listCollectionsCommand } from './list-collections';
import { listDatabasesCommand } from './list-databases';
import { listIndexesCommand } from './list-indexes';
import { renameCollectionCommand } from './rename-collection';
import { collStatsCommand, dbStatsCommand } from './stats';

export const ddlCommands: CommandDefinition[] = [
  createCommand,
  dropCommand,
  dropDatabaseCommand,
  renameCollectionCommand,
  collModCommand,
  createIndexesCommand,
  dropIndexesCommand,
  listIndexesCommand,
  listCollectionsCommand,
  listDatabasesCommand,
  collStatsCommand,
  dbStatsCommand,
];
