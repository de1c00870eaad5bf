import type { Document } from 'bson';
import { isNumeric, toNumber } from '../bson/compare';
import { isDocument } from '../bson/paths';
import { CommandError } from '../errors';

/** What one projected path does. */
export type ProjLeaf =
  | { kind: 'include' }
  | { kind: 'exclude' }
  | { kind: 'positional' }
  | { kind: 'slice'; skip: number | undefined; limit: number }
  | { kind: 'elemMatch'; filter: Document }
  | { kind: 'computed'; expr: unknown };

export interface ProjNode {
  children: Map<string, ProjNode | ProjLeaf>;
}

export interface ParsedProjection {
  mode: 'inclusion' | 'exclusion';
  root: ProjNode;
  excludeId: boolean;
}

const isLeaf = (n: ProjNode | ProjLeaf): n is ProjLeaf => 'kind' in n;

/** Parses a find projection, rejecting mixes of inclusion and exclusion like mongod 7.0. */
export function parseProjection(spec: Document): ParsedProjection {
  const root: ProjNode = { children: new Map() };
  let mode: 'inclusion' | 'exclusion' | undefined;
  let excludeId = false;
  let includeId = false;
  const setMode = (m: 'inclusion' | 'exclusion', field: string) => {
    if (mode && mode !== m) {
      throw m === 'exclusion'
        ? new CommandError(31254, `Cannot do exclusion on field ${field} in inclusion projection`)
        : new CommandError(31253, `Cannot do inclusion on field ${field} in exclusion projection`);
    }
    mode = m;
  };
  for (const key of Object.keys(spec)) {
    const leaf = parseLeaf(key, spec[key]);
    if (leaf === undefined) continue;
    if (key === '_id' && (leaf.kind === 'include' || leaf.kind === 'exclude')) {
      excludeId = leaf.kind === 'exclude';
      includeId = leaf.kind === 'include';
      continue;
    }
    if (leaf.kind === 'exclude') setMode('exclusion', key);
    else if (leaf.kind !== 'slice') setMode('inclusion', key);
    const path = leaf.kind === 'positional' ? key.slice(0, -2) : key;
    insert(root, path.split('.'), leaf, key);
  }
  // {_id: 1} alone is an inclusion projection (only _id is returned), as in mongod.
  const finalMode = mode ?? (includeId ? 'inclusion' : 'exclusion');
  // _id is projected by default; an explicit {_id: 0} removes it in either mode.
  if (excludeId) root.children.set('_id', { kind: 'exclude' });
  else if (finalMode === 'inclusion') root.children.set('_id', { kind: 'include' });
  return { mode: finalMode, root, excludeId };
}

function parseLeaf(key: string, value: unknown): ProjLeaf | undefined {
  if (key.endsWith('.$')) return { kind: 'positional' };
  if (typeof value === 'boolean' || isNumeric(value)) {
    return (typeof value === 'boolean' ? value : toNumber(value) !== 0)
      ? { kind: 'include' }
      : { kind: 'exclude' };
  }
  if (isDocument(value)) {
    const first = Object.keys(value)[0];
    if (first === '$slice') return parseSlice(value.$slice);
    if (first === '$elemMatch') {
      if (!isDocument(value.$elemMatch))
        throw new CommandError('BadValue', 'elemMatch: Invalid argument, object required.');
      if (key.includes('.'))
        throw new CommandError('BadValue', 'Cannot use $elemMatch projection on a nested field.');
      return { kind: 'elemMatch', filter: value.$elemMatch };
    }
    if (first === '$meta') return undefined; // text/search scores do not exist here
  }
  return { kind: 'computed', expr: value };
}

function parseSlice(arg: unknown): ProjLeaf {
  const int = (v: unknown) => (isNumeric(v) ? Math.trunc(toNumber(v)) : NaN);
  if (Array.isArray(arg)) {
    if (arg.length !== 2)
      throw new CommandError(28724, 'First argument to $slice must be an array');
    const [skip, limit] = [int(arg[0]), int(arg[1])];
    if (Number.isNaN(skip) || Number.isNaN(limit))
      throw new CommandError(28724, 'First argument to $slice must be an array');
    if (limit <= 0)
      throw new CommandError(
        28724,
        `Invalid $slice syntax. The given syntax did not match the find() syntax because :: The limit must be positive`,
      );
    return { kind: 'slice', skip, limit };
  }
  const n = int(arg);
  if (Number.isNaN(n)) throw new CommandError(28724, 'Invalid $slice syntax');
  return { kind: 'slice', skip: undefined, limit: n };
}

function insert(root: ProjNode, parts: string[], leaf: ProjLeaf, key: string): void {
  let node = root;
  for (let i = 0; i < parts.length - 1; i++) {
    const child = node.children.get(parts[i]);
    if (child && isLeaf(child)) throw collision(key, parts.slice(i + 1).join('.'));
    if (!child) node.children.set(parts[i], { children: new Map() });
    node = node.children.get(parts[i]) as ProjNode;
  }
  const last = parts[parts.length - 1];
  if (node.children.has(last)) throw collision(key, last);
  node.children.set(last, leaf);
}

function collision(key: string, remaining: string): CommandError {
  return new CommandError(31250, `Path collision at ${key} remaining portion ${remaining}`);
}

export { isLeaf };
