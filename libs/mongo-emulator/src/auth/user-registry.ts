import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { saslprep } from '@mongodb-js/saslprep';
import { BUILTIN_ROLES, isAdminOnlyRole } from './roles';

/** A user created at launch: `name:password:role[,role...]` on the CLI. */
export interface UserSpec {
  user: string;
  password: string;
  /**
   * Built-in role names, granted on `admin` (e.g. root, readWriteAnyDatabase, restore).
   * Emulator extension: `role@db` grants a database role (read, readWrite, dbAdmin, dbOwner,
   * userAdmin) on another database.
   */
  roles: string[];
}

export type ScramMechanism = 'SCRAM-SHA-1' | 'SCRAM-SHA-256';
export const SCRAM_MECHANISMS: readonly ScramMechanism[] = ['SCRAM-SHA-1', 'SCRAM-SHA-256'];

/** What mongod stores in admin.system.users `credentials.<mechanism>`. */
export interface ScramCredential {
  iterationCount: number;
  salt: Buffer;
  storedKey: Buffer;
  serverKey: Buffer;
}

export interface StoredUser {
  user: string;
  db: string;
  roles: Array<{ role: string; db: string }>;
  credentials: Record<ScramMechanism, ScramCredential>;
}

/** mongod's defaults (scramIterationCount / scramSHA256IterationCount) and salt lengths. */
const SCRAM_PARAMS: Record<
  ScramMechanism,
  { hash: 'sha1' | 'sha256'; iterations: number; saltLength: number; keyLength: number }
> = {
  'SCRAM-SHA-1': { hash: 'sha1', iterations: 10000, saltLength: 16, keyLength: 20 },
  'SCRAM-SHA-256': { hash: 'sha256', iterations: 15000, saltLength: 28, keyLength: 32 },
};

export function scramHash(mechanism: ScramMechanism): 'sha1' | 'sha256' {
  return SCRAM_PARAMS[mechanism].hash;
}

/**
 * The password each mechanism feeds to PBKDF2: SCRAM-SHA-1 uses MongoDB's legacy digest
 * md5("<user>:mongo:<password>") in hex; SCRAM-SHA-256 uses the SASLprep'd password (RFC 7677).
 */
export function scramPassword(mechanism: ScramMechanism, user: string, password: string): string {
  if (mechanism === 'SCRAM-SHA-1')
    return createHash('md5').update(`${user}:mongo:${password}`, 'utf8').digest('hex');
  return saslprep(password);
}

export function deriveCredential(
  mechanism: ScramMechanism,
  user: string,
  password: string,
  salt?: Buffer,
): ScramCredential {
  const p = SCRAM_PARAMS[mechanism];
  const s = salt ?? randomBytes(p.saltLength);
  const salted = pbkdf2Sync(
    scramPassword(mechanism, user, password),
    s,
    p.iterations,
    p.keyLength,
    p.hash,
  );
  const clientKey = createHmac(p.hash, salted).update('Client Key').digest();
  return {
    iterationCount: p.iterations,
    salt: s,
    storedKey: createHash(p.hash).update(clientKey).digest(),
    serverKey: createHmac(p.hash, salted).update('Server Key').digest(),
  };
}

/**
 * Users, their SCRAM credentials and roles. All users live on `admin` (authSource=admin),
 * their roles are granted on `admin`, like `db.getSiblingDB('admin').createUser(...)`.
 * Only salted keys are kept, never the password.
 */
export class UserRegistry {
  private readonly users = new Map<string, StoredUser>();

  constructor(readonly specs: UserSpec[]) {
    for (const spec of specs) {
      if (!spec.user) throw new Error('user name must not be empty');
      if (!spec.password) throw new Error(`password of user ${spec.user} must not be empty`);
      const roles = spec.roles.map((r) => parseRole(r, spec.user));
      const key = UserRegistry.key('admin', spec.user);
      if (this.users.has(key)) throw new Error(`user ${spec.user} defined twice`);
      this.users.set(key, {
        user: spec.user,
        db: 'admin',
        roles,
        credentials: {
          'SCRAM-SHA-1': deriveCredential('SCRAM-SHA-1', spec.user, spec.password),
          'SCRAM-SHA-256': deriveCredential('SCRAM-SHA-256', spec.user, spec.password),
        },
      });
    }
  }

  /** Authentication is required as soon as one user exists (mongod --auth with users). */
  get enabled(): boolean {
    return this.users.size > 0;
  }

  find(db: string, user: string): StoredUser | undefined {
    return this.users.get(UserRegistry.key(db, user));
  }

  /** hello's `saslSupportedMechs: "<db>.<user>"` answer; undefined when the user is unknown. */
  mechanismsFor(qualifiedName: string): ScramMechanism[] | undefined {
    const dot = qualifiedName.indexOf('.');
    if (dot <= 0) return undefined;
    const user = this.find(qualifiedName.slice(0, dot), qualifiedName.slice(dot + 1));
    return user ? SCRAM_MECHANISMS.filter((m) => user.credentials[m]) : undefined;
  }

  private static key(db: string, user: string): string {
    return `${db}\u0000${user}`;
  }
}

function parseRole(text: string, user: string): { role: string; db: string } {
  const at = text.indexOf('@');
  const role = at < 0 ? text : text.slice(0, at);
  const db = at < 0 ? 'admin' : text.slice(at + 1);
  if (!BUILTIN_ROLES.has(role)) throw new Error(`unknown built-in role '${role}' for user ${user}`);
  if (!db) throw new Error(`empty database in role '${text}' for user ${user}`);
  if (db !== 'admin' && isAdminOnlyRole(role))
    throw new Error(`role '${role}' exists only on the admin database`);
  return { role, db };
}
