/**
 * Built-in roles as privilege sets, following mongod's builtin_roles.cpp (MongoDB 7.0):
 * a privilege is a set of actions on a resource (one database, any "normal" database —
 * everything but `local` and `config` —, any database, or the cluster).
 * Only the actions the emulator's commands check are modelled.
 */
export type Resource = { db: string } | { anyNormal: true } | { anyDb: true } | { cluster: true };

export interface Privilege {
  resource: Resource;
  actions: ReadonlySet<string>;
}

const set = (...actions: string[]): ReadonlySet<string> => new Set(actions);
const union = (...sets: ReadonlySet<string>[]): ReadonlySet<string> =>
  new Set(sets.flatMap((s) => [...s]));

const READ = set(
  'changeStream',
  'collStats',
  'dbHash',
  'dbStats',
  'find',
  'killCursors',
  'listCollections',
  'listIndexes',
);
const READ_WRITE = union(
  READ,
  set(
    'convertToCapped',
    'createCollection',
    'createIndex',
    'dropCollection',
    'dropIndex',
    'insert',
    'remove',
  ),
  set('renameCollectionSameDB', 'update'),
);
const DB_ADMIN = set(
  'bypassDocumentValidation',
  'collMod',
  'collStats',
  'compact',
  'convertToCapped',
  'createCollection',
  'dbStats',
  'dropCollection',
  'dropDatabase',
  'dropIndex',
  'createIndex',
  'listCollections',
  'listIndexes',
  'renameCollectionSameDB',
  'validate',
);
const USER_ADMIN = set(
  'changePassword',
  'createUser',
  'createRole',
  'dropUser',
  'dropRole',
  'grantRole',
  'revokeRole',
  'viewUser',
  'viewRole',
);
const CLUSTER_MONITOR = set(
  'connPoolStats',
  'getCmdLineOpts',
  'getDefaultRWConcern',
  'getLog',
  'getParameter',
  'hostInfo',
  'listDatabases',
  'listSessions',
  'netstat',
  'replSetGetConfig',
  'replSetGetStatus',
  'serverStatus',
  'top',
  'useUUID',
  'inprog',
);
const HOST_MANAGER = set(
  'dropConnections',
  'fsync',
  'killAnyCursor',
  'killAnySession',
  'killop',
  'logRotate',
  'setParameter',
  'shutdown',
);
const CLUSTER_MANAGER = set(
  'appendOplogNote',
  'replSetConfigure',
  'replSetGetConfig',
  'replSetGetStatus',
  'replSetStateChange',
  'listSessions',
  'getDefaultRWConcern',
  'setDefaultRWConcern',
  'setFeatureCompatibilityVersion',
);
const RESTORE_DATA = set(
  'bypassDocumentValidation',
  'collMod',
  'convertToCapped',
  'createCollection',
  'createIndex',
  'dropCollection',
  'insert',
);
/** What mongod's `restore` grants on the cluster: setting and bypassing write blocking is for C2C sync. */
const RESTORE_CLUSTER = set(
  'getParameter',
  'forceUUID',
  'useUUID',
  'bypassWriteBlockingMode',
  'setUserWriteBlockMode',
  'applyOps',
);
const BACKUP_CLUSTER = set(
  'appendOplogNote',
  'serverStatus',
  'setUserWriteBlockMode',
  'getParameter',
  'listDatabases',
  'useUUID',
);

const NORMAL = { anyNormal: true } as const;
const ANY = { anyDb: true } as const;
const CLUSTER = { cluster: true } as const;
const on = (resource: Resource, actions: ReadonlySet<string>): Privilege => ({ resource, actions });

const clusterMonitor = (): Privilege[] => [
  on(CLUSTER, CLUSTER_MONITOR),
  on(NORMAL, set('collStats', 'dbStats', 'indexStats')),
  on({ db: 'config' }, union(READ, set('indexStats'))),
  on({ db: 'local' }, union(READ, set('indexStats'))),
];
const hostManager = (): Privilege[] => [on(CLUSTER, HOST_MANAGER), on(NORMAL, set('killCursors'))];
const clusterManager = (): Privilege[] => [
  on(CLUSTER, CLUSTER_MANAGER),
  on({ db: 'config' }, union(READ, set('insert', 'update', 'remove'))),
  on({ db: 'local' }, set('insert', 'update', 'remove')),
];
const clusterAdmin = (): Privilege[] => [
  ...clusterMonitor(),
  ...hostManager(),
  ...clusterManager(),
  on(NORMAL, set('dropDatabase')),
  // Emulator-specific: admin commands without a modelled action are open to cluster admins.
  on(CLUSTER, set('anyAdminCommand')),
];
const backup = (): Privilege[] => [
  on(CLUSTER, BACKUP_CLUSTER),
  on(ANY, set('collStats', 'listCollections', 'listIndexes')),
  on(NORMAL, set('find')),
  on({ db: 'config' }, set('find')),
  on({ db: 'local' }, set('find')),
];
const restore = (): Privilege[] => [
  on(NORMAL, union(RESTORE_DATA, USER_ADMIN)),
  on({ db: 'config' }, RESTORE_DATA),
  on({ db: 'local' }, RESTORE_DATA),
  on(ANY, set('listCollections')),
  on(CLUSTER, RESTORE_CLUSTER),
];
const readWriteAny = (): Privilege[] => [on(NORMAL, READ_WRITE), on(CLUSTER, set('listDatabases'))];
const dbAdminAny = (): Privilege[] => [
  on(NORMAL, DB_ADMIN),
  on(CLUSTER, set('listDatabases', 'applyOps')),
];
const userAdminAny = (): Privilege[] => [
  on(NORMAL, USER_ADMIN),
  on({ db: 'config' }, USER_ADMIN),
  on({ db: 'local' }, USER_ADMIN),
  on(CLUSTER, set('listDatabases', 'invalidateUserCache', 'viewUser')),
];

/** Roles that exist only on `admin` (mongod rejects granting them on another database). */
const ADMIN_ONLY_ROLES = new Set([
  'readAnyDatabase',
  'readWriteAnyDatabase',
  'dbAdminAnyDatabase',
  'userAdminAnyDatabase',
  'clusterAdmin',
  'clusterManager',
  'clusterMonitor',
  'hostManager',
  'backup',
  'restore',
  'root',
  '__system',
]);

const ROLE_PRIVILEGES: Record<string, (db: string) => Privilege[]> = {
  read: (db) => [on({ db }, READ)],
  readWrite: (db) => [on({ db }, READ_WRITE)],
  dbAdmin: (db) => [on({ db }, DB_ADMIN)],
  userAdmin: (db) => [on({ db }, USER_ADMIN)],
  dbOwner: (db) => [on({ db }, union(READ_WRITE, DB_ADMIN, USER_ADMIN))],
  readAnyDatabase: () => [on(NORMAL, READ), on(CLUSTER, set('listDatabases'))],
  readWriteAnyDatabase: readWriteAny,
  dbAdminAnyDatabase: dbAdminAny,
  userAdminAnyDatabase: userAdminAny,
  clusterMonitor,
  hostManager,
  clusterManager,
  clusterAdmin,
  backup,
  restore,
  root: () => [
    ...clusterAdmin(),
    ...userAdminAny(),
    ...dbAdminAny(),
    ...readWriteAny(),
    ...backup(),
    ...restore(),
    on(ANY, set('validate')),
  ],
  // The internal role: every action on every resource.
  __system: () => [on(ANY, set('*')), on(CLUSTER, set('*'))],
};

export const BUILTIN_ROLES: ReadonlySet<string> = new Set(Object.keys(ROLE_PRIVILEGES));

export function isAdminOnlyRole(role: string): boolean {
  return ADMIN_ONLY_ROLES.has(role);
}

export function privilegesOf(role: { role: string; db: string }): Privilege[] {
  const make = ROLE_PRIVILEGES[role.role];
  if (!make) return [];
  if (ADMIN_ONLY_ROLES.has(role.role) && role.db !== 'admin') return [];
  return make(role.db);
}

/** `target`: a database name, '*' for "every normal database" (cluster-wide change streams), or 'cluster'. */
export type PrivilegeTarget = string;

function covers(resource: Resource, target: PrivilegeTarget): boolean {
  if ('cluster' in resource) return target === 'cluster';
  if (target === 'cluster') return false;
  if ('anyDb' in resource) return true;
  if ('anyNormal' in resource) return target === '*' || (target !== 'local' && target !== 'config');
  return resource.db === target;
}

/** True when one of the roles grants `action` on `target`. */
export function rolesAllow(
  roles: Array<{ role: string; db: string }>,
  target: PrivilegeTarget,
  action: string,
): boolean {
  for (const role of roles) {
    for (const p of privilegesOf(role)) {
      if (covers(p.resource, target) && (p.actions.has(action) || p.actions.has('*'))) return true;
    }
  }
  return false;
}
