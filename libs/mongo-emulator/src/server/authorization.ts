import type { Document } from 'bson';
import { rolesAllow } from '../auth/roles';
import type { AuthenticatedUser, CommandDefinition } from '../commands/types';

export interface RequiredPrivilege {
  /** A database name, '*' (every normal database) or 'cluster'. */
  target: string;
  action: string;
}

/** Action checked by write commands (mongod checks the specific action, e.g. `remove` for delete). */
const WRITE_ACTIONS: Record<string, string[]> = {
  insert: ['insert'],
  update: ['update'],
  delete: ['remove'],
  findAndModify: ['find', 'update'],
  create: ['createCollection'],
  createIndexes: ['createIndex'],
  drop: ['dropCollection'],
  dropIndexes: ['dropIndex'],
  collMod: ['collMod'],
  dropDatabase: ['dropDatabase'],
  convertToCapped: ['convertToCapped'],
  cloneCollectionAsCapped: ['insert', 'createCollection'],
};

const READ_ACTIONS: Record<string, string[]> = {
  listCollections: ['listCollections'],
  listIndexes: ['listIndexes'],
  collStats: ['collStats'],
  dbStats: ['dbStats'],
  killCursors: ['killCursors'],
  dbHash: ['dbHash'],
};

/** Cluster actions of admin commands; unlisted admin commands need `anyAdminCommand` (clusterAdmin, root). */
const CLUSTER_ACTIONS: Record<string, string | null> = {
  setUserWriteBlockMode: 'setUserWriteBlockMode',
  serverStatus: 'serverStatus',
  replSetGetStatus: 'replSetGetStatus',
  replSetGetConfig: 'replSetGetConfig',
  getCmdLineOpts: 'getCmdLineOpts',
  hostInfo: 'hostInfo',
  getParameter: 'getParameter',
  setParameter: 'setParameter',
  getDefaultRWConcern: 'getDefaultRWConcern',
  setDefaultRWConcern: 'setDefaultRWConcern',
  appendOplogNote: 'appendOplogNote',
  currentOp: 'inprog',
  killOp: 'killop',
  // Open to every authenticated user: mongod filters the answer (authorizedDatabases) or
  // only lets users touch their own sessions, or (test-only fail points) checks nothing.
  listDatabases: null,
  killSessions: null,
  endSessions: null,
  configureFailPoint: null,
};

function namespaceDb(ns: unknown): string | undefined {
  if (typeof ns !== 'string') return undefined;
  const dot = ns.indexOf('.');
  return dot > 0 ? ns.slice(0, dot) : undefined;
}

/** Databases a command writes to (write blocking and authorization). */
export function targetDatabases(def: CommandDefinition, db: string, cmd: Document): string[] {
  if (def.name === 'renameCollection') {
    return [namespaceDb(cmd.renameCollection), namespaceDb(cmd.to)].filter((d): d is string => !!d);
  }
  return [db];
}

function isClusterWideChangeStream(def: CommandDefinition, db: string, cmd: Document): boolean {
  if (def.name !== 'aggregate' || !Array.isArray(cmd.pipeline)) return false;
  const first = cmd.pipeline[0] as Document | undefined;
  const cs = first?.$changeStream as Document | undefined;
  return (
    !!cs &&
    (cs.allChangesForCluster === true ||
      (db === 'admin' && cmd.aggregate !== undefined && typeof cmd.aggregate !== 'string'))
  );
}

export function requiredPrivileges(
  def: CommandDefinition,
  db: string,
  cmd: Document,
): RequiredPrivilege[] {
  switch (def.access) {
    case 'none':
    case 'authenticated':
      return [];
    case 'read': {
      const actions = READ_ACTIONS[def.name] ?? ['find'];
      const first = Array.isArray(cmd.pipeline)
        ? (cmd.pipeline[0] as Document | undefined)
        : undefined;
      if (first?.$changeStream) {
        const target = isClusterWideChangeStream(def, db, cmd) ? '*' : db;
        return ['find', 'changeStream'].map((action) => ({ target, action }));
      }
      return actions.map((action) => ({ target: db, action }));
    }
    case 'write': {
      if (def.name === 'renameCollection') {
        const [from, to] = targetDatabases(def, db, cmd);
        if (from && from === to) return [{ target: from, action: 'renameCollectionSameDB' }];
        return [
          ...(from ? ['find', 'dropCollection'].map((action) => ({ target: from, action })) : []),
          ...(to
            ? ['insert', 'createIndex', 'createCollection'].map((action) => ({
                target: to,
                action,
              }))
            : []),
        ];
      }
      const actions = WRITE_ACTIONS[def.name] ?? ['insert', 'update', 'remove'];
      return actions.map((action) => ({ target: db, action }));
    }
    case 'admin': {
      const action = Object.prototype.hasOwnProperty.call(CLUSTER_ACTIONS, def.name)
        ? CLUSTER_ACTIONS[def.name]
        : 'anyAdminCommand';
      return action ? [{ target: 'cluster', action }] : [];
    }
  }
}

function allRoles(users: AuthenticatedUser[]): Array<{ role: string; db: string }> {
  return users.flatMap((u) => u.roles);
}

export function isAuthorized(users: AuthenticatedUser[], required: RequiredPrivilege[]): boolean {
  const roles = allRoles(users);
  return required.every((p) => rolesAllow(roles, p.target, p.action));
}

/** mongod's WriteBlockBypass: the `bypassWriteBlockingMode` cluster privilege (root, restore, __system). */
export function mayBypassWriteBlocking(users: AuthenticatedUser[]): boolean {
  return rolesAllow(allRoles(users), 'cluster', 'bypassWriteBlockingMode');
}
