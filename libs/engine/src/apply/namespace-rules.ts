import type { NamespacePredicate } from './ports';

import { INTERNAL_DATABASE } from '../ports/job-store';

/** The engine's own metadata database on the destination (all job state); one constant. */
export const RESERVED_DB = INTERNAL_DATABASE;

/** Databases that belong to the server, never to the user. */
const SERVER_DBS = new Set(['admin', 'local', 'config']);

/**
 * Whether events of this namespace are applied. Order matters: our metadata database is never
 * applied back (a reverse sync would otherwise loop its own state), server databases and
 * `system.*` collections are not user data (mongosync does not sync them either), and only
 * then does the user's filter decide.
 */
export function isSyncedNamespace(
  db: string,
  coll: string | undefined,
  selected: NamespacePredicate,
): boolean {
  if (!isSyncedDatabase(db)) return false;
  if (coll === undefined) return true;
  if (coll.startsWith('system.')) return false;
  return selected(db, coll);
}

/** Database-level rule only (dropDatabase events carry no collection). */
export function isSyncedDatabase(db: string): boolean {
  return db !== RESERVED_DB && !SERVER_DBS.has(db);
}
