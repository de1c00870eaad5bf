import type { Document, Timestamp } from 'bson';
import type { StartRequest, SyncState } from '@sync/contracts';
import type { ClusterFingerprint } from './cluster-description';

/**
 * Persisted schema (destination database `sync_reserved_for_internal_use`):
 *  - `jobs`       one JobRecord per instance, `_id` = syncID
 *  - `namespaces` one NamespaceRecord per selected collection/view, `_id` = `<syncID>|<db>.<coll>`
 *  - `partitions` one PartitionRecord per `_id` range, `_id` = `<syncID>|<db>.<coll>|<index>`
 * Nothing here ever holds a connection string or credential.
 */
export const INTERNAL_DATABASE = 'sync_reserved_for_internal_use';

/** How far the copy side of a job got; each step is persisted before the next begins. */
export type CopyPhase = 'planned' | 'prepared' | 'partitioned' | 'copied';

export interface ClusterRef {
  /** Launch name (`cluster0`). */
  name: string;
  fingerprint: ClusterFingerprint;
}

export interface JobRecord {
  _id: string;
  request: StartRequest;
  /** Last state the job was in; a restarted instance resumes in it. */
  state: SyncState;
  phase: CopyPhase;
  /** Source cluster time read before anything was listed or copied. */
  t0: Timestamp;
  /** Estimate of all selected bytes (collStats sizes) taken while planning. */
  estimatedTotalBytes: number;
  source: ClusterRef;
  destination: ClusterRef;
  createdAt: Date;
  updatedAt: Date;
  /** Free-form state other phases (change application, commit) persist with the job. */
  extensions?: Document;
}

/** An index relaxed on the destination during the sync, to restore at commit. */
export interface RelaxedIndex {
  name: string;
  /** The source spec, exactly as listed there. */
  original: Document;
  relaxedUnique: boolean;
  relaxedHidden: boolean;
  relaxedExpireAfterSeconds: boolean;
}

export interface NamespaceRecord {
  _id: string;
  syncID: string;
  database: string;
  collection: string;
  type: 'collection' | 'view';
  /** listCollections options (views: viewOn/pipeline/collation). */
  options: Document;
  /** Source index specs at planning time. */
  indexes: Document[];
  /** Filled by the destination preparer. */
  relaxedIndexes: RelaxedIndex[];
  estimatedBytes: number;
  estimatedCount: number;
  capped: boolean;
}

export type PartitionStatus = 'pending' | 'done';

export interface PartitionRecord {
  _id: string;
  syncID: string;
  database: string;
  collection: string;
  index: number;
  /** Inclusive lower `_id` bound; absent on the first partition. */
  min?: unknown;
  /** Exclusive upper `_id` bound; absent on the last partition. */
  max?: unknown;
  /** Read in natural order (capped collections) instead of an `_id` range. */
  natural: boolean;
  status: PartitionStatus;
  copiedBytes: number;
  copiedDocuments: number;
}

export interface PersistedJob {
  job: JobRecord;
  namespaces: NamespaceRecord[];
  partitions: PartitionRecord[];
}

/** Job metadata store on one cluster (the job's destination). Scoped to one syncID. */
export interface JobStore {
  load(): Promise<PersistedJob | null>;
  saveJob(job: JobRecord): Promise<void>;
  saveNamespaces(namespaces: NamespaceRecord[]): Promise<void>;
  deleteNamespaces(ids: string[]): Promise<void>;
  savePartitions(partitions: PartitionRecord[]): Promise<void>;
  markPartitionDone(id: string, copiedBytes: number, copiedDocuments: number): Promise<void>;
}
