import type { CommandDefinition } from '../types';
import { aggregateCommand } from './aggregate';
import { countCommand } from './count';
import { deleteCommand } from './delete';
import { distinctCommand } from './distinct';
import { findCommand } from './find';
import { findAndModifyCommand } from './find-and-modify';
import { getMoreCommand } from './get-more';
import { insertCommand } from './insert';
import { killCursorsCommand } from './kill-cursors';
import { updateCommand } from './update';

export const crudCommands: CommandDefinition[] = [
  insertCommand,
  updateCommand,
  deleteCommand,
  findAndModifyCommand,
  findCommand,
  getMoreCommand,
  killCursorsCommand,
  countCommand,
  distinctCommand,
  aggregateCommand,
];
