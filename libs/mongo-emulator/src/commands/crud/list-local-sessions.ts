import { createHash } from 'node:crypto';
import { Binary, type Document } from 'bson';
import { bsonTypeOf } from '../../bson/compare';
import { isDocument } from '../../bson/paths';
import { CommandError } from '../../errors';
import type { CommandContext } from '../types';

const STAGE = '$listLocalSessions';

interface SessionView {
  lsid: Document;
  lastUse: number;
}

/** SHA-256 of `user@db`, or of nothing without a user (mongod's getLogicalSessionUserDigestFor). */
function userDigest(user: string, db: string): Buffer {
  const h = createHash('sha256');
  if (user !== '' || db !== '') h.update(`${user}@${db}`);
  return h.digest();
}

/** The sessions of the node's session registry (its local logical session cache). */
function localSessions(ctx: CommandContext): SessionView[] {
  // The registry keeps its sessions private; read them without changing server/.
  const registry = ctx.node.sessions as unknown as { sessions?: Map<string, SessionView> };
  return registry.sessions ? [...registry.sessions.values()] : [];
}

interface ListUser {
  user: string;
  db: string;
}

/** Parses the stage's ListSessionsSpec like mongod's listSessionsParseSpec. */
function parseSpec(spec: unknown): { allUsers: boolean; users?: ListUser[] } {
  if (!isDocument(spec)) {
    throw new CommandError(
      'TypeMismatch',
      `${STAGE} options must be specified in an object, but found: ${bsonTypeOf(spec)}`,
    );
  }
  let allUsers = false;
  let users: ListUser[] | undefined;
  for (const key of Object.keys(spec)) {
    const v = spec[key];
    if (key === 'allUsers') {
      if (typeof v !== 'boolean') {
        throw new CommandError(
          'TypeMismatch',
          `BSON field '${STAGE}.allUsers' is the wrong type '${bsonTypeOf(v)}', expected type 'bool'`,
        );
      }
      allUsers = v;
    } else if (key === 'users') {
      if (!Array.isArray(v)) {
        throw new CommandError(
          'TypeMismatch',
          `BSON field '${STAGE}.users' is the wrong type '${bsonTypeOf(v)}', expected type 'array'`,
        );
      }
      users = v.map((u) => {
        if (!isDocument(u)) {
          throw new CommandError(
            'TypeMismatch',
            `BSON field '${STAGE}.users' is the wrong type '${bsonTypeOf(u)}', expected type 'object'`,
          );
        }
        for (const f of ['user', 'db'] as const) {
          if (u[f] === undefined) {
            throw new CommandError(
              40414 as number,
              `BSON field '${STAGE}.users.${f}' is missing but a required field`,
            );
          }
          if (typeof u[f] !== 'string') {
            throw new CommandError(
              'TypeMismatch',
              `BSON field '${STAGE}.users.${f}' is the wrong type '${bsonTypeOf(u[f])}', expected type 'string'`,
            );
          }
        }
        return { user: u.user as string, db: u.db as string };
      });
    } else if (key !== '$_internalPredicate') {
      throw new CommandError('Location40415', `BSON field '${STAGE}.${key}' is an unknown field.`);
    }
  }
  if (allUsers && users && users.length) {
    throw new CommandError(
      12 as number,
      `${STAGE} may not specify {allUsers:true} and {users:[...]} at the same time`,
    );
  }
  return { allUsers, users };
}

/**
 * `$listLocalSessions` (document_source_list_local_sessions.cpp): the sessions in this node's
 * cache, as LogicalSessionRecords `{_id: {id, uid}, lastUse, user?: {name}}`. Without
 * `allUsers`/`users` it lists the caller's own sessions. Only valid as the first stage of a
 * collectionless `{aggregate: 1}` (73 InvalidNamespace otherwise).
 *
 * The emulator's session cache does not record which user used a session, so every session
 * is attributed to the calling user (with authentication off: the no-auth digest, no `user`).
 */
export function listLocalSessions(
  ctx: CommandContext,
  spec: unknown,
  collectionless: boolean,
): Document[] {
  if (!collectionless) {
    throw new CommandError(
      'InvalidNamespace',
      `${STAGE} must be run against the database with {aggregate: 1}, not a collection`,
    );
  }
  const parsed = parseSpec(spec);
  const me: ListUser =
    ctx.node.authEnabled && ctx.conn.users.length
      ? { user: ctx.conn.users[0].user, db: ctx.conn.users[0].db }
      : { user: '', db: '' };
  if (ctx.node.authEnabled && !ctx.conn.users.length) {
    throw new CommandError('Unauthorized', 'There is no user authenticated');
  }
  const owner = userDigest(me.user, me.db);
  let wanted: Buffer[] | undefined;
  if (!parsed.allUsers) {
    const users = parsed.users && parsed.users.length ? parsed.users : [me];
    wanted = users.map((u) => userDigest(u.user, u.db));
  }
  if (wanted && !wanted.some((d) => d.equals(owner))) return [];
  return localSessions(ctx).map((s) => {
    const id = s.lsid.id;
    const record: Document = {
      _id: { id, uid: new Binary(owner, 0) },
      lastUse: new Date(s.lastUse),
    };
    if (me.user !== '') record.user = { name: `${me.user}@${me.db}` };
    return record;
  });
}
