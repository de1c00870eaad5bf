import type { Document } from 'bson';

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
