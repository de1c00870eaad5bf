/**
 * MongoDB's naming rules, as pure checks returning the reason a name is invalid (or null), so the
 * error text can say exactly what is wrong instead of a generic "invalid name".
 */

/** Databases a sync never copies; naming one in a filter or sharding entry is a mistake. */
export const UNSYNCABLE_DATABASES = ['admin', 'local', 'config', 'sync_reserved_for_internal_use'];

/** MongoDB limits a full namespace `db.collection` to 255 bytes (4.4+). */
const MAX_NAMESPACE_BYTES = 255;

export function databaseNameProblem(name: string): string | null {
  if (name.length === 0) return 'must not be empty';
  const bad = /[/\\. "$\0]/.exec(name);
  if (bad)
    return `must not contain ${describeChar(bad[0])} (database names exclude / \\ . space " $)`;
  if (Buffer.byteLength(name, 'utf8') >= 64) return 'must be shorter than 64 bytes';
  return null;
}

/** Database names that filters and sharding entries may not select (they are never synced). */
export function syncableDatabaseProblem(name: string): string | null {
  return UNSYNCABLE_DATABASES.includes(name)
    ? `"${name}" is a system database and is never synced`
    : null;
}

export function collectionNameProblem(name: string): string | null {
  if (name.length === 0) return 'must not be empty';
  if (name.includes('\0')) return 'must not contain the null character';
  if (name.includes('$')) return 'must not contain $';
  if (name.startsWith('system.'))
    return 'must not start with "system." (system collections are never synced)';
  if (Buffer.byteLength(name, 'utf8') > MAX_NAMESPACE_BYTES)
    return `must be at most ${MAX_NAMESPACE_BYTES} bytes`;
  return null;
}

/** The full namespace must fit MongoDB's limit once database and collection are joined. */
export function namespaceProblem(database: string, collection: string): string | null {
  const bytes = Buffer.byteLength(`${database}.${collection}`, 'utf8');
  return bytes > MAX_NAMESPACE_BYTES
    ? `namespace is ${bytes} bytes; MongoDB allows at most ${MAX_NAMESPACE_BYTES}`
    : null;
}

/** A shard key field is a dotted path of non-empty segments that does not start with `$`. */
export function shardKeyFieldProblem(field: string): string | null {
  if (field.length === 0) return 'field name must not be empty';
  if (field.startsWith('$')) return `field name "${field}" must not start with $`;
  if (field.includes('\0')) return 'field name must not contain the null character';
  if (field.split('.').some((segment) => segment.length === 0)) {
    return `field name "${field}" has an empty path segment`;
  }
  return null;
}

function describeChar(char: string): string {
  if (char === ' ') return 'a space';
  if (char === '\0') return 'the null character';
  return `"${char}"`;
}
