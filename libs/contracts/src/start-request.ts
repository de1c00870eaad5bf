/** The start body of SEED-API.md §2.1–2.3, after validation and defaults. */
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

/** The embedded verifier (absent: enabled). */
export interface VerificationOptions {
  enabled: boolean;
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
