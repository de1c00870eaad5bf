/** The start body of `POST /api/v1/start`, after validation and defaults. */
export type BuildIndexesMode = 'beforeDataCopy' | 'never';

export interface CollectionsRegex {
  pattern: string;
  options?: string;
}

export interface NamespaceFilterEntry {
  database: string;
  collections?: string[];
  collectionsRegex?: CollectionsRegex;
}

export interface ShardingEntry {
  database: string;
  collection: string;
  shardCollection: { key: Array<Record<string, number | string>> };
}

export interface ShardingOptions {
  createSupportingIndexes: boolean;
  shardingEntries: ShardingEntry[];
}

/**
 * How the commit's final pass reads documents: `incremental` (the default) re-reads only what
 * change application touched since the live pass last checked it, plus every range never checked;
 * `full` re-reads every document of every namespace.
 */
export const VERIFICATION_MODES = ['incremental', 'full'] as const;
export type VerificationMode = (typeof VERIFICATION_MODES)[number];

/** The embedded verifier (absent: enabled, incremental). */
export interface VerificationOptions {
  enabled: boolean;
  /** Absent: `incremental`. */
  mode?: VerificationMode;
}

export interface StartRequest {
  source: string;
  destination: string;
  buildIndexes: BuildIndexesMode;
  enableUserWriteBlocking: boolean;
  includeNamespaces?: NamespaceFilterEntry[];
  excludeNamespaces?: NamespaceFilterEntry[];
  reversible: boolean;
  sharding?: ShardingOptions;
  verification?: VerificationOptions;
}
