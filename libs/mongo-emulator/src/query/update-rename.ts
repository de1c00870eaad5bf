import { getPath, hasPath, setPath, unsetPath } from '../bson/paths';
import { CommandError } from '../errors';
import { formatElement } from './format';
import { parseUpdatePath } from './update-paths';
import { existingPrefix, type ApplyContext } from './update-fields';
import { typedPath } from './update-log';

/** Validates a $rename pair; returns the target path (it takes part in conflict checks). */
export function renamePaths(from: string, to: unknown): string[][] {
  if (typeof to !== 'string') {
    throw new CommandError(
      'BadValue',
      `The 'to' field for $rename must be a string: ${formatElement(from, to)}`,
    );
  }
  if (from === to) {
    throw new CommandError(
      'BadValue',
      `The source and target field for $rename must differ: ${formatElement(from, to)}`,
    );
  }
  if (from.split('.').some((p) => p.startsWith('$'))) {
    throw new CommandError('BadValue', `The source field for $rename may not be dynamic: ${from}`);
  }
  if (to.split('.').some((p) => p.startsWith('$'))) {
    throw new CommandError(
      'BadValue',
      `The destination field for $rename may not be dynamic: ${to}`,
    );
  }
  return [parseUpdatePath(to)];
}

/**
 * Moves a field. RenameNode sits on the destination path: it sets the target (logged as
 * created or updated, appended if new) and then removes the source (logged as deleted).
 */
export function applyRename(ctx: ApplyContext, path: string[], arg: unknown): boolean {
  if (!hasPath(ctx.doc, path)) return false;
  const to = (arg as string).split('.');
  rejectArrayHops(ctx, path, 'source');
  rejectArrayHops(ctx, to, 'destination');
  const value = getPath(ctx.doc, path);
  const from = typedPath(ctx.doc, path);
  const toParts = typedPath(ctx.doc, to);
  const existed = hasPath(ctx.doc, to);
  const firstNew = existingPrefix(ctx.doc, to);
  unsetPath(ctx.doc, path);
  setPath(ctx.doc, to, value);
  if (ctx.log) {
    if (existed) ctx.log.logUpdated(toParts, value);
    else ctx.log.logCreated(toParts, firstNew, value);
    ctx.log.logDeleted(from);
  }
  return true;
}

function rejectArrayHops(ctx: ApplyContext, path: string[], which: string): void {
  for (let i = 1; i < path.length; i++) {
    const parent = getPath(ctx.doc, path.slice(0, i));
    if (Array.isArray(parent)) {
      throw new CommandError(
        'BadValue',
        `The ${which} field cannot be an array element, '${path.join('.')}' in doc with ${formatElement(path[i - 1], parent)} has an array field called ${path[i - 1]}`,
      );
    }
  }
}
