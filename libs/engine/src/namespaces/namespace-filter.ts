import type { NamespaceFilterEntry } from '@sync/contracts';
import { compileSafeRegex } from '@sync/contracts';

/** Databases the service never syncs: MongoDB's own and the sync's metadata. */
export const NEVER_SYNCED_DATABASES: ReadonlySet<string> = new Set([
  'admin',
  'config',
  'local',
  'sync_reserved_for_internal_use',
]);

interface CompiledEntry {
  database: string;
  /** null = the whole database. */
  collections: ReadonlySet<string> | null;
  regex: RegExp | null;
}

/**
 * includeNamespaces/excludeNamespaces: include is applied first, then exclude.
 * With an include list, databases not named by it are not synced. An entry with neither
 * `collections` nor `collectionsRegex` names its whole database; with both, either selects.
 * Empty arrays are treated as absent (no filter). Regexes are compiled once, here.
 */
export class NamespaceFilter {
  private readonly include: CompiledEntry[] | null;
  private readonly exclude: CompiledEntry[];

  constructor(include?: NamespaceFilterEntry[], exclude?: NamespaceFilterEntry[]) {
    this.include = include && include.length > 0 ? include.map(compileEntry) : null;
    this.exclude = (exclude ?? []).map(compileEntry);
  }

  /** Whether any collection of this database can be selected (saves listing it). */
  databaseSelected(database: string): boolean {
    if (NEVER_SYNCED_DATABASES.has(database)) return false;
    if (this.include && !this.include.some((e) => e.database === database)) return false;
    return !this.exclude.some((e) => e.database === database && wholeDatabase(e));
  }

  collectionSelected(database: string, collection: string): boolean {
    if (!this.databaseSelected(database)) return false;
    if (collection.startsWith('system.')) return false;
    if (this.include && !this.include.some((e) => entryMatches(e, database, collection)))
      return false;
    return !this.exclude.some((e) => entryMatches(e, database, collection));
  }
}

function compileEntry(entry: NamespaceFilterEntry): CompiledEntry {
  return {
    database: entry.database,
    collections: entry.collections ? new Set(entry.collections) : null,
    regex: entry.collectionsRegex
      ? compileSafeRegex(entry.collectionsRegex.pattern, entry.collectionsRegex.options)
      : null,
  };
}

function wholeDatabase(entry: CompiledEntry): boolean {
  return entry.collections === null && entry.regex === null;
}

function entryMatches(entry: CompiledEntry, database: string, collection: string): boolean {
  if (entry.database !== database) return false;
  if (wholeDatabase(entry)) return true;
  if (entry.collections?.has(collection)) return true;
  if (entry.regex) {
    entry.regex.lastIndex = 0;
    return entry.regex.test(collection);
  }
  return false;
}
