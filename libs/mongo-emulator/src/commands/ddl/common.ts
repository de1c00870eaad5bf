import type { Document } from 'bson';
import { CommandError } from '../../errors';
import type { CommandContext } from '../types';

/**
 * Generic command fields that are not collection options (sessions, write concern, API
 * versioning, gossip): stripped before options are stored "exactly as given".
 */
const GENERIC_FIELDS = new Set([
  '$db',
  'lsid',
  'txnNumber',
  'autocommit',
  'startTransaction',
  '$clusterTime',
  '$readPreference',
  'readConcern',
  'writeConcern',
  'comment',
  'maxTimeMS',
  'apiVersion',
  'apiStrict',
  'apiDeprecationErrors',
  '$audit',
  '$client',
]);

export function commandOptions(cmd: Document, exclude: string[]): Document {
  const out: Document = {};
  for (const [k, v] of Object.entries(cmd)) {
    if (GENERIC_FIELDS.has(k) || exclude.includes(k)) continue;
    out[k] = v;
  }
  return out;
}

/**
 * Explicit `create` and `createIndexes` inside a transaction need read concern local (mongod
 * 4.4+: "the transaction must use read concern local"); otherwise 72 InvalidOptions. Implicit
 * creation by a write takes any of the transaction read concerns.
 */
export function checkTransactionalDdl(ctx: CommandContext): void {
  const level = ctx.txn?.readConcernLevel;
  if (level === undefined || level === 'local') return;
  throw new CommandError(
    'InvalidOptions',
    `Cannot run '${ctx.name}' in a multi-document transaction with readConcern level '${level}': creating collections and indexes in a transaction requires read concern 'local'.`,
  );
}
